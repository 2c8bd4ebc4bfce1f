"""The chapters' "your turn" cells: counted, and every check passes the model answer and fails the
stub.

Why: a check that passes everything teaches nothing, and one that fails the
model answer discourages. For every student cell in ``course/`` this test runs
the committed stub (which must fail, with a message and no exception) and the
model answer from ``demos/checks/answers/`` (which must pass), in the CUDA
simulator on CPU and on the real GPU where there is one. It also feeds a few
typical mistakes to the kernel checks and asserts the feedback names them.
"""

from __future__ import annotations

import re

import nbformat
import pytest

from demos import manifest
from demos.checks import CHECKS, answer_source, passes
from helpers import ROOT, notebook_cell

MARKER = re.compile(r"^# Your turn: (\w+)\s*$", re.MULTILINE)
# Every chapter that ends with an assignment has "your turn" cells: three at least, but
# chapter 5, whose one cell is an experiment (training at several batch sizes, minutes long).
TECHNICAL_CHAPTERS = tuple(ch.id for ch in manifest.course().chapters if ch.assignment)
FEWER_CELLS = {"05": 1}


def student_cells() -> list[tuple[str, str, str, str]]:
    """(chapter, name, stub source, the next code cell's source) for every marked cell."""
    found = []
    for path in sorted((ROOT / "course").glob("*.ipynb")):
        code = [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
        for k, source in enumerate(code):
            match = MARKER.match(source)
            if match:
                follow = code[k + 1] if k + 1 < len(code) else ""
                found.append((path.name.split("-")[0], match.group(1), source, follow))
    return found


CELLS = student_cells()


def test_the_course_has_enough_student_cells_and_kernels() -> None:
    assert len(CELLS) >= 24, f"only {len(CELLS)} 'your turn' cells with checks"
    for chapter in TECHNICAL_CHAPTERS:
        count, needed = sum(1 for c in CELLS if c[0] == chapter), FEWER_CELLS.get(chapter, 3)
        assert count >= needed, f"chapter {chapter} has {count} 'your turn' cells, needs {needed}"
    kernels = 0
    for path in (ROOT / "course").glob("*.ipynb"):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                kernels += len(re.findall(r"^@cuda\.jit", cell.source, re.MULTILINE))
    assert kernels >= 6, f"only {kernels} @cuda.jit kernels are defined in notebook cells"


def test_every_student_cell_is_followed_by_its_check_and_every_check_is_used() -> None:
    for chapter, name, _, follow in CELLS:
        assert name in CHECKS, f"chapter {chapter}: no check named {name}"
        assert follow.startswith(f'check("{name}", {name})'), (
            f"chapter {chapter}: the cell after 'your turn: {name}' "
            f'should run check("{name}", {name})'
        )
        assert CHECKS[name][0] == chapter, f"{name} is registered for chapter {CHECKS[name][0]}"
    assert sorted(c[1] for c in CELLS) == sorted(CHECKS), "every check belongs to one cell"


@pytest.mark.parametrize("chapter, name, stub, follow", CELLS, ids=[c[1] for c in CELLS])
def test_check_fails_the_stub_and_passes_the_model_answer(
    chapter, name, stub, follow, capsys
) -> None:
    assert passes(name, notebook_cell(stub, name)) is False
    if chapter == "05":  # chapter 5's check trains the network: it needs Keras
        pytest.importorskip("keras")
    said = capsys.readouterr().out
    assert said.startswith(f"✗ {name}:"), said
    assert passes(name, notebook_cell(answer_source(name), name)) is True
    assert capsys.readouterr().out.startswith(f"✓ {name}:")


MISTAKES = {
    # a kernel without a guard writes past the end
    "add_to_kernel": (
        """
from numba import cuda
@cuda.jit
def add_to_kernel(source, target):
    i = cuda.grid(1)
    target[i] += source[i]
""",
        "outside",
    ),
    # rows on x: right for the launch [(n, m), (1, 1)], wrong for the coalesced launch
    "coalesced_distance_kernel": (
        """
from numba import cuda
@cuda.jit
def coalesced_distance_kernel(x, y, out):
    i, j = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = (x[i, 0] - y[j, 0]) ** 2 + (x[i, 1] - y[j, 1]) ** 2 + (x[i, 2] - y[j, 2]) ** 2
""",
        "columns j on x",
    ),
    # the old chapter 2 model: equal lengths counted once
    "warp_cost": (
        """
def warp_cost(lane_branch, branch_steps):
    return sum(set(branch_steps[b] for b in lane_branch))
""",
        "equal length",
    ),
    # float64 intermediate: the dtype is lost
    "row_norms": (
        """
import numpy as np
def row_norms(x):
    return (np.asarray(x, dtype=np.float64) ** 2).sum(axis=1)
""",
        "dtype",
    ),
    # a tiled kernel without shared memory is not the lesson
    "tiled_distance_kernel": (
        """
from numba import cuda
@cuda.jit
def tiled_distance_kernel(x, y, out):
    j, i = cuda.grid(2)
    if i < out.shape[0] and j < out.shape[1]:
        out[i, j] = 0.0
""",
        "shared",
    ),
    # chapter 4's device memory: NumPy arrays handed to the kernel, copied at every launch
    "distance_on_device": (
        """
import math
import numpy as np
def distance_on_device(x, y, kernel):
    out = np.empty((x.shape[0], y.shape[0]))
    kernel[(math.ceil(y.shape[0] / 32), math.ceil(x.shape[0] / 8)), (32, 8)](x, y, out)
    return out
""",
        "the kernel got host array(s) for x, y, out",
    ),
    # chapter 5's batch trial: a prediction, but the tutorial's batch left as it was
    "batch_trial": (
        """
batch_trial = {"batch_size": 32, "predicted_speedup": 4}
""",
        "change batch_size",
    ),
    # chapter 3's element-wise kernel: the row's norm used twice instead of the column's
    "combine_kernel": (
        """
combine_kernel = {"in_params": "T x2_i, T xy, T y2_j", "out_params": "T d",
                  "operation": "d = x2_i - 2 * xy + x2_i"}
""",
        "with x2_i = 1 and the rest 0, your kernel gives 2, expected 1",
    ),
}


@pytest.mark.parametrize("name", sorted(MISTAKES))
def test_typical_mistakes_get_specific_feedback(name: str, capsys) -> None:
    source, words = MISTAKES[name]
    assert passes(name, notebook_cell(source, name)) is False
    said = capsys.readouterr().out
    assert words in said, f"feedback for {name} should mention {words!r}: {said}"


@pytest.mark.parametrize(
    "change, words",
    [
        ({"operation": "d = x2_i - 2 * xy + y2_j ** 1"}, "C has no power operator"),
        ({"out_params": "float64 d"}, "dtype float64, expected float32"),
        ({"in_params": "T x2_i, T xy"}, "declare 3 inputs"),
        ({"operation": "out = x2_i - 2 * xy + y2_j"}, "never sets the output 'd'"),
    ],
)
def test_combine_kernel_explains_what_c_and_cupy_would_reject(change, words, capsys) -> None:
    """The kernel strings are C for CuPy: Python-isms and a float64 output are named, on CPU too."""
    spec = {**notebook_cell(answer_source("combine_kernel"), "combine_kernel"), **change}
    assert passes("combine_kernel", spec) is False
    said = capsys.readouterr().out
    assert words in said, said


def test_distance_on_device_names_a_needless_copy_and_a_returned_device_array(capsys) -> None:
    """Copying the output in with to_device, or returning the device array, is named as such."""
    copied_in = """
import math
import numpy as np
from numba import cuda
def distance_on_device(x, y, kernel):
    out = cuda.to_device(np.zeros((x.shape[0], y.shape[0])))
    kernel[(math.ceil(y.shape[0] / 32), math.ceil(x.shape[0] / 8)), (32, 8)](
        cuda.to_device(x), cuda.to_device(y), out)
    return out.copy_to_host()
"""
    assert passes("distance_on_device", notebook_cell(copied_in, "distance_on_device")) is False
    assert "allocate it there with cuda.device_array" in capsys.readouterr().out
    left_on_gpu = copied_in.replace("np.zeros", "np.empty").replace(
        "return out.copy_to_host()", "return out"
    )
    left_on_gpu = left_on_gpu.replace(
        "out = cuda.to_device(np.empty((x.shape[0], y.shape[0])))",
        "out = cuda.device_array((x.shape[0], y.shape[0]))",
    )
    assert passes("distance_on_device", notebook_cell(left_on_gpu, "distance_on_device")) is False
    assert "you returned the device array" in capsys.readouterr().out


@pytest.mark.parametrize(
    "operation",
    [
        "T t = 2 * xy; d = x2_i - t + y2_j;",
        "d = x2_i + y2_j; d -= 2.0 * xy",
        "d = -2*xy + x2_i + y2_j",
    ],
)
def test_combine_kernel_accepts_other_correct_c(operation, capsys) -> None:
    """A local variable, a compound assignment or another order is still right C: not refused."""
    answer = notebook_cell(answer_source("combine_kernel"), "combine_kernel")
    spec = {**answer, "operation": operation}
    assert passes("combine_kernel", spec) is True, capsys.readouterr().out


# --- the checks' real-GPU branches: run on a GPU node (pytest -m gpu) -------------------------
@pytest.mark.gpu
def test_combine_kernel_is_compiled_by_cupy_on_a_gpu(monkeypatch, capsys) -> None:
    """On a GPU the student's strings go through cupy.ElementwiseKernel and CuPy's result is the
    one compared: the model answer passes saying so, a wrong formula fails with CuPy's value."""
    from demos import hardware

    if not hardware.cupy_available():
        pytest.skip(hardware.cupy_status()[1])
    import cupy

    built = []
    original = cupy.ElementwiseKernel

    def counted(*args, **kwargs):
        built.append(args[2])
        return original(*args, **kwargs)

    monkeypatch.setattr(cupy, "ElementwiseKernel", counted)
    spec = notebook_cell(answer_source("combine_kernel"), "combine_kernel")
    assert passes("combine_kernel", spec) is True
    assert "compiled by CuPy and run on the GPU" in capsys.readouterr().out
    assert built and set(built) == {spec["operation"]}
    wrong = {**spec, "operation": "d = x2_i - 2 * xy + x2_i"}
    assert passes("combine_kernel", wrong) is False
    assert "your kernel gives 2, expected 1" in capsys.readouterr().out
    assert built[-1] == wrong["operation"]


@pytest.mark.gpu
def test_distance_on_device_runs_a_shape_only_a_gpu_gets(capsys) -> None:
    """On a GPU the check adds a 1000 x 3001 output: the model answer passes; a grid capped at 64
    blocks of columns, right for every simulator shape, leaves columns unwritten there."""
    from demos.checks._harness import on_gpu

    assert on_gpu(), "a GPU, but Numba runs the simulator"
    model = answer_source("distance_on_device")
    assert passes("distance_on_device", notebook_cell(model, "distance_on_device")) is True
    capsys.readouterr()
    full = "grid = (math.ceil(y.shape[0] / BLOCK[0]), "
    assert full in model
    capped = model.replace(full, "grid = (min(math.ceil(y.shape[0] / BLOCK[0]), 64), ")
    assert passes("distance_on_device", notebook_cell(capped, "distance_on_device")) is False
    said = capsys.readouterr().out
    assert "1000 x 3001 output" in said and "unwritten" in said, said


@pytest.mark.gpu
def test_batch_trial_trains_on_the_gpu_and_allows_its_larger_batches(capsys) -> None:
    """On a GPU the check trains on the GPU and accepts batches up to 16,384 (512 on a CPU): the
    model answer passes naming the GPU, a batch past the GPU's limit is refused."""
    pytest.importorskip("keras")
    from demos.checks import cnn_checks

    model = notebook_cell(answer_source("batch_trial"), "batch_trial")
    assert passes("batch_trial", model) is True
    assert "on this machine's GPU" in capsys.readouterr().out
    too_large = {"batch_size": cnn_checks.LARGEST_BATCH["gpu"] + 1, "predicted_speedup": 4}
    assert passes("batch_trial", too_large) is False
    assert "from 1 to 16384 on the gpu" in capsys.readouterr().out
