"""`rlsim advise`: which policy and settings to deploy for a job (docs/advise.md).

space.py holds the job's search space and its valid points; objectives.py what is optimized
and bounded; search.py seeded TPE over the sweep executors, resumable; decide.py replicates,
margins, ties, the Pareto front and importance; run.py the command end to end and its output
folder. The report is rlsim/report/advise_report.py.
"""
