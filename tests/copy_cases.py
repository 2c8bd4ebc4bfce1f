"""Copied and honest answers for the copy detection tests (course code and classmates).

``HONEST`` holds answers a student might write on their own, each task in
several structures (loops or branches, ``cuda.grid`` or the index by hand,
``while`` or ``for``): none may be flagged, neither as course code nor as a
classmate's. ``COPIES_OF_HISTOGRAM`` are the chapter's model answer
``demos/checks/answers/histogram_shared.py`` edited the ways a copier edits:
all must be flagged. :func:`disguised_heat_step` does the same to the simt
solution's kernel, for a copy between classmates.
"""

from __future__ import annotations

#: Honest answers by task: (name, source).
HONEST: dict[str, list[tuple[str, str]]] = {
    "heat_step": [
        (
            "branches",
            """@cuda.jit
def heat_step(u, r, out):
    i = cuda.grid(1)
    n = u.size
    if i >= n:
        return
    if i == 0:
        left = u[0]
    else:
        left = u[i - 1]
    if i == n - 1:
        right = u[n - 1]
    else:
        right = u[i + 1]
    out[i] = (1 - 2 * r) * u[i] + r * (left + right)
""",
        ),
        (
            "clamped",
            """@cuda.jit
def heat_step(u, r, out):
    idx = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    if idx < u.shape[0]:
        lo = max(idx - 1, 0)
        hi = min(idx + 1, u.shape[0] - 1)
        centre = u[idx]
        out[idx] = centre + r * (u[lo] + u[hi] - 2.0 * centre)
""",
        ),
        (
            "grid-stride",
            """@cuda.jit
def heat_step(u, r, out):
    start, step = cuda.grid(1), cuda.gridsize(1)
    n = len(u)
    for k in range(start, n, step):
        total = 0.0
        total += u[k - 1] if k > 0 else u[k]
        total += u[k + 1] if k + 1 < n else u[k]
        out[k] = u[k] + r * (total - 2 * u[k])
""",
        ),
    ],
    "diffuse": [
        (
            "new-buffer",
            """def diffuse(u, r, steps, threads_per_block=32):
    grid = (u.size + threads_per_block - 1) // threads_per_block
    state = cuda.to_device(np.array(u, copy=True))
    for _ in range(steps):
        result = cuda.device_array_like(state)
        heat_step[grid, threads_per_block](state, r, result)
        state = result
    out = np.empty_like(u)
    state.copy_to_host(out)
    return out
""",
        ),
        (
            "parity",
            """def diffuse(u, r, steps, threads_per_block=32):
    buffers = [cuda.to_device(u), cuda.device_array(u.shape, u.dtype)]
    nblocks = -(-len(u) // threads_per_block)
    for s in range(steps):
        src, dst = buffers[s % 2], buffers[(s + 1) % 2]
        heat_step[nblocks, threads_per_block](src, r, dst)
    return buffers[steps % 2].copy_to_host()
""",
        ),
        (
            "while",
            """def diffuse(u, r, steps, threads_per_block=32):
    size = u.shape[0]
    blocks = size // threads_per_block + (size % threads_per_block > 0)
    d_in = cuda.to_device(u)
    d_out = cuda.device_array_like(d_in)
    step = 0
    while step < steps:
        heat_step[blocks, threads_per_block](d_in, r, d_out)
        d_in, d_out = d_out, d_in
        step += 1
    return d_in.copy_to_host()
""",
        ),
    ],
    "l1_kernel": [
        (
            "while",
            """@cuda.jit
def l1_kernel(a, b, out):
    x, y, z = cuda.grid(3)
    pairs, rows, cols = out.shape
    if z >= pairs or y >= rows or x >= cols:
        return
    s = 0.0
    d = a.shape[2]
    k = 0
    while k < d:
        s += abs(a[z, y, k] - b[z, x, k])
        k += 1
    out[z, y, x] = s
""",
        ),
        (
            "nested-ifs",
            """@cuda.jit
def l1_kernel(a, b, out):
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    p = cuda.blockIdx.z
    if p < out.shape[0]:
        if row < out.shape[1]:
            if col < out.shape[2]:
                dist = 0.0
                for k in range(a.shape[2]):
                    diff = a[p, row, k] - b[p, col, k]
                    if diff < 0:
                        diff = -diff
                    dist += diff
                out[p, row, col] = dist
""",
        ),
    ],
    "histogram_kernel": [
        (
            "thread-per-bin",
            """@cuda.jit
def histogram_kernel(values, weights, totals):
    sums = cuda.shared.array(N_BINS, float32)
    tid = cuda.threadIdx.x
    if tid < N_BINS:
        sums[tid] = 0
    cuda.syncthreads()
    i = cuda.grid(1)
    while i < values.size:
        x = values[i]
        if LOW <= x < HIGH:
            k = int((x - LOW) // WIDTH)
            if k >= N_BINS:
                k = N_BINS - 1
            cuda.atomic.add(sums, k, weights[i])
        i += cuda.gridsize(1)
    cuda.syncthreads()
    if tid < N_BINS and sums[tid] != 0:
        cuda.atomic.add(totals, tid, sums[tid])
""",
        ),
        (
            "continue",
            """@cuda.jit
def histogram_kernel(values, weights, totals):
    local = cuda.shared.array(N_BINS, float32)
    t = cuda.threadIdx.x
    for j in range(t, N_BINS, BLOCK):
        local[j] = float32(0.0)
    cuda.syncthreads()
    n = values.shape[0]
    step = cuda.blockDim.x * cuda.gridDim.x
    pos = cuda.blockIdx.x * cuda.blockDim.x + t
    for i in range(pos, n, step):
        v = values[i]
        w = weights[i]
        if v < LOW or v >= HIGH:
            continue
        bin_index = min(int(math.floor((v - LOW) / WIDTH)), N_BINS - 1)
        cuda.atomic.add(local, bin_index, w)
    cuda.syncthreads()
    if t < N_BINS:
        cuda.atomic.add(totals, t, local[t])
""",
        ),
    ],
    "block_max_kernel": [
        (
            "while-halving",
            """@cuda.jit
def block_max_kernel(values, maxima):
    cache = cuda.shared.array(BLOCK, float32)
    tid = cuda.threadIdx.x
    best = -math.inf
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    while i < values.size:
        if values[i] > best:
            best = values[i]
        i += stride
    cache[tid] = best
    cuda.syncthreads()
    s = cuda.blockDim.x // 2
    while s > 0:
        if tid < s and cache[tid + s] > cache[tid]:
            cache[tid] = cache[tid + s]
        cuda.syncthreads()
        s //= 2
    if tid == 0:
        maxima[cuda.blockIdx.x] = cache[0]
""",
        ),
        (
            "interleaved",
            """@cuda.jit
def block_max_kernel(values, maxima):
    sh = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    n = values.shape[0]
    g = cuda.blockIdx.x * BLOCK + t
    m = values[g] if g < n else float32(-math.inf)
    g += cuda.gridDim.x * BLOCK
    while g < n:
        if values[g] > m:
            m = values[g]
        g += cuda.gridDim.x * BLOCK
    sh[t] = m
    cuda.syncthreads()
    step = 1
    while step < BLOCK:
        if t % (2 * step) == 0:
            sh[t] = max(sh[t], sh[t + step])
        step *= 2
        cuda.syncthreads()
    if t == 0:
        maxima[cuda.blockIdx.x] = sh[0]
""",
        ),
    ],
}

_HISTOGRAM_RENAMED = """@cuda.jit
def my_histogram(data, counts):
    shared_counts = cuda.shared.array(N_BINS, int32)
    tid = cuda.threadIdx.x
    for k in range(tid, N_BINS, cuda.blockDim.x):
        shared_counts[k] = 0
    cuda.syncthreads()
    for j in range(cuda.grid(1), data.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(shared_counts, data[j], 1)
    cuda.syncthreads()
    for k in range(tid, N_BINS, cuda.blockDim.x):
        if shared_counts[k] != 0:
            cuda.atomic.add(counts, k, shared_counts[k])
"""

#: The chapter's histogram answer, disguised: name -> source. Every one is a copy.
COPIES_OF_HISTOGRAM: dict[str, str] = {
    "renamed": _HISTOGRAM_RENAMED,
    "no-op statements": """@cuda.jit
def my_histogram(data, counts):
    shared_counts = cuda.shared.array(N_BINS, int32)
    _unused = 0
    tid = cuda.threadIdx.x
    for k in range(tid, N_BINS, cuda.blockDim.x):
        shared_counts[k] = 0
    pass
    cuda.syncthreads()
    for j in range(cuda.grid(1), data.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(shared_counts, data[j], 1)
    scratch = tid
    cuda.syncthreads()
    for k in range(tid, N_BINS, cuda.blockDim.x):
        if shared_counts[k] != 0:
            cuda.atomic.add(counts, k, shared_counts[k])
""",
    "no-op calls": """@cuda.jit
def my_histogram(data, counts):
    shared_counts = cuda.shared.array(N_BINS, int32)
    tid = cuda.threadIdx.x
    width = len(counts)
    for k in range(tid, N_BINS, cuda.blockDim.x):
        shared_counts[k] = 0
    cuda.syncthreads()
    for j in range(cuda.grid(1), data.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(shared_counts, data[j], 1)
    cuda.syncthreads()
    width = len(data)
    for k in range(tid, N_BINS, cuda.blockDim.x):
        if shared_counts[k] != 0:
            cuda.atomic.add(counts, k, shared_counts[k])
""",
    "reordered": """@cuda.jit
def my_histogram(data, counts):
    tid = cuda.threadIdx.x
    shared_counts = cuda.shared.array(N_BINS, int32)
    for k in range(tid, N_BINS, cuda.blockDim.x):
        shared_counts[k] = 0
    cuda.syncthreads()
    for j in range(cuda.grid(1), data.shape[0], cuda.gridsize(1)):
        cuda.atomic.add(shared_counts, data[j], 1)
    cuda.syncthreads()
    for k in range(tid, N_BINS, cuda.blockDim.x):
        if shared_counts[k] != 0:
            cuda.atomic.add(counts, k, shared_counts[k])
""",
    "comments and layout": '''@cuda.jit
def my_histogram(data, counts):
    """My own histogram: a shared copy per block, then one atomic per bin."""
    # zero this block's counts
    shared_counts = cuda.shared.array(N_BINS,
                                      int32)
    tid = cuda.threadIdx.x;   # my thread
    for k in range(tid, N_BINS, cuda.blockDim.x): shared_counts[k] = 0

    cuda.syncthreads()  # wait for everyone
    for j in range(cuda.grid(1),
                   data.shape[0],
                   cuda.gridsize(1)):
        cuda.atomic.add(shared_counts, data[j], 1)
    cuda.syncthreads()

    # add to the global totals
    for k in range(tid, N_BINS, cuda.blockDim.x):
        if shared_counts[k] != 0:
            cuda.atomic.add(counts, k, shared_counts[k])  # global
''',
}


def disguised_heat_step(solution: str, how: str) -> str:
    """The simt solution's ``heat_step`` cell as a classmate might disguise it."""
    body = (
        solution.replace(" i ", " idx ")
        .replace("[i", "[idx")
        .replace("i <", "idx <")
        .replace("i >", "idx >")
        .replace("last", "end")
        .replace("left", "west")
        .replace("right", "east")
    )
    if how == "renamed":
        return body
    if how == "no-op statements":
        return body.replace("    end = ", "    unused = 0\n    end = ").replace(
            "        out[", "        pass\n        out["
        )
    if how == "reordered":  # the two neighbours, read in the other order
        lines = body.splitlines()
        west = next(n for n, line in enumerate(lines) if "west =" in line)
        lines[west], lines[west + 1] = lines[west + 1], lines[west]
        return "\n".join(lines) + "\n"
    if how == "comments and layout":
        return (
            body.replace("# an insulated end is its own neighbour", "")
            .replace("    end = ", "    # the last point\n\n    end = ")
            .replace(
                "(west - 2 * u[idx] + east)", "(west\n            - 2 * u[idx]\n            + east)"
            )
        )
    raise ValueError(how)


DISGUISES = ["renamed", "no-op statements", "reordered", "comments and layout"]
