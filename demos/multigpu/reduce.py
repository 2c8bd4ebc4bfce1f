"""Summing a large vector on several GPUs, and when not to.

Each GPU reduces its resident chunk to one value, writes it into a small array
on GPU 0, and GPU 0 adds them. The arithmetic is trivial: the time goes into
reading memory and, for small vectors, into *launching* the work. Issued from
Python, every extra GPU costs some 15 us of host time per call; captured once
as a CUDA graph that spans all devices, one launch starts them all. With the
graph, 4 H200s sum 30 M float32 values twice as fast as one GPU; below about
7.5 M values per GPU, one GPU still wins, and :func:`auto_device_count` picks
the count from the work size (the crossover measured by the benchmark).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import numpy as np

from demos import hardware
from demos.benchmarks.record import per_call_seconds
from demos.multigpu.splitting import device_count_for, split_ranges, sum_split

# Elements per GPU below which adding a GPU does not pay, measured on 4x H200
# with the graph launch (demos/results/multigpu_h200.json): at 10 M values one
# GPU takes 11 us and two or four 17 us; at 30 M one GPU 34 us, four 16 us.
DEFAULT_CROSSOVER = 7_500_000


def auto_device_count(
    n: int, available: int | None = None, crossover: int = DEFAULT_CROSSOVER
) -> int:
    available = hardware.gpu_count() if available is None else available
    return device_count_for(n, max(available, 1), crossover)


_KERNELS = r"""
// Sum of a vector in two steps: many blocks each reduce a grid-stride share of
// the input to one partial sum; one block then adds the partials.
__device__ float vector_sum(float4 v) { return (v.x + v.y) + (v.z + v.w); }
__device__ double vector_sum(double2 v) { return v.x + v.y; }

// Sum of v over the block; the result is valid in thread 0.
template <typename T>
__device__ T block_sum(T v) {
    __shared__ T warp_sums[32];
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    v = (threadIdx.x < (blockDim.x + 31) / 32) ? warp_sums[lane] : T(0);
    if (warp == 0)
        for (int offset = 16; offset > 0; offset >>= 1)
            v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// One partial sum per block. Loads are 16-byte vectors (float4 / double2): the
// sum is memory-bound, and wide loads keep enough bytes in flight.
template <typename T, typename V>
__global__ void partial_sums(const T* __restrict__ x, long long n, T* __restrict__ partials) {
    const long long per_vector = sizeof(V) / sizeof(T);
    const long long n_vectors = n / per_vector;
    const long long stride = (long long)gridDim.x * blockDim.x;
    const long long first = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const V* xv = reinterpret_cast<const V*>(x);
    T acc = T(0);
    for (long long i = first; i < n_vectors; i += stride) acc += vector_sum(xv[i]);
    for (long long i = n_vectors * per_vector + first; i < n; i += stride) acc += x[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0) partials[blockIdx.x] = acc;
}

// A short vector (the partial sums) added by one block.
template <typename T>
__global__ void small_sum(const T* __restrict__ x, int n, T* __restrict__ out) {
    T acc = T(0);
    for (int i = threadIdx.x; i < n; i += blockDim.x) acc += x[i];
    acc = block_sum(acc);
    if (threadIdx.x == 0) *out = acc;
}
"""
_NAMES = {
    "float32": ("partial_sums<float, float4>", "small_sum<float>"),
    "float64": ("partial_sums<double, double2>", "small_sum<double>"),
}
BLOCK = 256  # threads per block of the partial sums


def blocks_per_multiprocessor(attributes: Mapping[str, int], block: int = BLOCK) -> int:
    """Blocks of *block* threads that one multiprocessor of this GPU keeps resident at once.

    The sum is memory-bound, so it wants every thread a multiprocessor can hold
    (8 blocks of 256 on an H100 or H200, which hold 2,048 threads each) and no
    more: a block beyond that waits for a second wave. *attributes* are CuPy's
    ``Device.attributes`` (CUDA's per-device limits), so the grid follows the
    GPU the code runs on instead of the one it was tuned on.
    """
    threads = int(attributes["MaxThreadsPerMultiProcessor"])
    most = int(attributes.get("MaxBlocksPerMultiprocessor", threads // 32))
    if threads < block or block < 1:
        raise ValueError(f"a multiprocessor of {threads} threads holds no block of {block}")
    return min(threads // block, most)


@functools.cache
def _kernels(device: int, dtype_name: str):
    """(partial_sums, small_sum) for *dtype_name*, loaded on *device*.

    One module per device: a compiled module belongs to the device it was loaded on.
    """
    import cupy as cp

    with cp.cuda.Device(device):
        module = cp.RawModule(
            code=_KERNELS, options=("--std=c++17",), name_expressions=_NAMES[dtype_name]
        )
        return tuple(module.get_function(name) for name in _NAMES[dtype_name])


class SplitSum:
    """Resident chunks of a vector on ``n_gpus`` devices; :meth:`run` returns the sum.

    Per call, each GPU reduces its chunk to one value, the values are copied to
    GPU 0 and added there. The work can be issued in two ways, with the same
    kernels:

    * *eagerly*: Python launches every kernel and copy, device after device.
      Each device then costs tens of microseconds of host time, and the last
      GPU starts that much later than the first.
    * as one *CUDA graph* spanning all devices, captured once: one launch
      starts every GPU's work, with the dependencies (fork from GPU 0, join
      back to it) recorded in the graph. This is the default; where capturing
      fails (an old driver, say), :attr:`graph_error` says why and the work is
      issued eagerly.
    """

    def __init__(self, vector: np.ndarray, n_gpus: int, use_graph: bool = True):
        cp = hardware.require_cupy("the multi-GPU sum")
        if n_gpus < 1 or n_gpus > cp.cuda.runtime.getDeviceCount():
            raise ValueError(
                f"n_gpus={n_gpus}, but {cp.cuda.runtime.getDeviceCount()} GPU(s) exist"
            )
        if vector.ndim != 1:
            raise ValueError(f"expected a 1-D vector, got shape {vector.shape}")
        if vector.dtype.name not in _NAMES:
            raise TypeError(f"expected a float32 or float64 vector, got {vector.dtype}")
        chunks = []
        for dev, part in enumerate(split_ranges(vector.shape[0], n_gpus)):
            with cp.cuda.Device(dev):
                chunks.append(cp.asarray(vector[part]))
        self._setup(cp, chunks, use_graph)

    @classmethod
    def filled(cls, n: int, n_gpus: int, seed: int = 0, use_graph: bool = True) -> SplitSum:
        """Random float32 data made on the GPUs directly (a 3 GB vector need not cross PCIe)."""
        cp = hardware.require_cupy("the multi-GPU sum")
        chunks = []
        for dev, part in enumerate(split_ranges(n, n_gpus)):
            with cp.cuda.Device(dev):
                rng = cp.random.default_rng(seed + dev)
                chunks.append(rng.random(part.stop - part.start, dtype=cp.float32))
        self = cls.__new__(cls)
        self._setup(cp, chunks, use_graph)
        return self

    def _setup(self, cp, chunks: list, use_graph: bool) -> None:
        """Allocate every buffer, stream and event once: a call allocates nothing."""
        self.cp, self.chunks = cp, chunks
        dtype = chunks[0].dtype
        self.streams, self.partials, self.results, self.joins, self.kernels = [], [], [], [], []
        for dev, chunk in enumerate(chunks):
            with cp.cuda.Device(dev):
                limits = cp.cuda.Device(dev).attributes
                resident = blocks_per_multiprocessor(limits) * limits["MultiProcessorCount"]
                blocks = max(1, min(resident, -(-chunk.size // BLOCK)))
                self.streams.append(cp.cuda.Stream(non_blocking=True))
                self.partials.append(cp.empty(blocks, dtype))
                self.results.append(cp.empty(1, dtype))
                self.joins.append(cp.cuda.Event(disable_timing=True))
                self.kernels.append(_kernels(dev, dtype.name))
        with cp.cuda.Device(0):
            self.gathered = cp.empty(len(chunks), dtype)
            self.total = cp.empty((), dtype)
            self.fork = cp.cuda.Event(disable_timing=True)
        # Where GPUs can reach GPU 0's memory (NVLink or PCIe peer access), each
        # writes its partial sum straight into `gathered`: no copy to issue, and
        # a graph of kernels and events alone, which CUDA can capture across devices.
        self.peer_write = all(
            cp.cuda.runtime.deviceCanAccessPeer(dev, 0) for dev in range(1, len(chunks))
        )
        if self.peer_write:
            for dev in range(1, len(chunks)):
                with cp.cuda.Device(dev):
                    try:
                        cp.cuda.runtime.deviceEnablePeerAccess(0)
                    except cp.cuda.runtime.CUDARuntimeError as exc:
                        if "PeerAccessAlreadyEnabled" not in str(exc):
                            raise
        self._enqueue()  # once eagerly: loads the kernels on every device before any capture
        self.synchronize()
        self.graph, self.graph_error = None, None
        if use_graph:
            try:
                self.graph = self._capture()
            except Exception as exc:  # capture is an optimisation: fall back, say why
                self.graph_error = f"{type(exc).__name__}: {exc}"
                self.synchronize()

    def _enqueue(self) -> None:
        """Issue one sum on every device's stream, ordered after the previous call on GPU 0."""
        cp = self.cp
        n = len(self.chunks)
        itemsize = self.gathered.itemsize
        with cp.cuda.Device(0):
            # the fork: no device may overwrite `gathered` before GPU 0 has read it
            self.fork.record(self.streams[0])
        for dev, chunk in enumerate(self.chunks):
            partial_sums, small_sum = self.kernels[dev]
            stream, partials = self.streams[dev], self.partials[dev]
            with cp.cuda.Device(dev), stream:
                if dev:
                    stream.wait_event(self.fork)
                partial_sums((partials.size,), (BLOCK,), (chunk, np.int64(chunk.size), partials))
                if n == 1:
                    small_sum((1,), (1024,), (partials, np.int32(partials.size), self.total))
                    continue
                slot = self.gathered.data.ptr + dev * itemsize  # on GPU 0
                if self.peer_write or dev == 0:
                    small_sum((1,), (1024,), (partials, np.int32(partials.size), np.uint64(slot)))
                else:
                    small_sum((1,), (1024,), (partials, np.int32(partials.size), self.results[dev]))
                    cp.cuda.runtime.memcpyPeerAsync(
                        slot, 0, self.results[dev].data.ptr, dev, itemsize, stream.ptr
                    )
                if dev:
                    self.joins[dev].record(stream)
        if n > 1:
            with cp.cuda.Device(0), self.streams[0]:
                for dev in range(1, n):  # the join: GPU 0 waits for every device's copy
                    self.streams[0].wait_event(self.joins[dev])
                self.kernels[0][1]((1,), (1024,), (self.gathered, np.int32(n), self.total))

    def _capture(self):
        """Record :meth:`_enqueue` on all devices as one CUDA graph."""
        stream0 = self.streams[0]
        with self.cp.cuda.Device(0):
            stream0.begin_capture()
            try:
                self._enqueue()
            finally:
                graph = stream0.end_capture()
        return graph

    def launch(self, use_graph: bool | None = None) -> None:
        """Queue one sum on every GPU and return at once (as a graph where there is one)."""
        if self.graph is not None and use_graph is not False:
            with self.cp.cuda.Device(0):
                self.graph.launch(stream=self.streams[0])
        else:
            self._enqueue()

    def synchronize(self) -> None:
        for dev in range(len(self.chunks)):
            self.cp.cuda.Device(dev).synchronize()

    def run(self, use_graph: bool | None = None) -> float:
        self.launch(use_graph)
        self.synchronize()
        with self.cp.cuda.Device(0):
            return float(self.total.get())

    def exact(self) -> float:
        """The float64 sum of the resident data, for checking."""
        total = 0.0
        for dev, chunk in enumerate(self.chunks):
            with self.cp.cuda.Device(dev):
                total += float(chunk.sum(dtype=self.cp.float64).get())
        return total

    def time_per_call(self, repeats: int = 50, use_graph: bool | None = None) -> float:
        """Seconds per sum over *repeats* back-to-back calls (host launch cost included)."""
        self.run(use_graph)
        return per_call_seconds(
            lambda: self.launch(use_graph), self.synchronize, repeats, batches=1
        )


def split_sum(vector: np.ndarray, n_devices: int | None = None) -> float:
    """Sum of *vector* on the auto-chosen (or given) number of GPUs; NumPy partial sums without."""
    n_devices = auto_device_count(vector.shape[0]) if n_devices is None else n_devices
    if not hardware.cupy_available():
        return float(sum_split(vector, n_devices))
    return SplitSum(vector, n_devices).run()
