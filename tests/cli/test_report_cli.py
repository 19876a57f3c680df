"""`rlsim report`: run folders, comparisons and bad input (one line, exit 2, nothing written)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_bad_input import run_cli
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
