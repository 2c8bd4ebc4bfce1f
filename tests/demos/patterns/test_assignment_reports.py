"""The kernel_patterns assignment's model kernels under the reports' race and barrier fields.

The assignment's hidden tests may assert ``racy_shared_writes == 0``,
``racy_shared_reads == 0``, ``uninitialised_shared_reads == 0`` and
``blocks_with_uneven_barriers == 0`` (see :func:`demos.patterns.reports.synchronisation`):
a right submission must pass them, so the model answers here must. Instructors only
(it reads the solutions); skipped when the solution cells are not the ones it knows.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import demos.patterns  # noqa: F401  (adds warp shuffles to the simulator)
from demos.patterns import reports
from helpers import ROOT


def _solution_kernels() -> dict[str, object]:
    """The kernels of the kernel_patterns solution, with the constants of its set-up cell."""
    import json
    import re

    path = ROOT / "solutions" / "kernel_patterns" / "kernel_patterns.ipynb"
    cells = [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
        if c["cell_type"] == "code"
    ]
    namespace: dict[str, object] = {"__name__": "kernel_patterns_solution"}
    exec("import math\nimport numpy as np\nfrom numba import cuda, float32, int32", namespace)  # noqa: S102
    constants = re.findall(r"^[A-Z_]+ = [^\n]+", cells[0] if cells else "", re.MULTILINE)
    exec("\n".join(constants), namespace)  # noqa: S102 - the course's own set-up cell
    for source in cells:
        if source.startswith("@cuda.jit"):
            exec(source, namespace)  # noqa: S102 - the course's own solution cells
    return namespace


def test_the_assignments_model_kernels_have_no_race_and_even_barriers() -> None:
    """What the assignment's hidden tests may assert on a right submission (the model answers):
    no race on shared memory, every thread at every barrier."""
    found = _solution_kernels()
    if not {"histogram_kernel", "block_max_kernel", "BLOCK"} <= found.keys():
        pytest.skip("the kernel_patterns solution cells are not the ones this test knows")
    block, rng = int(found["BLOCK"]), np.random.default_rng(7)
    values, weights = reports.weighted_measurements(
        rng, 400, int(found["N_BINS"]), float(found["LOW"]), float(found["WIDTH"])
    )
    hist = reports.weighted_histogram_report(
        found["histogram_kernel"], values, weights, int(found["N_BINS"]), 3, block
    )
    x = (rng.normal(size=600) - 10).astype(np.float32)
    tree = reports.block_max_report(found["block_max_kernel"], x, 3, block)
    np.testing.assert_array_equal(tree["maxima"], reports.expected_block_maxima(x, 3, block))
    for report in (hist, tree):
        assert report["racy_shared_writes"] == report["racy_shared_reads"] == 0
        assert report["uninitialised_shared_reads"] == 0
        assert report["blocks_with_uneven_barriers"] == 0
        assert report["fewest_barriers_per_thread"] == report["most_barriers_per_thread"]
    assert tree["fewest_barriers_per_thread"] == math.log2(block) + 1


_RACY_WEIGHTED = """
@cuda.jit
def histogram_kernel(values, weights, totals):
    block_totals = cuda.shared.array(16, float32)
    for b in range(cuda.threadIdx.x, 16, cuda.blockDim.x):
        block_totals[b] = float32(0)
    cuda.syncthreads()
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        v = values[i]
        if v >= -2.0 and v < 2.0:
            block_totals[min(int((v + 2.0) / 0.25), 15)] += weights[i]
    cuda.syncthreads()
    for b in range(cuda.threadIdx.x, 16, cuda.blockDim.x):
        cuda.atomic.add(totals, b, block_totals[b])
"""

_UNEVEN_MAX = """
@cuda.jit
def block_max_kernel(values, maxima):
    best = cuda.shared.array(64, float32)
    me = cuda.threadIdx.x
    mine = float32(-math.inf)
    for i in range(cuda.grid(1), values.shape[0], cuda.gridsize(1)):
        mine = max(mine, values[i])
    best[me] = mine
    cuda.syncthreads()
    half = 32
    while half >= 1:
        if me < half:
            best[me] = max(best[me], best[me + half])
            cuda.syncthreads()
        half = half // 2
    if me == 0:
        maxima[cuda.blockIdx.x] = best[0]
"""


# Near-solutions of the assignment: instructors only (this file stays out of the student edition).
def test_the_assignment_reports_see_what_the_simulator_hides() -> None:
    """A weighted histogram that adds with ``+=`` to the shared totals and a block maximum with
    the barrier inside the ``if``: right numbers in the simulator, named by the reports."""
    namespace: dict[str, object] = {"__name__": "student_submission"}
    exec("import math\nfrom numba import cuda, float32", namespace)  # noqa: S102
    exec(_RACY_WEIGHTED + _UNEVEN_MAX, namespace)  # noqa: S102 - test kernels
    rng = np.random.default_rng(9)
    values, weights = reports.weighted_measurements(rng, 300, 16, -2.0, 0.25)
    hist = reports.weighted_histogram_report(
        namespace["histogram_kernel"], values, weights, 16, 2, 64
    )
    expected = np.histogram(values, bins=16, range=(-2.0, 2.0), weights=weights)[0]
    np.testing.assert_allclose(hist["totals"], expected, rtol=1e-4, atol=1e-4)
    assert hist["racy_shared_writes"] > 0 and hist["blocks_with_uneven_barriers"] == 0
    x = (rng.normal(size=500) - 10).astype(np.float32)
    tree = reports.block_max_report(namespace["block_max_kernel"], x, 3, 64)
    np.testing.assert_array_equal(tree["maxima"], reports.expected_block_maxima(x, 3, 64))
    assert tree["blocks_with_uneven_barriers"] == 3 and tree["racy_shared_writes"] == 0
