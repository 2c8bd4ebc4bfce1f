"""Model (pipeline) parallelism: a two-stage network split across two devices.

Stage 1 (dense + ReLU) lives on device 0, stage 2 (dense) on device 1. The batch
is cut into micro-batches: while device 1 works on micro-batch k, device 0 is
already on k+1, because launches on different GPUs run concurrently. The output
equals running the unsplit model. Without GPUs both stages run in NumPy.
"""

from __future__ import annotations

import numpy as np

from demos import hardware


def make_weights(
    n_in: int, n_hidden: int, n_out: int, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (
        (rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in)).astype(np.float32),
        (rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden)).astype(np.float32),
    )


def forward(x: np.ndarray, w1: np.ndarray, w2: np.ndarray) -> np.ndarray:
    """The unsplit model on one device (NumPy): the reference."""
    return np.maximum(x @ w1, 0) @ w2


def forward_pipelined(
    x: np.ndarray, w1: np.ndarray, w2: np.ndarray, micro_batches: int = 4
) -> np.ndarray:
    """Stage 1 on device 0, stage 2 on device 1 (or NumPy), over *micro_batches* pieces."""
    if x.ndim != 2 or x.shape[1] != w1.shape[0] or w1.shape[1] != w2.shape[0]:
        raise ValueError(f"shapes do not chain: {x.shape} @ {w1.shape} @ {w2.shape}")
    if micro_batches < 1:
        raise ValueError(f"micro_batches must be >= 1, got {micro_batches}")
    pieces = np.array_split(x, micro_batches)
    if not hardware.cupy_available():
        return np.concatenate([forward(p, w1, w2) for p in pieces])
    import cupy as cp

    dev2 = 1 if cp.cuda.runtime.getDeviceCount() > 1 else 0
    with cp.cuda.Device(0):
        w1_d = cp.asarray(w1)
    with cp.cuda.Device(dev2):
        w2_d = cp.asarray(w2)
    outs = []
    for piece in pieces:  # all launches are asynchronous: the stages overlap
        with cp.cuda.Device(0):
            hidden = cp.maximum(cp.asarray(piece) @ w1_d, 0)
            cp.cuda.get_current_stream().synchronize()  # hand-over point between the stages
        with cp.cuda.Device(dev2):
            outs.append(cp.array(hidden, copy=True) @ w2_d)  # copies device 0 -> device dev2
    with cp.cuda.Device(dev2):
        return cp.concatenate(outs).get()
