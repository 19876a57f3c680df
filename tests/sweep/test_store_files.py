"""Files in a sweep's results/ that are not its parts: one line naming the file and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_bad_input import run_cli


def _finished(scenario: Path, out: Path, monkeypatch, capsys) -> list[str]:
    args = ["sweep", str(scenario), "--out", str(out), "--grid", "steps=1,2,3", "--jobs", "1"]
    assert run_cli(args, monkeypatch, capsys)[0] == 0
    return args


@pytest.mark.parametrize("case", ["empty", "corrupt", "stray", "beyond", "folder", "foreign"])
def test_resume_over_a_bad_file_is_one_line(case, scenario, tmp_path, monkeypatch, capsys):
    """Regression: each of these was a pyarrow traceback (exit 1) on --resume."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = tmp_path / "s"
    args = _finished(scenario, out, monkeypatch, capsys)
    results = out / "results"
    bad = {"empty": results / "part-000001.parquet", "corrupt": results / "part-000002.parquet",
           "stray": results / "notes.csv", "beyond": results / "part-000007.parquet",
           "folder": results / "old", "foreign": results / "part-000000.parquet"}[case]
    if case == "empty":
        bad.write_bytes(b"")
    elif case == "corrupt":
        bad.write_bytes(bad.read_bytes()[:40])  # a truncated copy
    elif case == "stray":
        bad.write_text("a,b\n1,2\n")
    elif case == "beyond":
        (results / "part-000001.parquet").rename(bad)
    elif case == "folder":
        bad.mkdir()
    else:
        pq.write_table(pa.table({"x": [1]}), bad)  # a Parquet file, not a row of the sweep
    code, _, err = run_cli([*args, "--resume"], monkeypatch, capsys)
    assert code == 2, err
    [line] = err.strip().splitlines()
    assert line.startswith("rlsim: error: --resume: ") and str(bad) in line
    assert "Traceback" not in err
    assert ("delete it and rerun with --resume" in line if case in ("empty", "corrupt")
            else "move it out" in line)
