"""The kernel_patterns assignment's model kernels under the reports' race and barrier fields.

The assignment's hidden tests may assert ``racy_shared_writes == 0``,
``racy_shared_reads == 0``, ``uninitialised_shared_reads == 0`` and
``blocks_with_uneven_barriers == 0`` (see :func:`demos.patterns.checks.synchronisation`):
a right submission must pass them, so the model answers here must. Instructors only
(it reads the solutions); skipped when the solution cells are not the ones it knows.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import demos.patterns  # noqa: F401  (adds warp shuffles to the simulator)
from demos.patterns import checks

ROOT = Path(__file__).resolve().parents[1]


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
    values, weights = checks.weighted_measurements(
        rng, 400, int(found["N_BINS"]), float(found["LOW"]), float(found["WIDTH"])
    )
    hist = checks.weighted_histogram_report(
        found["histogram_kernel"], values, weights, int(found["N_BINS"]), 3, block
    )
    x = (rng.normal(size=600) - 10).astype(np.float32)
    tree = checks.block_max_report(found["block_max_kernel"], x, 3, block)
    np.testing.assert_array_equal(tree["maxima"], checks.expected_block_maxima(x, 3, block))
    for report in (hist, tree):
        assert report["racy_shared_writes"] == report["racy_shared_reads"] == 0
        assert report["uninitialised_shared_reads"] == 0
        assert report["blocks_with_uneven_barriers"] == 0
        assert report["fewest_barriers_per_thread"] == report["most_barriers_per_thread"]
    assert tree["fewest_barriers_per_thread"] == math.log2(block) + 1
