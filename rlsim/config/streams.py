"""Named, order-independent random streams derived from one root seed.

`stream(seed, "workload")` gives the same SeedSequence whatever else the run asked for, so
adding a stream or reordering calls never shifts another's numbers (common random numbers
across policies). Names are hashed with CRC32, which is stable across processes.
"""

from __future__ import annotations

import zlib

import numpy as np


def stream(seed: int, name: str, *keys: int) -> np.random.SeedSequence:
    """The SeedSequence of stream `name` (optionally sub-keyed, e.g. by step)."""
    return np.random.SeedSequence(entropy=seed, spawn_key=(zlib.crc32(name.encode()), *keys))


def rng(seed: int, name: str, *keys: int) -> np.random.Generator:
    return np.random.default_rng(stream(seed, name, *keys))
