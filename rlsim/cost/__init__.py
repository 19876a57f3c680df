"""SimPy-free cost models: calibrated analytical times of engines, trainers and transfers.

A leaf package (imports only `rlsim.config`); never imports torch or simpy.
- `profile`: the calibrated constants (`Profile`, built-in per-GPU profiles, loading).
- `kernels`: one GEMM / elementwise kernel on one GPU (shape-dependent GEMM efficiency).
- `network`: transfers and ring collectives.
- `inference`: one rollout engine's iteration cost, KV capacity, start-up times.
- `training`: one trainer's step, forward pass and state offload.
- `fit`: whether a model fits an engine (weights, KV, max context), shared by run and estimate.
- `estimate`: the validated one-call estimate behind `rlsim estimate`.

The offline fit of the built-in profiles to Vidur's measured data is
`calibration/fit_vidur.py`: this package only reads the JSON it writes.
"""

from rlsim.cost.estimate import engine_estimate, estimate
from rlsim.cost.fit import FitError
from rlsim.cost.inference import InferenceCost, StepCost, check_tp
from rlsim.cost.network import transfer_s
from rlsim.cost.profile import Profile, builtin_profile, load_profile
from rlsim.cost.training import TrainCost, TrainStepCost

__all__ = [
    "FitError",
    "InferenceCost",
    "Profile",
    "StepCost",
    "TrainCost",
    "TrainStepCost",
    "builtin_profile",
    "check_tp",
    "engine_estimate",
    "estimate",
    "load_profile",
    "transfer_s",
]
