"""rebase_paths: a scenario mapping written to another folder keeps pointing at its files."""

from __future__ import annotations

from pathlib import Path

from rlsim.config.loading import rebase_paths


def test_paths_follow_the_file_and_catalogue_names_stay(tmp_path: Path) -> None:
    base = tmp_path / "scenarios"
    (base / "traces").mkdir(parents=True)
    (base / "my.model.yaml").write_text("{}")
    data = {"model": "my.model.yaml", "workload": {"trace": {"path": "traces"}},
            "pools": [{"name": "a", "profile": "missing.json"}], "other": "traces"}
    absolute = rebase_paths(data, base, keys=("path", "model", "profile"))
    assert absolute["workload"]["trace"]["path"] == str((base / "traces").resolve())
    assert absolute["model"] == str((base / "my.model.yaml").resolve())
    assert absolute["pools"][0]["profile"] == "missing.json"  # not a file there: a name
    assert absolute["other"] == "traces"  # not a path field
    out = tmp_path / "runs" / "advice"
    out.mkdir(parents=True)
    moved = rebase_paths(data, base, to=out, keys=("path", "model", "profile"))
    assert moved["workload"]["trace"]["path"] == "../../scenarios/traces"
    assert (out / moved["model"]).resolve() == (base / "my.model.yaml").resolve()
    # Only `path` by default (rlsim fit): the model field is left as written.
    assert rebase_paths(data, base)["model"] == "my.model.yaml"
    assert rebase_paths({"model": "qwen2.5-7b"}, base, keys=("model",)) == {"model": "qwen2.5-7b"}
