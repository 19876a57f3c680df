"""Environment pool capacity: `workers`, or `nodes` x `containers_per_node`; bad
combinations are one-line errors naming env."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlsim.config.errors import ScenarioError
from rlsim.config.loading import load_scenario
from tests.scenarios import tiny, write


def test_capacity_is_nodes_times_containers(tmp_path: Path) -> None:
    sc, _ = load_scenario(write(tmp_path, tiny(env={"nodes": 4, "containers_per_node": 32})))
    assert sc.env.workers == 128
    # the resolved form, which repeats the product, loads again
    again, _ = load_scenario(write(tmp_path, tiny(env=sc.env.model_dump()), "r.yaml"))
    assert again.env == sc.env


@pytest.mark.parametrize(("env", "message"), [
    ({"nodes": 4}, "give nodes and containers_per_node together"),
    ({"containers_per_node": 4}, "give nodes and containers_per_node together"),
    ({"nodes": 4, "containers_per_node": 8, "workers": 64}, "workers (64) is not nodes x"),
    ({"nodes": 0, "containers_per_node": 8}, "env.nodes"),
])
def test_bad_capacity_names_env(tmp_path: Path, env: dict[str, int], message: str) -> None:
    with pytest.raises(ScenarioError, match="env") as err:
        load_scenario(write(tmp_path, tiny(env=env)))
    assert message in str(err.value)
