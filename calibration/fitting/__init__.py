"""The calibration fit, one module per benchmark family (`calibration.fit` runs them).

Shared pieces: `predict` (every compute, engine and trainer benchmark priced by rlsim's own
cost classes), `holdout` (the held-back quarter), `solvers` (least squares and error
metrics), `context` (`FitContext`: the constants fitted so far and the reference rates,
passed from stage to stage), `normalize` (reference rates -> device spec and efficiencies
<= 1) and `report` (train and held-back errors per benchmark).

One module per benchmark family of `calibration/benchmarks`, each fitting its Profile fields
from its measurements: `memcpy`, `gemm`, `attention`, `elementwise`, `layer`, `joint` (the
compute grids refitted together), `collectives`, `transfer`, `engine_start`, `sandbox`,
`live_engine`, `live_trainer`. The order they run in, and what each takes from the ones
before, is `calibration.fit.STAGES`.
"""
