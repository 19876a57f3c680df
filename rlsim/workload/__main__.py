"""`python -m rlsim.workload TRACE_PATH...`: a Markdown table of PolyTrace trace statistics.

Owns only the command line; the table (and the figures in docs/workload.md) come from
`rlsim.workload.stats.markdown_table`.
"""

import sys

from rlsim.workload.stats import markdown_table

if __name__ == "__main__":
    print(markdown_table(sys.argv[1:]))
