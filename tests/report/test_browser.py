"""Reports in a real headless chromium: no JavaScript errors, every plot rendered.

Skips (with the reason) where chromium or playwright is missing; .ci/run installs both.
"""

from __future__ import annotations

import pytest

from rlsim.api import simulate, write_run
from rlsim.config.loading import scenario_from_dict
from rlsim.report.browser import browser_missing, check_page, main
from rlsim.report.html import load_run, write_report, write_sweep_report
from tests.report.synthetic import write_fake_sweep
from tests.scenarios import tiny

pytestmark = pytest.mark.skipif(browser_missing() is not None,
                                reason=browser_missing() or "")

MIN_PNG_BYTES = 30_000
"""A blank page screenshot is a few KB; a page of plots is hundreds."""

DISAGGREGATED = {
    "pools": [{"name": "rollout", "gpu": "H100", "nodes": 1},
              {"name": "train", "gpu": "H100", "nodes": 1}],
    "rollout": {"pool": "rollout", "tp": 1},
    "train": {"pool": "train", "tp": 1},
}


def _run(tmp_path, name, **changes):
    scenario, base = scenario_from_dict(tiny(name=name, **changes))
    out = tmp_path / name
    write_run(simulate(scenario, base), out)
    return load_run(out)


def _check(html, png):
    check = check_page(html, png)
    assert check.js_errors == [] and check.console_errors == []
    assert check.plots_expected >= 3
    assert check.plots_rendered == check.plots_expected, check.text()
    assert png.stat().st_size > MIN_PNG_BYTES


def test_run_comparison_and_sweep_reports_render(tmp_path):
    sync = _run(tmp_path, "sync")
    one_off = _run(tmp_path, "one_off", policy={"name": "one_off",
                                                "placement": "disaggregated"},
                   **DISAGGREGATED)
    write_report([sync], tmp_path / "run.html")
    _check(tmp_path / "run.html", tmp_path / "run.png")
    write_report([sync, one_off], tmp_path / "compare.html")
    _check(tmp_path / "compare.html", tmp_path / "compare.png")
    write_sweep_report(write_fake_sweep(tmp_path / "sweep"), tmp_path / "sweep.html")
    _check(tmp_path / "sweep.html", tmp_path / "sweep.png")


def test_command_line_reports_a_broken_page(tmp_path, capsys, monkeypatch):
    page = tmp_path / "bad.html"
    page.write_text('<html><body><div class="rlsim-plot"></div>'
                    "<script>undefinedFunction()</script></body></html>")
    from rlsim.report import browser

    monkeypatch.setattr(browser, "RENDER_TIMEOUT_MS", 1500)
    assert main([str(page), str(tmp_path / "bad.png")]) == 1
    out = capsys.readouterr().out
    assert "plots rendered: 0/1" in out and "undefinedFunction" in out


def test_compare_folder_pages_render_with_the_shared_plotly(tmp_path, monkeypatch, capsys):
    from tests.cli.test_bad_input import run_cli
    from tests.scenarios import write

    path = write(tmp_path, tiny())
    out = tmp_path / "cmp"
    code, _, err = run_cli(["compare", str(path), "--variant", "policy.placement=colocated",
                            "--variant", "policy.placement=disaggregated", "--out", str(out)],
                           monkeypatch, capsys)
    assert code == 0, err
    assert "<script src=" in (out / "report.html").read_text()  # not inline: shared
    _check(out / "report.html", tmp_path / "cmp.png")
    _check(out / "0-colocated" / "report.html", tmp_path / "run0.png")
    # moved away from its compare folder, a page says why it has no plots
    moved = tmp_path / "moved.html"
    moved.write_text((out / "0-colocated" / "report.html").read_text())
    from rlsim.report import browser

    monkeypatch.setattr(browser, "RENDER_TIMEOUT_MS", 1500)
    check = check_page(moved)
    assert check.plots_rendered == 0


def test_draws_reports_render(tmp_path, monkeypatch, capsys):
    """Issue 39: the draws' report (interval bars, fan chart, P(best), indices) of a compare
    with sensitivity-free draws and of a sweep over a numeric key."""
    from tests.cli.test_bad_input import run_cli
    from tests.scenarios import write

    path = write(tmp_path, tiny(steps=1, unknowns={
        "workload.prompts_per_step": {"low": 4, "high": 12},
        "reward.latency.median": {"low": 0.001, "high": 0.05}}))
    code, _, _ = run_cli(["compare", str(path), "--variant", "reward.workers=4",
                          "--variant", "reward.workers=8", "--draws", "4", "--jobs", "1",
                          "--out", str(tmp_path / "c")], monkeypatch, capsys)
    assert code == 0
    _check(tmp_path / "c" / "report.html", tmp_path / "c.png")
    code, _, _ = run_cli(["sweep", str(path), "--grid", "reward.workers=2,4,8", "--draws", "3",
                          "--jobs", "1", "--out", str(tmp_path / "s")], monkeypatch, capsys)
    assert code == 0
    _check(tmp_path / "s" / "report.html", tmp_path / "s.png")
