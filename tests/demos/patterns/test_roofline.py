"""Chapter 4d's roofline: the operation and byte counts, the roofs, the points and the plot.

Why: the chapter's intensity check grades students against these counts, and
its plot places every kernel of the course from the shipped benchmark results;
a wrong count or a misread result would draw a wrong lesson. The points are
tested from the shipped reference files (their values recomputed from the raw
times here), the roofs against gpu_specs.json, the plot headless.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from demos import shipped_results  # noqa: E402
from demos.patterns import roofline  # noqa: E402


@pytest.mark.parametrize(
    "kernel, n, itemsize, expected",
    [
        ("sum", 1000, 4, 0.25),
        ("histogram", 1000, 4, 0.25),
        ("distance", 1000, 8, 8 * 1000**2 / (8 * (1000**2 + 3000))),
        ("matmul", 4096, 4, 2 * 4096 / 12),
    ],
)
def test_intensity_is_the_problems_operations_over_its_least_traffic(kernel, n, itemsize, expected):
    assert roofline.intensity(kernel, n, itemsize) == pytest.approx(expected)


def test_only_the_matrix_product_grows_with_n() -> None:
    for kernel in ("sum", "histogram", "distance"):
        assert roofline.intensity(kernel, 2**20, 4) == pytest.approx(
            roofline.intensity(kernel, 2**12, 4), rel=0.01
        )
    assert roofline.intensity("matmul", 2048, 4) == 2 * roofline.intensity("matmul", 1024, 4)


def test_bad_input_gets_one_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown kernel 'scan'"):
        roofline.intensity("scan", 10, 4)
    with pytest.raises(ValueError, match="n must be a positive int"):
        roofline.operations("sum", 0)


def test_roofs_follow_the_board_in_the_drivers_name() -> None:
    specs = shipped_results.load("gpu_specs.json", required=True)["gpus"]
    sxm = roofline.roofs("NVIDIA H100 80GB HBM3")
    pcie = roofline.roofs("NVIDIA H100 PCIe")
    assert sxm["board"] == "H100 SXM" and pcie["board"] == "H100 PCIe"
    assert sxm["float32"] == specs["NVIDIA H100"]["tflops"]["H100 SXM"]["fp32"] * 1e12
    assert pcie["bandwidth"] < sxm["bandwidth"]
    h200 = roofline.roofs("NVIDIA H200")
    assert h200["bandwidth"] == specs["NVIDIA H200"]["memory_bandwidth_tb_per_s"] * 1e12
    assert roofline.ridge(h200) == pytest.approx(67 / 4.8)
    assert roofline.roofs("Tesla V100-SXM2-16GB") is None


def test_reference_points_are_the_shipped_runs_recomputed() -> None:
    found = {p["label"]: p for p in roofline.reference_points()}
    matmul = shipped_results.load("matmul_h200.json", required=True)["results"]
    cublas = next(k for k in matmul["kernels"] if k["name"] == "cupy.matmul (cuBLAS)")
    point = found["matmul: cupy.matmul (cuBLAS)"]
    assert point["ops_per_s"] == pytest.approx(cublas["tflops"] * 1e12)
    assert found["matmul: naive, loads issued"]["intensity"] == pytest.approx(0.25)
    patterns = shipped_results.load("patterns_h200.json", required=True)["results"]
    tree = next(r for r in patterns["reduction"] if r["name"] == "tree (shared memory)")
    assert found["sum: tree (shared memory)"]["ops_per_s"] == pytest.approx(
        tree["n"] / (tree["ms"] / 1e3)
    )
    distance = found["distance: best"]
    assert distance["precision"] == "float64" and distance["intensity"] == pytest.approx(1, 0.01)
    kinds = {p["kernel"] for p in found.values()}
    assert kinds == set(roofline.KERNELS)


def test_a_missing_result_leaves_its_points_out() -> None:
    assert roofline.points(None, None, None) == []
    only = roofline.points(None, None, {"n": 1024, "dtype": "float32", "best_ms": 1.0})
    assert [p["label"] for p in only] == ["distance: best"]
    assert only[0]["precision"] == "float32"


def test_prediction_is_marked_against_the_ridge(capsys) -> None:
    points = roofline.reference_points()
    guess = {"sum": True, "histogram": False, "matmul": False}
    roofline.compare_prediction(guess, points, roofline.roofs("NVIDIA H200"))
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[2:]}
    assert lines["sum"].endswith("✓") and lines["histogram"].endswith("✗")
    assert "compute" in lines["matmul"] and lines["matmul"].endswith("✓")
    assert lines["distance"].rstrip().endswith("-")


def test_plot_draws_roofs_and_every_point_in_each_panel() -> None:
    points = roofline.reference_points()
    figure = roofline.plot([("a", points, roofline.roofs("NVIDIA H200")), ("b", points, None)])
    first, second = figure.axes
    assert len(first.lines) == len(points) + 2 and len(second.lines) == len(points)
    assert first.get_xscale() == "log" and first.get_yscale() == "log"
