"""Data movement times: point-to-point transfers and ring collectives.

Owns `transfer_s` (bytes over one link) and the ring all-reduce / reduce-scatter formulas
that the TP all-reduces of an engine and the DP gradient traffic of a trainer use.
Bandwidths are one-direction bytes per second, already multiplied by any efficiency.
"""

from __future__ import annotations


def transfer_s(size_bytes: float, bandwidth_bytes_per_s: float, latency_s: float = 0.0) -> float:
    """Seconds to move `size_bytes` over a link: latency + size / bandwidth."""
    if bandwidth_bytes_per_s <= 0:
        raise ValueError(f"bandwidth_bytes_per_s must be > 0, got {bandwidth_bytes_per_s}")
    if size_bytes < 0:
        raise ValueError(f"size_bytes must be >= 0, got {size_bytes}")
    return latency_s + size_bytes / bandwidth_bytes_per_s


def ring_allreduce_s(
    size_bytes: float, ranks: int, bandwidth_bytes_per_s: float, latency_s: float
) -> float:
    """Ring all-reduce of `size_bytes` per rank: latency + 2(n-1)/n * size / bandwidth.

    Each rank sends and receives 2(n-1)/n of the buffer (reduce-scatter + all-gather);
    zero for a single rank or an empty buffer.
    """
    if ranks <= 1 or size_bytes <= 0:
        return 0.0
    return latency_s + 2.0 * (ranks - 1) / ranks * size_bytes / bandwidth_bytes_per_s


def ring_reduce_scatter_s(
    size_bytes: float, ranks: int, bandwidth_bytes_per_s: float, latency_s: float
) -> float:
    """Ring reduce-scatter (or all-gather) of a `size_bytes` buffer: (n-1)/n of it moves."""
    if ranks <= 1 or size_bytes <= 0:
        return 0.0
    return latency_s + (ranks - 1) / ranks * size_bytes / bandwidth_bytes_per_s


def nvlink_one_way_bytes_per_s(nvlink_bandwidth_both_ways: float) -> float:
    """GpuSpec.nvlink_bandwidth counts both directions; a ring uses one direction per link."""
    return nvlink_bandwidth_both_ways / 2.0
