"""Resolving the calibrated profiles that scenario pools point at.

Owns finding a pool's profile file (relative to the scenario file, then the working
directory) and taking the measured device spec out of it, so a pool can run on a
calibrated local device. It reads only the JSON's `device` entry (a `GpuSpec`): the cost
constants are loaded by `rlsim.cost.profile.load_profile` when the cluster is built.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from rlsim.config.errors import ScenarioError
from rlsim.config.hardware import GpuSpec
from rlsim.config.scenario import PoolConfig, Scenario


def find_profile(path: str, base_dir: Path, field: str) -> Path:
    """The profile file: relative to the scenario's folder first, then the working dir."""
    for candidate in (base_dir / path, Path.cwd() / path):
        if candidate.is_file():
            return candidate.resolve()
    raise ScenarioError(field, f"profile file {path!r} not found (looked in {base_dir} and "
                        f"{Path.cwd()}); `rlsim calibrate --out FILE` writes one")


def _device(path: Path, field: str) -> GpuSpec | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ScenarioError(field, f"cannot read profile {str(path)!r}: {err}") from None
    if not isinstance(data, dict):
        raise ScenarioError(field, f"profile {str(path)!r} is not a JSON object")
    device = data.get("device")
    if device is None:
        return None
    try:
        return GpuSpec.model_validate(device)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ScenarioError(field, f"profile {str(path)!r}: device.{loc}: {first['msg']}") \
            from None


def resolve_pool_profiles(scenario: Scenario, base_dir: Path) -> Scenario:
    """Pools with a profile get its absolute path and, when it has one, its device spec."""
    pools: list[PoolConfig] = []
    changed = False
    for i, pool in enumerate(scenario.pools):
        if pool.profile is None:
            pools.append(pool)
            continue
        field = f"pools.{i}.profile"
        path = find_profile(pool.profile, base_dir, field)
        device = _device(path, field)
        update: dict[str, object] = {"profile": str(path)}
        if device is not None:
            update["gpu"] = device
        elif pool.gpu is None:
            raise ScenarioError(f"pools.{i}.gpu", f"profile {pool.profile!r} has no measured "
                                "device spec; name the pool's `gpu` too")
        pools.append(pool.model_copy(update=update))
        changed = True
    return scenario.model_copy(update={"pools": pools}) if changed else scenario
