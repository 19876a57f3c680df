"""The controller's serialization bench (calibration/benchmarks/dataproto_serde.py) at a
tiny batch: the bytes are veRL's padded tensors' and every step is timed."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")

from calibration.benchmarks import dataproto_serde


def test_a_tiny_batch_is_timed_step_by_step() -> None:
    size, sec = dataproto_serde.run(n=16, prompt=8, response=24, workers=4, reps=1)
    # int64: ids, mask, positions of [n, P+R], prompts [n, P], responses and mask [n, R]
    assert size == 16 * 8 * (3 * 32 + 8 + 2 * 24)
    assert set(sec) == set(dataproto_serde.STEPS)
    assert all(s > 0 for s in sec.values())


def test_json_carries_every_rate(tmp_path, capsys) -> None:
    out = tmp_path / "serde.json"
    assert dataproto_serde.main(["--responses", "16", "--threads", "2", "--json",
                                 str(out)]) == 0
    data = json.loads(out.read_text())
    assert set(data["rate_bytes_per_s"]) == set(dataproto_serde.STEPS)
    assert data["threads"] == 2 and data["bytes"] > 0
    printed = capsys.readouterr().out
    assert "dispatch threaded" in printed and "controller: {bandwidth: " in printed
    values = data["scenario"]["controller"]
    # each rate is the host's path in series with the object-store copy: below both
    rates = data["rate_bytes_per_s"]
    assert 0 < values["bandwidth"] < rates["dispatch threaded"]
    assert 0 < values["receive_bandwidth"] < rates["collect"]


def test_scenario_values_compose_as_the_defaults_do() -> None:
    from rlsim.config.scenario import (
        COLLECT_BYTES_PER_S,
        DISPATCH_BYTES_PER_S,
        ControllerConfig,
    )

    size = 10**9
    sec = {"dispatch threaded": size / DISPATCH_BYTES_PER_S,
           "collect": size / COLLECT_BYTES_PER_S}
    values = dataproto_serde.scenario_values(size, sec)
    c = ControllerConfig()
    assert values["bandwidth"] == pytest.approx(c.bandwidth)
    assert values["receive_bandwidth"] == pytest.approx(c.receive_bandwidth)


def test_bad_arguments_exit_2() -> None:
    with pytest.raises(SystemExit) as err:
        dataproto_serde.main(["--threads", "0"])
    assert err.value.code == 2
