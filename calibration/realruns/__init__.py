"""Measured public RL runs against rlsim, with no fitting (docs/validation.md, "Public real
runs"; `make real-runs`)."""
