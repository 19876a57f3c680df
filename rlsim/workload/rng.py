"""Random streams of the workload, derived from one `numpy.random.SeedSequence`.

Owns the mapping from a key (training step, prompt chunk, block) to an independent
generator. Keys are appended to the seed sequence's spawn key, so a stream depends only on
(seed, key): never on which steps were asked for before, nor on the global numpy RNG.
"""

from __future__ import annotations

import numpy as np


def keyed_stream(seed_seq: np.random.SeedSequence, *key: int) -> np.random.Generator:
    """The generator for `key` under `seed_seq`: same inputs, same stream, in any call order."""
    child = np.random.SeedSequence(
        entropy=seed_seq.entropy,
        spawn_key=(*seed_seq.spawn_key, *key),
        pool_size=seed_seq.pool_size,
    )
    return np.random.Generator(np.random.PCG64(child))
