"""The machine report in words: what ``python -m demos info`` and chapter 0 print.

:func:`demos.hardware.report` finds what this machine offers and returns it as a
dictionary (benchmarks record it as it is); this module only words such a
dictionary for a person, with a warning, and its fix, where a GPU is visible but
the course's GPU libraries cannot use it. It imports nothing of the course, so
that the report of another machine (a benchmark's record) reads the same.
"""

from __future__ import annotations

from typing import Any


def gpu_warnings(info: dict[str, Any]) -> list[str]:
    """What is wrong when a GPU is visible but the course's GPU libraries cannot use it.

    The usual cause is an install made for the CPU (e.g. on a login node without a
    GPU) or CUDA libraries newer than the driver; the warning names the fix.
    """
    if not info["gpus"]:
        return []
    fix = (
        "install the CUDA builds with `./course.sh install --gpu` and check that the "
        f"driver (CUDA {info['cuda_driver']}) is at least the CUDA version of the wheels (12.x)"
    )
    warnings = []
    if not info.get("cupy_usable"):
        warnings.append(f"a GPU is visible but CuPy cannot use it ({info['cupy']}): {fix}")
    if not info.get("numba_cuda_usable") and not info["simulator"]:
        warnings.append(
            f"a GPU is visible but numba-cuda cannot use it ({info['numba_cuda']}): {fix}"
        )
    return warnings


def format_report(info: dict[str, Any]) -> str:
    """A human-readable version of :func:`demos.hardware.report`'s dictionary *info*."""
    lines = [
        f"Python      {info['python']} on {info['platform']}",
        f"CPU         {info['processor']} ({info['cpu_count']} logical cores)",
    ]
    if info["cuda_driver"]:
        lines.append(
            f"CUDA driver supports CUDA {info['cuda_driver']} (the newest CUDA its GPUs can run)"
        )
    if info["gpus"]:
        for g in info["gpus"]:
            cc = ".".join(map(str, g["compute_capability"]))
            lines.append(
                f"GPU {g['index']}       {g['name']}: {g['total_memory_bytes'] / 2**30:.1f} GiB, "
                f"compute capability {cc}, {g['multiprocessors']} SMs"
            )
    else:
        lines.append(f"GPUs        none: {info['no_gpu_reason']}")
    sim = (
        "ON (kernels run on the CPU, one Python thread per CUDA thread)"
        if info["simulator"]
        else "off"
    )
    lines.append(f"Numba CUDA simulator {sim}")
    lines.append(f"CuPy        {info['cupy']}")
    if "numba_cuda" in info:
        lines.append(f"numba-cuda  {info['numba_cuda']}")
    if "tensorflow" in info:
        lines.append(f"TensorFlow  {info['tensorflow']}")
    versions = ", ".join(f"{k} {v}" for k, v in info["packages"].items() if v)
    lines.append(f"Packages    {versions}")
    lines += [f"WARNING     {w}" for w in gpu_warnings(info)]
    return "\n".join(lines)
