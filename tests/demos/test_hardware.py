"""Hardware discovery answers sensibly on any machine, and GPU-only code fails clearly."""

import json
import subprocess
import sys

import pytest

from demos import hardware, machine_report


def test_report_is_consistent_with_gpu_list():
    info = hardware.report()
    assert len(info["gpus"]) == hardware.gpu_count()
    if hardware.has_gpu():
        assert info["no_gpu_reason"] is None
        assert all(g["total_memory_bytes"] > 0 for g in info["gpus"])
    else:
        assert isinstance(info["no_gpu_reason"], str) and info["no_gpu_reason"]


def test_info_command_prints_json():
    out = subprocess.run(
        [sys.executable, "-m", "demos", "info", "--json", "--no-tensorflow"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    info = json.loads(out)
    assert info["cpu_count"] >= 1
    assert "numpy" in info["packages"]
    assert isinstance(info["warnings"], list)  # machine_report.gpu_warnings, as JSON


def test_chapter_0_prints_the_report_from_the_hardware_module():
    """course/00's cell calls hardware.format_report: the words stay importable from there."""
    assert hardware.format_report is machine_report.format_report


def test_unknown_command_is_refused_with_usage():
    proc = subprocess.run(
        [sys.executable, "-m", "demos", "frobnicate"], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "unknown command" in proc.stderr and "bench distance" in proc.stderr


@pytest.mark.nogpu
def test_require_gpu_explains_why():
    with pytest.raises(hardware.GPUUnavailableError, match="needs an NVIDIA CUDA GPU"):
        hardware.require_gpu("The tiled kernel")
    with pytest.raises(hardware.GPUUnavailableError, match="needs CuPy on a CUDA GPU"):
        hardware.require_cupy("The CuPy distance matrix")


@pytest.mark.gpu
def test_gpu_properties_are_real():
    for g in hardware.gpus():
        assert g.compute_capability[0] >= 3
        assert g.multiprocessors > 0
    assert hardware.cupy_available()


def test_info_warns_when_a_gpu_is_visible_but_unusable():
    """A CPU-only install on a GPU node (e.g. made on the login node) is named, with its fix."""
    gpu = {
        "index": 0,
        "name": "NVIDIA H200",
        "total_memory_bytes": 150 * 2**30,
        "compute_capability": (9, 0),
        "multiprocessors": 132,
    }
    info = {
        **hardware.report(),
        "gpus": [gpu],
        "cuda_driver": "12.2",
        "simulator": False,
        "cupy_usable": False,
        "cupy": "CuPy is not installed",
        "numba_cuda_usable": False,
        "numba_cuda": "numba-cuda cannot use the GPU",
    }
    text = machine_report.format_report(info)
    warnings = [line for line in text.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 2 and all("./course.sh install --gpu" in w for w in warnings)
    assert "CuPy" in warnings[0] and "numba-cuda" in warnings[1] and "CUDA 12.2" in text
    usable = {**info, "cupy_usable": True, "numba_cuda_usable": True}
    assert machine_report.gpu_warnings(usable) == []
    if not hardware.has_gpu():  # nothing to warn about on a machine without a GPU
        assert machine_report.gpu_warnings(hardware.report()) == []
