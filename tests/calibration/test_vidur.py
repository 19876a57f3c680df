"""calibration.vidur: Vidur CSVs -> rlsim profile, its fidelity and its errors on bad input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from calibration import fit_vidur as fv
from calibration.fit import write_profile
from calibration.vidur import Report, find_vidur_files, profile_from_vidur
from rlsim.config.hardware import lookup_gpu
from rlsim.cost import Profile, builtin_profile, load_profile

DATA = Path(__file__).resolve().parents[1] / "data" / "vidur"
LIMIT = 0.10


@pytest.fixture(scope="module", params=["H100", "A100"])
def imported(request: pytest.FixtureRequest) -> tuple[str, Profile, Report]:
    name = str(request.param)
    prof, report = profile_from_vidur(DATA, lookup_gpu(name))
    return name, prof, report


def test_import_reproduces_llama2_operator_times(imported: tuple[str, Profile, Report]) -> None:
    """Issue 3: the imported profile predicts Vidur's measured Llama-2-7B operators."""
    name, _, report = imported
    for key in ("operators", "gemm_ops", "layer_ops_sum", "linear_tp1", "linear_tp2",
                "linear_tp4"):
        assert report[key]["train_mape"] <= LIMIT, (name, key, report[key])
    assert report["operators"]["points"] == 8 * report["linear_tp1"]["points"] * 4


def test_import_is_the_shipped_fit(imported: tuple[str, Profile, Report]) -> None:
    """Importing the data the built-in profiles came from gives the same constants."""
    name, prof, _ = imported
    shipped = builtin_profile(lookup_gpu(name))
    for field in (*fv.GEMM_PARAM_NAMES, "elementwise_hbm_efficiency", "norm_hbm_efficiency",
                  "rotary_hbm_efficiency", "elementwise_launch_s", "allreduce_latency_s",
                  "allreduce_bus_efficiency"):
        assert getattr(prof, field) == pytest.approx(getattr(shipped, field), rel=1e-6), field
    assert prof.device == lookup_gpu(name)
    assert prof.gpu == name
    assert "Vidur" in prof.provenance and "mlp.csv" in prof.provenance


def test_import_round_trips(imported: tuple[str, Profile, Report], tmp_path: Path) -> None:
    _, prof, _ = imported
    loaded = load_profile(write_profile(prof, tmp_path / "v.json"))
    assert loaded.content_hash() == prof.content_hash()


def test_gpu_is_detected_from_folder_names() -> None:
    files = find_vidur_files(DATA / "compute" / "a100")
    assert files.gpu.name == "A100"
    assert files.allreduce_gpu.name == "H100"  # only H100 collectives were measured
    assert files.allreduce_csv is not None and files.allreduce_csv.name == "all_reduce.csv"
    assert [p.parent.name for p in files.mlp_csvs] == ["Llama-2-7b-hf"]
    assert find_vidur_files(DATA, lookup_gpu("H100")).allreduce_gpu.name == "H100"


def _copy_gpu(tmp_path: Path, gpu_dir: str = "h100") -> Path:
    root = tmp_path / "vidur"
    shutil.copytree(DATA / "compute" / "h100", root / "compute" / gpu_dir)
    shutil.copytree(DATA / "network", root / "network")
    return root


def _one_line_error(directory: Path, match: str) -> None:
    with pytest.raises(ValueError, match=match) as err:
        profile_from_vidur(directory)
    assert "\n" not in str(err.value)


def test_bad_folders_name_the_problem(tmp_path: Path) -> None:
    _one_line_error(tmp_path / "missing", "does not exist")
    _one_line_error(tmp_path, "compute")
    with pytest.raises(ValueError, match="several GPUs"):
        find_vidur_files(DATA)
    root = _copy_gpu(tmp_path, "x999")
    _one_line_error(root, "cannot tell the GPU from folder name 'x999'")
    with pytest.raises(ValueError, match=r"no .*compute/a100"):
        find_vidur_files(root, lookup_gpu("A100"))


def test_missing_file_or_column_is_named(tmp_path: Path) -> None:
    root = _copy_gpu(tmp_path)
    csv = next((root / "compute" / "h100").glob("*/*/mlp.csv"))
    header, *rows = csv.read_text().splitlines()
    cols = header.split(",")
    drop = cols.index("time_stats.mlp_up_proj.median")
    csv.write_text("\n".join(",".join(c for i, c in enumerate(line.split(",")) if i != drop)
                             for line in [header, *rows]) + "\n")
    _one_line_error(root, "missing column 'time_stats.mlp_up_proj.median'")
    csv.unlink()
    _one_line_error(root, "no mlp.csv under")
