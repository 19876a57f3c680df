"""`rlsim report`: run folders, comparisons and bad input (one line, exit 2, nothing written)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from rlsim.report.rundata import load_run
from tests.cli.test_bad_input import run_cli
from tests.fleet.toy import job
from tests.scenarios import tiny, write


def _runs(tmp_path: Path, monkeypatch, capsys) -> Path:
    path = write(tmp_path, tiny())
    out = tmp_path / "cmp"
    code, _, _ = run_cli(["compare", str(path), "--variant", "policy.placement=colocated",
                          "--variant", "policy.placement=disaggregated", "--out", str(out)],
                         monkeypatch, capsys)
    assert code == 0
    return out


def test_run_and_compare_write_reports(tmp_path, monkeypatch, capsys):
    out = _runs(tmp_path, monkeypatch, capsys)
    folders = sorted(p for p in out.iterdir() if p.is_dir())
    assert len(folders) == 2
    for f in folders:
        html = (f / "report.html").read_text()
        assert "Plotly.newPlot" in html and "<html" in html and "-json\">" in html
    cmp = (out / "report.html").read_text()
    assert "colocated" in cmp and "disaggregated" in cmp
    assert not list(out.rglob("*.partial"))


def test_report_command_rebuilds_from_saved_runs(tmp_path, monkeypatch, capsys):
    out = _runs(tmp_path, monkeypatch, capsys)
    folders = sorted(p for p in out.iterdir() if p.is_dir())
    target = tmp_path / "again.html"
    code, stdout, _ = run_cli(["report", *map(str, folders), "--out", str(target)],
                              monkeypatch, capsys)
    assert code == 0 and str(target) in stdout
    html = target.read_text()
    assert html.count("-json\">") >= 5  # one figure per plot
    # default target: one run -> its folder; several runs -> their common parent
    (folders[0] / "report.html").unlink()
    assert run_cli(["report", str(folders[0])], monkeypatch, capsys)[0] == 0
    assert (folders[0] / "report.html").is_file()


def test_report_bad_input(tmp_path, monkeypatch, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run_cli(["report", str(empty)], monkeypatch, capsys)
    assert code == 2 and "RUN_DIR" in err and "summary.json" in err and len(err.splitlines()) == 1
    code, _, err = run_cli(["report", str(tmp_path / "missing")], monkeypatch, capsys)
    assert code == 2 and "not a folder" in err
    assert not (empty / "report.html").exists()


def test_report_out_folder_and_missing_parent(tmp_path, monkeypatch, capsys):
    out = _runs(tmp_path, monkeypatch, capsys)
    run = sorted(p for p in out.iterdir() if p.is_dir())[0]
    folder = tmp_path / "reports"
    folder.mkdir()
    assert run_cli(["report", str(run), "--out", str(folder)], monkeypatch, capsys)[0] == 0
    assert (folder / "report.html").is_file()  # a folder receives report.html, like cp
    code, _, err = run_cli(["report", str(run), "--out", str(tmp_path / "no" / "r.html")],
                           monkeypatch, capsys)
    assert code == 2 and "--out" in err and "does not exist" in err
    assert not list(tmp_path.rglob("*.partial"))


def _chips(html: str) -> list[str]:
    """The run labels in a comparison page's header, in page order."""
    return re.findall(r'<span class="chip">([^<]*?) <b>', html)


def _compare3(tmp_path: Path, monkeypatch, capsys) -> Path:
    path = write(tmp_path, tiny())
    out = tmp_path / "cmp"
    code, _, err = run_cli(["compare", str(path), "--variant", "policy.placement=colocated",
                            "--variant", "policy.placement=disaggregated",
                            "--variant", "workload.prompts_per_step=2", "--out", str(out)],
                           monkeypatch, capsys)
    assert code == 0, err
    return out


def test_report_redraws_a_compare_folder_in_order_with_its_names(tmp_path, monkeypatch,
                                                                 capsys):
    out = _compare3(tmp_path, monkeypatch, capsys)
    manifest = json.loads((out / "compare.json").read_text())
    names = [r["name"] for r in manifest["runs"]]
    assert names == ["colocated", "disaggregated", "2"]
    first = (out / "report.html").read_text()
    assert _chips(first) == names
    (out / "report.html").unlink()
    code, stdout, err = run_cli(["report", str(out)], monkeypatch, capsys)
    assert code == 0, err
    assert str(out / "report.html") in stdout
    again = (out / "report.html").read_text()
    assert _chips(again) == names and "rlsim comparison · 3 runs" in again
    assert f"Ratios are relative to the first run ({names[0]})" in again
    # a variant folder read alone keeps its compare name; its page, the shared plotly.js
    run0 = out / manifest["runs"][0]["dir"]
    assert load_run(run0).name == names[0]
    assert run_cli(["report", str(run0)], monkeypatch, capsys)[0] == 0
    assert '<script src="../plotly-' in (run0 / "report.html").read_text()


def test_report_redraws_an_old_compare_folder_by_numeric_prefix(tmp_path, monkeypatch,
                                                               capsys):
    out = _compare3(tmp_path, monkeypatch, capsys)
    (out / "compare.json").unlink()  # written before the manifest existed
    # 2 before 10 (numeric), although "10-" sorts before "2-" as text
    (out / "0-colocated").rename(out / "2-colocated")
    (out / "1-disaggregated").rename(out / "10-disaggregated")
    (out / "2-2").rename(out / "11-2")
    code, _, err = run_cli(["report", str(out)], monkeypatch, capsys)
    assert code == 0, err
    assert _chips((out / "report.html").read_text()) == ["colocated", "disaggregated", "2"]


def test_report_of_a_compare_folder_bad_input(tmp_path, monkeypatch, capsys):
    out = _compare3(tmp_path, monkeypatch, capsys)
    (out / "compare.json").write_text("{not json")
    code, _, err = run_cli(["report", str(out)], monkeypatch, capsys)
    assert code == 2 and "compare.json" in err and len(err.splitlines()) == 1
    (out / "compare.json").write_text(json.dumps({"kind": "runs", "runs": [
        {"dir": "../elsewhere", "name": "x"}]}))
    code, _, err = run_cli(["report", str(out)], monkeypatch, capsys)
    assert code == 2 and "not a folder inside" in err and len(err.splitlines()) == 1
    (out / "compare.json").write_text(json.dumps({"kind": "runs", "runs": [
        {"dir": "9-gone", "name": "x"}]}))
    code, _, err = run_cli(["report", str(out)], monkeypatch, capsys)
    assert code == 2 and "9-gone" in err and len(err.splitlines()) == 1
    code, _, err = run_cli(["report", str(out), str(out / "0-colocated")], monkeypatch, capsys)
    assert code == 2 and "on its own" in err


def _script_srcs(html: str) -> list[str]:
    return re.findall(r'<script src="([^"]+)"', html)


def test_compare_folder_shares_one_plotly_copy_and_a_run_folder_stands_alone(
        tmp_path, monkeypatch, capsys):
    out = _compare3(tmp_path, monkeypatch, capsys)
    copies = list(out.glob("plotly-*.min.js"))
    assert len(copies) == 1 and copies[0].stat().st_size > 1_000_000
    pages = [out / "report.html", *out.glob("*/report.html")]
    assert len(pages) == 4
    for page in pages:
        html = page.read_text()
        (src,) = _script_srcs(html)
        assert (page.parent / src).resolve() == copies[0].resolve()  # opens offline
        assert page.stat().st_size < copies[0].stat().st_size / 4
    # `rlsim run --out`: plotly.js inline, the folder needs nothing beside it
    path = write(tmp_path, tiny(), "one.yaml")
    code, _, err = run_cli(["run", str(path), "--out", str(tmp_path / "one")], monkeypatch,
                           capsys)
    assert code == 0, err
    single = (tmp_path / "one" / "report.html").read_text()
    assert _script_srcs(single) == [] and single.count("Plotly.newPlot") >= 1
    assert len(single) > copies[0].stat().st_size


def test_fleet_compare_folder_is_reported_and_redrawn(tmp_path, monkeypatch, capsys):
    fleet = {"kind": "fleet", "name": "toy",
             "pools": [{"name": "r", "gpu": "H20", "nodes": 2},
                       {"name": "t", "gpu": "H800", "nodes": 2}],
             "jobs": [job("a", steps=2), job("b", steps=2)]}
    path = write(tmp_path, fleet, "fleet.yaml")
    out = tmp_path / "fleets"
    code, _, err = run_cli(["compare", str(path), "--variant", "policy.name=solo",
                            "--variant", "policy.name=multiplex", "--out", str(out)],
                           monkeypatch, capsys)
    assert code == 0, err
    first = (out / "report.html").read_text()
    assert "rlsim fleet comparison · 2 runs" in first
    names = [r["name"] for r in json.loads((out / "compare.json").read_text())["runs"]]
    assert _chips(first) == names and len(names) == 2
    (out / "report.html").unlink()
    assert run_cli(["report", str(out)], monkeypatch, capsys)[0] == 0
    again = (out / "report.html").read_text()
    assert _chips(again) == names and _script_srcs(again) == [
        next(out.glob("plotly-*.min.js")).name]
    # two fleet run folders given by hand are compared too
    dirs = sorted(p for p in out.iterdir() if p.is_dir())
    target = tmp_path / "two.html"
    assert run_cli(["report", *map(str, dirs), "--out", str(target)], monkeypatch,
                   capsys)[0] == 0
    assert "rlsim fleet comparison · 2 runs" in target.read_text()
