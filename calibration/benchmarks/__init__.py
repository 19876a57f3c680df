"""Microbenchmark families, one module each; `calibration.run` runs them and collects the points.

Every family exposes `run(device, quick, progress) -> list[Measurement]`; the `bench` names
and `params` keys they produce are the contract with the fitting code (calibration.fit).
"""
