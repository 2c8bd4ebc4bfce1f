"""tools/gpu-node/sanitize.sh: compute-sanitizer on the chapters' kernels, checked without a GPU.

The tool needs a GPU and compute-sanitizer; here it must say clearly which one
is missing and run nothing, refuse unknown kernel names and missing files, and
its two Python halves must work: the launcher (in the simulator, on request) and
the summary of the sanitizer's logs (on excerpts of real logs from an H200).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from demos.checks import sanitize
from helpers import ROOT, instructor_tools

TOOL = ROOT / "tools" / "gpu-node" / "sanitize.sh"
needs_tool = instructor_tools

# Excerpts of logs of `sanitize.sh` on an H200 (CUDA 13): a racy shared histogram, clean memcheck.
RACECHECK_LOG = """========= COMPUTE-SANITIZER
== sanitize: histogram_shared: launching
========= Warning: Race reported between Write access at sanitized_bugs::histogram_shared[abi:v1,cw51](Array<int, (int)1, C, mutable, aligned>, Array<int, (int)1, C, mutable, aligned>)+0x16d0 in bugs.py:12
=========     and Write access at sanitized_bugs::histogram_shared[abi:v1,cw51](Array<int, (int)1, C, mutable, aligned>, Array<int, (int)1, C, mutable, aligned>)+0x1bd0 in bugs.py:12 [1024 hazards]
=========
========= Warning: Race reported between Read access at sanitized_bugs::histogram_shared[abi:v1,cw51](Array<int, (int)1, C, mutable, aligned>, Array<int, (int)1, C, mutable, aligned>)+0x1d30 in bugs.py:12
=========
== sanitize: histogram_shared: result WRONG
== sanitize: block_sum_kernel: launching
== sanitize: block_sum_kernel: result right
========= Target application returned an error
========= RACECHECK SUMMARY: 2 hazards displayed (0 errors, 2 warnings)
"""  # noqa: E501
MEMCHECK_LOG = """========= COMPUTE-SANITIZER
== sanitize: block_sum_kernel: launching
== sanitize: block_sum_kernel: result right
========= ERROR SUMMARY: 0 errors
"""


def _tool(tmp_path: Path, *args: str, path: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "CUDA_PATH")}
    if path is not None:
        env["PATH"] = path
    return subprocess.run(
        ["bash", str(TOOL), str(tmp_path / "out"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def _plain_path(tmp_path: Path) -> str:
    """PATH without any CUDA toolkit: a folder of our own, then the system's."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    system = [p for p in ("/usr/local/bin", "/usr/bin", "/bin") if Path(p).is_dir()]
    return os.pathsep.join([str(folder), *system])


@needs_tool
def test_unknown_kernels_and_missing_sources_are_refused_before_anything_runs(
    tmp_path, capsys
) -> None:
    proc = _tool(tmp_path, "no_such_kernel")
    assert proc.returncode == 2
    assert "unknown kernel(s) no_such_kernel" in proc.stderr and "block_sum_kernel" in proc.stderr
    assert not (tmp_path / "out" / "racecheck.log").exists()
    assert sanitize.main(["check", "--source", str(tmp_path / "missing.py")]) == 2
    assert "no such file" in capsys.readouterr().err
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    assert sanitize.main(["check", "--source", str(empty), "warp_sum"]) == 2
    assert "defines no kernel named warp_sum" in capsys.readouterr().err
    assert sanitize.main(["check", "warp_sum", "tiled_distance_kernel"]) == 0


@needs_tool
@pytest.mark.skipif(
    shutil.which("compute-sanitizer") is not None
    or Path("/usr/local/cuda/bin/compute-sanitizer").exists(),
    reason="compute-sanitizer is installed here",
)
def test_without_compute_sanitizer_it_says_where_to_get_it(tmp_path) -> None:
    proc = _tool(tmp_path, "block_sum_kernel", path=_plain_path(tmp_path))
    assert proc.returncode == 3, proc.stderr
    assert "compute-sanitizer is not on PATH" in proc.stderr and "CUDA toolkit" in proc.stderr


@needs_tool
@pytest.mark.nogpu
def test_without_a_gpu_it_says_so(tmp_path) -> None:
    path = _plain_path(tmp_path)
    fake = tmp_path / "bin" / "compute-sanitizer"
    fake.write_text("#!/bin/sh\necho 'compute-sanitizer must not run without a GPU' >&2\nexit 9\n")
    fake.chmod(0o755)
    proc = _tool(tmp_path, "block_sum_kernel", path=path)
    assert proc.returncode == 3, proc.stderr
    assert "no CUDA GPU here" in proc.stderr and "must not run" not in proc.stderr


def test_the_launcher_runs_every_chapter_kernel_in_the_simulator() -> None:
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "demos.checks.sanitize", "launch", "--allow-simulator"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in sanitize.LAUNCHES:
        assert f"== sanitize: {name}: result right" in proc.stdout
    refused = subprocess.run(
        [sys.executable, "-m", "demos.checks.sanitize", "launch", "warp_sum"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
        check=False,
    )
    assert refused.returncode == 3 and "must run on a GPU" in refused.stderr


def test_the_launcher_reports_a_wrong_student_kernel(tmp_path, capsys) -> None:
    source = tmp_path / "cells.py"
    source.write_text(
        "@cuda.jit\ndef histogram_atomic(values, bins):\n    i = cuda.grid(1)\n"
        "    if i < values.shape[0]:\n        cuda.atomic.add(bins, values[i], 1)\n"
    )
    assert sanitize.main(["launch", "--source", str(source), "--allow-simulator"]) == 1
    assert "histogram_atomic: result WRONG" in capsys.readouterr().out  # 64 threads, 400 values


def test_the_summary_counts_racecheck_warnings_per_kernel(tmp_path, capsys) -> None:
    (tmp_path / "racecheck.log").write_text(RACECHECK_LOG)
    (tmp_path / "memcheck.log").write_text(MEMCHECK_LOG)
    assert sanitize.main(["summary", str(tmp_path)]) == 1
    found = json.loads(capsys.readouterr().out)
    assert found["racecheck"]["errors"] == 2 and found["memcheck"]["errors"] == 0
    racy = found["racecheck"]["kernels"]["histogram_shared"]
    assert racy["count"] == 2 and racy["result"] == "WRONG"
    assert racy["reports"][0] == (
        "Warning: Race reported between Write access at "
        "sanitized_bugs::histogram_shared in bugs.py:12"
    )
    assert "block_sum_kernel" not in found["racecheck"]["kernels"]
    (tmp_path / "racecheck.log").write_text(
        MEMCHECK_LOG.replace("ERROR SUMMARY: 0 errors", "RACECHECK SUMMARY: 0 hazards displayed")
    )
    assert sanitize.main(["summary", str(tmp_path)]) == 0
    capsys.readouterr()
    (tmp_path / "memcheck.log").write_text("========= COMPUTE-SANITIZER\n(cut off)\n")
    assert sanitize.main(["summary", str(tmp_path)]) == 1  # no summary line: not clean
