"""Torch microbenchmarks and live validation (issues 3 and 4); depends on rlsim."""
