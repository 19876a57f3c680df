"""Profile schema, built-in profiles, loading and hashing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlsim.config.hardware import GPUS, lookup_gpu
from rlsim.cost import Profile, builtin_profile, load_profile
from rlsim.cost.profile import PROFILE_DIR


@pytest.mark.parametrize("name", sorted(GPUS))
def test_every_catalogue_gpu_has_a_builtin_profile(name: str) -> None:
    prof = builtin_profile(GPUS[name])
    assert prof.gpu == name
    assert prof.decode_overhead_s > 0
    assert 80 <= prof.engine_cold_start_s <= 135
    assert 0.3 <= prof.train_mfu <= 0.6
    assert prof.provenance
    assert prof.fit_error["linear_mape_tp1"] < 0.15


def test_profile_files_load_and_hash() -> None:
    files = sorted(PROFILE_DIR.glob("*.json"))
    assert {f.stem for f in files} >= {"h100", "h800", "h20", "h200", "a100", "generic"}
    hashes = {f.stem: load_profile(f).content_hash() for f in files}
    # Hopper parts share the H100 constants; only the gpu name differs.
    assert len(set(hashes.values())) == len(hashes)


def test_content_hash_ignores_provenance_only() -> None:
    prof = builtin_profile(lookup_gpu("H100"))
    same = prof.model_copy(update={"provenance": "other", "fit_error": {}})
    assert same.content_hash() == prof.content_hash()
    changed = Profile.model_validate({**prof.model_dump(), "decode_overhead_s": 0.004})
    assert changed.content_hash() != prof.content_hash()
    assert len(prof.content_hash()) == 64


def test_round_trip(tmp_path: Path) -> None:
    prof = builtin_profile(lookup_gpu("A100"))
    path = tmp_path / "p.json"
    path.write_text(prof.to_json())
    assert load_profile(path) == prof


@pytest.mark.parametrize(("content", "match"), [
    ("{not json", "not valid JSON"),
    ("[1, 2]", "JSON object"),
    ('{"gpu": "x"}', "provenance"),
])
def test_load_profile_bad_content(tmp_path: Path, content: str, match: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=match) as err:
        load_profile(path)
    assert "\n" not in str(err.value)


def test_load_profile_rejects_bad_values_and_unknown_keys(tmp_path: Path) -> None:
    data = builtin_profile(lookup_gpu("H100")).model_dump(mode="json")
    path = tmp_path / "p.json"
    path.write_text(json.dumps({**data, "hbm_efficiency": 1.7}))
    with pytest.raises(ValueError, match="hbm_efficiency"):
        load_profile(path)
    path.write_text(json.dumps({**data, "typo_s": 1.0}))
    with pytest.raises(ValueError, match="typo_s"):
        load_profile(path)
    with pytest.raises(ValueError, match="cannot read"):
        load_profile(tmp_path / "missing.json")


def test_every_constant_is_described() -> None:
    for name, field in Profile.model_fields.items():
        assert field.description, name


def test_engine_and_trainer_overhead_fields() -> None:
    prof = builtin_profile(lookup_gpu("H100"))
    assert prof.decode_overhead_per_seq_s == 0.0
    assert prof.forward_mfu is None
    assert prof.forward_pass_mfu == prof.train_mfu
    assert prof.model_copy(update={"forward_mfu": 0.5}).forward_pass_mfu == 0.5
    data = prof.model_dump()
    for bad in ({"decode_overhead_per_seq_s": -1e-6}, {"forward_mfu": 1.5},
                {"forward_mfu": 0.0}, {"train_step_overhead_s": -1.0},
                {"forward_overhead_s": -1.0}):
        with pytest.raises(ValueError):
            Profile.model_validate({**data, **bad})
    # A fitted engine without a fixed overhead is valid; each new constant changes the hash.
    assert Profile.model_validate({**data, "decode_overhead_s": 0.0}).decode_overhead_s == 0.0
    h = prof.content_hash()
    for update in ({"decode_overhead_per_seq_s": 1e-6}, {"forward_mfu": 0.5},
                   {"train_step_overhead_s": 0.1}, {"forward_overhead_s": 0.1}):
        assert prof.model_copy(update=update).content_hash() != h, update


def test_engine_option_constants() -> None:
    """eager_launch_s (CPU dispatch per kernel without CUDA graphs) and router_imbalance
    (busiest EP rank over the mean): documented defaults, validated, in the hash."""
    prof = builtin_profile(lookup_gpu("H100"))
    assert prof.eager_launch_s == 1.0e-5
    assert prof.router_imbalance == 1.3
    data = prof.model_dump()
    for bad in ({"eager_launch_s": -1e-6}, {"router_imbalance": 0.9}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            Profile.model_validate({**data, **bad})
    h = prof.content_hash()
    for update in ({"eager_launch_s": 2e-5}, {"router_imbalance": 1.5}):
        assert prof.model_copy(update=update).content_hash() != h, update
