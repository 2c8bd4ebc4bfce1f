"""The benchmark commands (bench distance, bench kernels) and plot, end to end on tiny sizes."""

from __future__ import annotations

import json

import pytest

import helpers
from demos import __main__ as cli
from demos import hardware
from demos.shipped_results import RESULTS_DIR


@pytest.fixture(scope="module")
def bench_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    rc = cli.main(
        [
            "bench",
            "distance",
            "--sizes",
            "8,33",
            "--backends",
            "numpy,numba-cpu,no-such-backend",
            "--repeats",
            "2",
            "--output",
            str(out),
            "--compat",
            "--chunked",
            "0.0005",
            "--no-progress",
        ]
    )
    assert rc == 0
    return out


def test_sweep_json_has_results_and_hardware(bench_dir):
    data = json.loads((bench_dir / "distance.json").read_text())
    assert data["benchmark"] == "distance"
    assert data["parameters"]["mode"] == "sweep"
    assert {"gpus", "processor", "packages"} <= set(data["environment"])
    runs = data["results"]["runs"]
    assert {(r["backend"], r["n"]) for r in runs} == {
        (b, n) for b in ("numpy", "numba-cpu") for n in (8, 33)
    }
    for run in runs:
        assert run["host_to_host"]["repeats"] == 2
        assert run["host_to_host"]["median_s"] > 0
        assert run["max_abs_error"] < 1e-9
    assert "no-such-backend" in data["results"]["skipped"]


def test_compat_files(bench_dir):
    measurements = json.loads((bench_dir / "measurements.json").read_text())
    assert set(measurements) == {"8", "33"}
    assert set(measurements["33"]) == {"numpy", "cpu"}
    ops = json.loads((bench_dir / "measurements_ops.json").read_text())
    assert {"np.einsum", "np.matmul", "np.ops"} <= set(ops["33"])
    assert all(v > 0 for v in ops["33"].values())


def test_chunked_result(bench_dir):
    data = json.loads((bench_dir / "distance_chunked.json").read_text())["results"]
    assert data["sampled_rows_max_abs_error"] < 1e-9
    assert data["gb_per_s"] > 0
    assert data["device"] == ("gpu" if hardware.cupy_available() else "cpu")


def test_plot_command_writes_pngs(bench_dir, tmp_path):
    assert cli.main(["plot", "--input", str(bench_dir), "--output", str(tmp_path)]) == 0
    pngs = {p.name for p in tmp_path.glob("*.png")}
    assert {"distance_runtime.png", "distance_ops.png"} <= pngs
    for name in pngs:
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_skips_unknown_and_missing_plotters(tmp_path, capsys, monkeypatch):
    from demos import plots

    monkeypatch.setitem(plots.REGISTRY, "absent", "demos.no_such_module:plot")
    (tmp_path / "other.json").write_text(json.dumps({"benchmark": "unknown", "results": {}}))
    (tmp_path / "absent.json").write_text(json.dumps({"benchmark": "absent", "results": {}}))
    (tmp_path / "broken.json").write_text("{not json")
    assert cli.main(["plot", "--input", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "no plot registered" in out
    assert "not available" in out
    assert "not readable JSON" in out
    assert not list(tmp_path.glob("*.png"))


def test_bad_sizes_are_rejected_and_reference_sizes_come_from_one_place():
    from demos.benchmarks import sizes

    with pytest.raises(SystemExit):
        cli.main(["bench", "distance", "--sizes", "10,-3"])
    assert sizes.int_list("reference") == list(sizes.DISTANCE_REFERENCE_SIZES)
    shipped = json.loads((RESULTS_DIR / "distance.json").read_text())["parameters"]["sizes"]
    assert shipped == list(sizes.DISTANCE_REFERENCE_SIZES)


@pytest.mark.nogpu
def test_overhead_without_gpu_is_skipped_with_the_reason(tmp_path, capsys):
    args = ["bench", "distance", "--no-sweep", "--overhead", "--output", str(tmp_path)]
    assert cli.main(args) == 0
    assert "skipping --overhead" in capsys.readouterr().out
    assert not (tmp_path / "distance_overhead.json").exists()


def test_shipped_measurements_are_derived_from_the_shipped_results():
    """demos/measurements*.json (read by the original course) come from demos/results/ only."""
    from demos.benchmarks.distance import compat_dir
    from demos.benchmarks.distance_sweep import compat_measurements, compat_ops
    from demos.benchmarks.record import PACKAGE_DIR

    sweep = json.loads((RESULTS_DIR / "distance.json").read_text())["results"]
    ops = json.loads((RESULTS_DIR / "distance_ops.json").read_text())["results"]
    shipped = json.loads((PACKAGE_DIR / "measurements.json").read_text())
    assert shipped == compat_measurements(sweep["runs"])
    assert json.loads((PACKAGE_DIR / "measurements_ops.json").read_text()) == compat_ops(ops)
    assert not list(RESULTS_DIR.glob("measurements*.json"))  # one source, no copies
    assert compat_dir(RESULTS_DIR) == PACKAGE_DIR


@helpers.on_cuda
def test_kernel_sweep_runs_every_kernel_and_tuning(tmp_path):
    args = ["bench", "kernels", "--float32-n", "12", "--float64-n", "8", "--repeats", "1"]
    args += ["--blocks", "4", "--rows-per-thread", "2,4", "--output", str(tmp_path)]
    assert cli.main(args) == 0
    data = json.loads((tmp_path / "distance_kernels.json").read_text())
    assert data["parameters"]["mode"] == "kernels"
    kernels = [r for r in data["results"]["records"] if "kernel" in r]
    assert all(r.get("correct") for r in kernels), [r for r in kernels if not r.get("correct")]
    ran = {(r["dtype"], r["label"]): r["ran"] for r in kernels}
    assert ran[("float32", "quads")] == "quads"
    assert ran[("float64", "quads")] == "pairs"  # no float64 quads: the record says so
    assert ran[("float64", "best")] == "rows"
    assert ("float32", "pairs block=4 rows=2") in ran
    assert set(data["results"]["best_by_dtype"]) == {"float32", "float64"}
