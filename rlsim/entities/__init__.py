"""SimPy mechanism: rollout engine, trainer, reward pool, link, barrier, cluster wiring."""
