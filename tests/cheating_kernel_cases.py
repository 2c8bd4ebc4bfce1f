"""The cheating submissions of the kernel assignments (simt, cupy_port, numba_distance).

Each case is the instructor's solution with one change a student might make to
a kernel chapter's assignment, and the score a fair grader gives it, in total and
cell by cell. tests/cheating_cases.py adds the other assignments' cases and grades
them all in one nbgrader batch; see its docstring for the rules every case follows.
"""

from __future__ import annotations

from helpers import ROOT

#: (student, assignment, {grade_id: new source}, expected score). Full marks are 10 everywhere.
KERNEL_CASES = [
    # simt: 2 (reader_blocks) + 4 (heat_step) + 4 (diffuse)
    (
        "simt-course-code",
        "simt",
        {
            "simt-launch": (
                "from demos.simt import blocks_for\n"
                "def diffuse(u, r, steps, threads_per_block=32):\n"
                "    current = cuda.to_device(u)\n"
                "    following = cuda.device_array_like(current)\n"
                "    for _ in range(steps):\n"
                "        heat_step[blocks_for(u.shape[0], threads_per_block), threads_per_block]"
                "(current, r, following)\n"
                "        current, following = following, current\n"
                "    return current.copy_to_host()"
            )
        },
        6,
    ),
    (  # diffuse runs the unguarded kernel too: both kernel parts are lost
        "simt-no-bounds-check",
        "simt",
        {
            "simt-kernel": (
                "@cuda.jit\n"
                "def heat_step(u, r, out):\n"
                "    i = cuda.grid(1)\n"
                "    left = u[i - 1] if i > 0 else u[i]\n"
                "    right = u[i + 1] if i < u.shape[0] - 1 else u[i]\n"
                "    out[i] = u[i] + r * (left - 2 * u[i] + right)"
            )
        },
        2,
    ),
    (  # right values, but one thread walks the whole rod: the partial grid shows it
        "simt-loop-in-kernel",
        "simt",
        {
            "simt-kernel": (
                "@cuda.jit\n"
                "def heat_step(u, r, out):\n"
                "    if cuda.grid(1) == 0:\n"
                "        last = u.shape[0] - 1\n"
                "        for i in range(u.shape[0]):\n"
                "            left = u[i - 1] if i > 0 else u[i]\n"
                "            right = u[i + 1] if i < last else u[i]\n"
                "            out[i] = u[i] + r * (left - 2 * u[i] + right)"
            )
        },
        6,
    ),
    (
        "simt-numpy-launch",
        "simt",
        {
            "simt-launch": (
                "def diffuse(u, r, steps, threads_per_block=32):\n"
                "    for _ in range(steps):\n"
                "        padded = np.pad(u, 1, mode='edge')\n"
                "        u = (u + r * (padded[:-2] - 2 * u + padded[2:])).astype(u.dtype)\n"
                "    return u.copy()"
            )
        },
        6,
    ),
    (  # one device array read and written by the same step: neighbours already overwritten
        "simt-in-place",
        "simt",
        {
            "simt-launch": (
                "def diffuse(u, r, steps, threads_per_block=32):\n"
                "    blocks = (u.shape[0] + threads_per_block - 1) // threads_per_block\n"
                "    current = cuda.to_device(u)\n"
                "    for _ in range(steps):\n"
                "        heat_step[blocks, threads_per_block](current, r, current)\n"
                "    return current.copy_to_host()"
            )
        },
        6,
    ),
    (
        "simt-disables-checks",
        "simt",
        {
            "simt-reader-blocks": (
                "def reader_blocks(element, n, threads_per_block):\n"
                "    return [0]\n"
                "get_ipython().input_transformers_post.append(\n"
                "    lambda lines: [l.replace('assert ', 'assert True or ')"
                ".replace('grading.expect(', 'print(')\n"
                "                   for l in lines])"
            )
        },
        0,  # get_ipython(): the grader's source gate refuses it, a human grades every part
    ),
    # Prints what it is given: the visible calls' arguments may show, hidden ones must not.
    (
        "simt-prints-inputs",
        "simt",
        {
            "simt-reader-blocks": (
                "environment = open('/proc/self/environ', 'rb').read()\n"
                "print('SECRET IN ENVIRONMENT:', b'COURSE_GRADING_SECRET' in environment)\n"
                "print('PROBE SEED:', grading.seed_for('probe'))\n"
                "def reader_blocks(element, n, threads_per_block):\n"
                "    print('ARGS:', element, n, threads_per_block)\n"
                "    return sorted({t // 32 for t in (element - 1, element, element + 1)"
                " if 0 <= t < n})"
            )
        },
        8,
    ),
    # cupy_port: 5 (gaussian_affinities) + 5 (kernel_density)
    (
        "cupy-course-code",
        "cupy_port",
        {
            "cupy-affinities": (
                "from demos.distance.generic import distance_matrix\n"
                "def gaussian_affinities(x, y, scales):\n"
                "    xp = get_array_module(x)\n"
                "    return xp.exp(-0.5 * distance_matrix(x / scales, y / scales))"
            )
        },
        0,
    ),
    (
        "cupy-numpy-only",
        "cupy_port",
        {
            "cupy-affinities": (
                "def gaussian_affinities(x, y, scales):\n"
                "    s = np.asarray(scales)\n"
                "    x, y = np.asarray(x) / s, np.asarray(y) / s\n"
                "    return np.exp(x @ y.T - 0.5 * np.einsum('ij,ij->i', x, x)[:, None]"
                " - 0.5 * np.einsum('ij,ij->i', y, y)[None, :])"
            )
        },
        0,
    ),
    (
        "cupy-numpy-buffer",
        "cupy_port",
        {
            "cupy-density": (
                "def kernel_density(x, y, scales, rows_per_chunk):\n"
                "    out = np.empty(x.shape[0])\n"
                "    for start in range(0, x.shape[0], rows_per_chunk):\n"
                "        band = slice(start, start + rows_per_chunk)\n"
                "        out[band] = gaussian_affinities(x[band], y, scales).mean(axis=1)\n"
                "    return out"
            )
        },
        5,
    ),
    (  # right numbers, but the whole (n, m) matrix at once: the bands are what Part 2 asks for
        "cupy-whole-matrix",
        "cupy_port",
        {
            "cupy-density": (
                "def kernel_density(x, y, scales, rows_per_chunk):\n"
                "    return gaussian_affinities(x, y, scales).mean(axis=1)"
            )
        },
        5,
    ),
    # numba_distance: 5 (l1_kernel) + 5 (grid_for and batched_l1)
    (  # chapter 4's model answer pasted and renamed: another metric, and 2-D where 3-D is asked
        "numba-chapter-kernel",
        "numba_distance",
        {
            "numba-kernel": "@cuda.jit\n"
            + (ROOT / "demos/checks/answers/coalesced_distance_kernel.py")
            .read_text()
            .split("@cuda.jit\n")[1]
            .replace("coalesced_distance_kernel", "l1_kernel")
        },
        0,
    ),
    (
        "numba-course-grid",
        "numba_distance",
        {
            "numba-launch": (
                "from demos.checks.answers.coalesced_grid import coalesced_grid\n"
                "def grid_for(shape, block=(32, 4)):\n"
                "    s, m, n = shape\n"
                "    return (*coalesced_grid(m, n, block), s), (block[0], block[1], 1)\n"
                "def batched_l1(a, b, block=(32, 4)):\n"
                "    out = np.empty((a.shape[0], a.shape[1], b.shape[1]), dtype=a.dtype)\n"
                "    grid, threads = grid_for(out.shape, block)\n"
                "    l1_kernel[grid, threads](a, b, out)\n"
                "    return out"
            )
        },
        5,
    ),
    (  # the patched assert changes no verdict: an empty kernel leaves every distance unset
        "numba-patched-assert",
        "numba_distance",
        {
            "numba-kernel": (
                "np.testing.assert_allclose = lambda *args, **kwargs: None\n"
                "@cuda.jit\n"
                "def l1_kernel(a, b, out):\n"
                "    pass"
            )
        },
        0,
    ),
    (  # rows on x: uncoalesced, and with the grid of Part 2 (columns on x) entries are missed
        "numba-uncoalesced",
        "numba_distance",
        {
            "numba-kernel": (
                "@cuda.jit\n"
                "def l1_kernel(a, b, out):\n"
                "    row, col, pair = cuda.grid(3)\n"
                "    if pair < out.shape[0] and row < out.shape[1] and col < out.shape[2]:\n"
                "        total = 0.0\n"
                "        for k in range(a.shape[2]):\n"
                "            total += abs(a[pair, row, k] - b[pair, col, k])\n"
                "        out[pair, row, col] = total"
            )
        },
        0,
    ),
    (  # right numbers, but the first thread of each row computes the whole row
        "numba-loop-columns",
        "numba_distance",
        {
            "numba-kernel": (
                "@cuda.jit\n"
                "def l1_kernel(a, b, out):\n"
                "    first, row, pair = cuda.grid(3)\n"
                "    if first == 0 and pair < out.shape[0] and row < out.shape[1]:\n"
                "        for col in range(out.shape[2]):\n"
                "            total = 0.0\n"
                "            for k in range(a.shape[2]):\n"
                "                total += abs(a[pair, row, k] - b[pair, col, k])\n"
                "            out[pair, row, col] = total"
            )
        },
        5,
    ),
    (
        "numba-numpy-matrix",
        "numba_distance",
        {
            "numba-launch": (
                "def grid_for(shape, block=(32, 4)):\n"
                "    s, m, n = shape\n"
                "    return (math.ceil(n / block[0]), math.ceil(m / block[1]), s), (*block, 1)\n"
                "def batched_l1(a, b, block=(32, 4)):\n"
                "    return np.abs(a[:, :, None, :] - b[:, None, :, :]).sum(axis=-1)"
            )
        },
        5,
    ),
]
#: Each case's score cell by cell (see tests/cheating_cases.py's CELL_SCORES).
KERNEL_CELL_SCORES = {
    "simt-course-code": {
        "simt-test-reader-blocks": 2,
        "simt-test-kernel": 4,
        "simt-test-launch-size": 0,
    },
    "simt-no-bounds-check": {
        "simt-test-reader-blocks": 2,
        "simt-test-kernel": 0,
        "simt-test-launch-size": 0,
    },
    "simt-loop-in-kernel": {
        "simt-test-reader-blocks": 2,
        "simt-test-kernel": 0,
        "simt-test-launch-size": 4,
    },
    "simt-numpy-launch": {
        "simt-test-reader-blocks": 2,
        "simt-test-kernel": 4,
        "simt-test-launch-size": 0,
    },
    "simt-in-place": {
        "simt-test-reader-blocks": 2,
        "simt-test-kernel": 4,
        "simt-test-launch-size": 0,
    },
    "simt-disables-checks": {
        "simt-test-reader-blocks": 0,
        "simt-test-kernel": 0,
        "simt-test-launch-size": 0,
    },
    "simt-prints-inputs": {
        "simt-test-reader-blocks": 0,
        "simt-test-kernel": 4,
        "simt-test-launch-size": 4,
    },
    "cupy-course-code": {"cupy-test-affinities": 0, "cupy-test-density": 0},
    "cupy-numpy-only": {"cupy-test-affinities": 0, "cupy-test-density": 0},
    "cupy-numpy-buffer": {"cupy-test-affinities": 5, "cupy-test-density": 0},
    "cupy-whole-matrix": {"cupy-test-affinities": 5, "cupy-test-density": 0},
    "numba-chapter-kernel": {"numba-test-kernel": 0, "numba-test-launch": 0},
    "numba-course-grid": {"numba-test-kernel": 5, "numba-test-launch": 0},
    "numba-patched-assert": {"numba-test-kernel": 0, "numba-test-launch": 0},
    "numba-uncoalesced": {"numba-test-kernel": 0, "numba-test-launch": 0},
    "numba-loop-columns": {"numba-test-kernel": 0, "numba-test-launch": 5},
    "numba-numpy-matrix": {"numba-test-kernel": 5, "numba-test-launch": 0},
}
