from numba import cuda, int32

SCAN_BLOCK = 64  # threads per block, and elements each block scans: a power of two


@cuda.jit
def block_scan(values, out, totals):
    s = cuda.shared.array(SCAN_BLOCK, int32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * SCAN_BLOCK + t
    own = values[i] if i < values.shape[0] else 0  # 0 past the end changes no sum
    s[t] = own
    cuda.syncthreads()
    d = 1
    while d < SCAN_BLOCK:  # up-sweep: partial sums of ever larger subtrees
        if (t + 1) % (2 * d) == 0:
            s[t] += s[t - d]
        cuda.syncthreads()  # every thread, also those that added nothing
        d *= 2
    if t == SCAN_BLOCK - 1:
        totals[cuda.blockIdx.x] = s[t]  # the block's sum, before the root is cleared
        s[t] = 0
    cuda.syncthreads()
    d = SCAN_BLOCK // 2
    while d > 0:  # down-sweep: each left subtree passes its prefix on to the right
        if (t + 1) % (2 * d) == 0:
            left = s[t - d]
            s[t - d] = s[t]
            s[t] += left
        cuda.syncthreads()
        d //= 2
    if i < values.shape[0]:
        out[i] = s[t] + own  # exclusive prefix + own value = inclusive
