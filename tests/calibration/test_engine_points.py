"""The engine decode-speed points (validation/engine_points/): enough of them, of each
engine and load, split by source, every number in its quote, and bad points refused."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from calibration.engine_points import POINTS_PATH, load_points, parse_point, unquoted
from rlsim.config.errors import ScenarioError

POINTS = load_points()


def test_the_collection_meets_issue_36s_counts() -> None:
    engines = Counter(p.engine for p in POINTS)
    sides = Counter(p.side for p in POINTS)
    assert len(POINTS) >= 45
    assert engines["vllm"] >= 10 and engines["sglang"] >= 10
    assert engines["trtllm"] >= 10 and engines["nim"] >= 10 and engines["lmdeploy"] >= 10
    assert sides["calibrate"] >= 30 and sides["validate"] >= 15
    # low and high load both covered, for both families
    for engine in ("vllm", "sglang"):
        loads = [p.load for p in POINTS if p.engine == engine and p.load is not None]
        assert min(loads) <= 8 and max(loads) >= 64


def test_every_number_is_in_its_quote() -> None:
    assert {p.id: unquoted(p) for p in POINTS if unquoted(p)} == {}


def test_a_source_is_on_one_side(tmp_path: Path) -> None:
    lines = POINTS_PATH.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    twin = {**first, "id": first["id"] + "-twin",
            "side": "validate" if first["side"] == "calibrate" else "calibrate"}
    path = tmp_path / "points.jsonl"
    path.write_text(lines[0] + "\n" + json.dumps(twin) + "\n")
    with pytest.raises(ScenarioError, match="both sides"):
        load_points(path)


@pytest.mark.parametrize(("change", "message"), [
    ({"engine": "tgi"}, "engine should be one of"),
    ({"side": "both"}, "side should be"),
    ({"quote": ""}, "'quote' is required"),
    ({"tpot_ms_mean": -1.0}, "positive number"),
    ({"concurrency": 0}, "positive integer"),
    ({"ep": 0}, "positive integer"),
    ({"num_prompts": "all"}, "positive integer"),
    ({"dp_attention": "yes"}, "dp_attention should be"),
])
def test_bad_points_name_the_field(change: dict[str, object], message: str) -> None:
    raw = {"id": "x", "source_url": "u", "source_group": "g", "engine": "vllm",
           "side": "calibrate", "quote": "TPOT 5", "tpot_ms_mean": 5.0, **change}
    with pytest.raises(ScenarioError, match=message):
        parse_point(raw, "points.jsonl:1")


def test_a_number_not_in_the_quote_is_caught() -> None:
    raw = {"id": "x", "source_url": "u", "source_group": "g", "engine": "vllm",
           "side": "calibrate", "quote": "H100,4,vLLM,128,64,3.750785323233322",
           "e2e_latency_ms_mean": 3750.785323233322, "tpot_ms_mean": 12864.0}
    # seconds written in full precision match the stored milliseconds; a CSV's commas are
    # not thousands separators ("128,64" is not 12864)
    assert unquoted(parse_point(raw, "points.jsonl:1")) == ["tpot_ms_mean"]


def test_digits_inside_names_are_not_quoted_numbers() -> None:
    raw = {"id": "x", "source_url": "u", "source_group": "g", "engine": "vllm",
           "side": "calibrate", "quote": "Llama-3-70B on 8xH100, TP 8",
           "e2e_latency_ms_mean": 70000.0, "tpot_ms_mean": 100000.0}
    # "70B" and "H100" are names: neither 70 s nor 100 s is in the quote
    assert unquoted(parse_point(raw, "points.jsonl:1")) == ["tpot_ms_mean",
                                                            "e2e_latency_ms_mean"]
