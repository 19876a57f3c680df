"""The importers' shared parts: field setting with sources, the commented YAML, model and
GPU lookup, atomic writes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rlsim.config.errors import ScenarioError
from rlsim.importers.base import (
    Imported,
    moe_dispatcher,
    need,
    resolve_gpu,
    resolve_model,
    to_yaml,
    write_atomic,
)


def test_set_builds_nested_fields_and_lists_with_their_sources() -> None:
    imp = Imported()
    imp.set("pools.0.name", "cluster", "default: one pool")
    imp.set("pools.0.gpu", "H800", "--gpu")
    imp.set("pools.1.name", "rollout", "rollout.nnodes")
    imp.set("rollout.tp", 2, "actor_rollout_ref.rollout.tensor_model_parallel_size")
    assert imp.scenario == {"pools": [{"name": "cluster", "gpu": "H800"}, {"name": "rollout"}],
                            "rollout": {"tp": 2}}
    assert imp.sources["rollout.tp"] == "actor_rollout_ref.rollout.tensor_model_parallel_size"


def test_yaml_round_trips_and_names_every_source() -> None:
    imp = Imported()
    imp.set("name", "job", "--name")
    imp.set("pools.0.name", "cluster", "default: one pool")
    imp.set("pools.0.nodes", 2, "trainer.nnodes")
    imp.set("workload.response_len", {"dist": "lognormal", "median": 400, "sigma": 0.9},
            "--response-len-median")
    imp.set("workload.tasks.0.name", "math", "data.train_files")
    imp.set("reward.timeout", "2 s", "reward.timeout")
    text = to_yaml(imp, "imported\nfrom a test")
    assert yaml.safe_load(text) == imp.scenario
    lines = text.splitlines()
    assert lines[:2] == ["# imported", "# from a test"]
    for path, source in imp.sources.items():
        leaf = path.rsplit(".", 1)[-1]
        assert any(leaf in line and line.endswith(f"# {source}") for line in lines), path


def test_model_and_gpu_lookup() -> None:
    assert resolve_model("Qwen/Qwen2.5-7B-Instruct", "k") == "qwen2.5-7b"
    assert resolve_model("/data/ckpt/Qwen3-8B/", "k") == "qwen3-8b"
    assert resolve_model("llama-3.1-8b", "k") == "llama-3.1-8b"
    with pytest.raises(ScenarioError, match=r"^actor.model.path: model 'foo/Bar-9B'"):
        resolve_model("foo/Bar-9B", "actor.model.path")
    assert resolve_gpu("h800", "--gpu") == "H800"
    with pytest.raises(ScenarioError, match=r"^--gpu: GPU 'X1'"):
        resolve_gpu("X1", "--gpu")
    with pytest.raises(ScenarioError, match=r"^--gpu: the config does not say the GPU type"):
        need(None, "--gpu", "the GPU type")
    assert need(3, "--nodes", "nodes") == 3


def test_write_atomic_leaves_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "s.yaml"
    write_atomic(target, "a: 1\n")
    assert target.read_text() == "a: 1\n"
    assert not list(target.parent.glob("*.tmp"))


@pytest.mark.parametrize(("kind", "deepep", "backend", "want"), [
    ("alltoall", False, None, "alltoall"),
    ("flex", False, None, "deepep"),  # Megatron-Core's default flex backend
    ("flex", True, None, "deepep"),
    ("flex", False, "hybridep", "deepep"),
])
def test_moe_dispatcher_names(kind: str, deepep: bool, backend: str | None,
                              want: str) -> None:
    assert moe_dispatcher(kind, deepep, backend) == want


@pytest.mark.parametrize(("kind", "deepep", "backend", "fault"), [
    ("allgather", False, None, "kind"),
    ("flex", False, "ncclep", "backend"),
    ("flex", True, "hybridep", "deepep"),
])
def test_moe_dispatcher_refusals_name_the_key(kind: str, deepep: bool, backend: str | None,
                                              fault: str) -> None:
    with pytest.raises(ValueError) as err:
        moe_dispatcher(kind, deepep, backend)
    message = err.value.args[0]
    assert err.value.args[1] == fault and "\n" not in message
    assert "use " in message or "drop one" in message  # the fix, in the one line
