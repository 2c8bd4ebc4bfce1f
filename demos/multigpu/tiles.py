"""Tile parallelism for images: split a big image into tiles with halos.

A 3x3 stencil (here a blur) needs each pixel's neighbours, so a tile cannot be
processed alone: each tile is cut with a one-pixel *halo* of its neighbours'
rows/columns, processed on its own device, and only its interior is kept. The
stitched result is identical to processing the whole image at once. Devices are
GPUs (CuPy) when available, else NumPy does every tile.
"""

from __future__ import annotations

import numpy as np

from demos import hardware
from demos.multigpu.splitting import split_ranges

HALO = 1  # a 3x3 stencil reads one pixel beyond each side


def blur(image, xp=np):
    """3x3 box blur with edge replication; works on NumPy or CuPy arrays."""
    padded = xp.pad(image, HALO, mode="edge")
    h, w = image.shape
    out = xp.zeros_like(image)
    for dy in range(3):
        for dx in range(3):
            out += padded[dy : dy + h, dx : dx + w]
    return out / 9


def blur_tiled(
    image: np.ndarray, grid: tuple[int, int] = (2, 2), n_devices: int | None = None
) -> np.ndarray:
    """The same blur, tile by tile with halos, tile k on device ``k % n_devices``."""
    if image.ndim != 2:
        raise ValueError(f"expected a 2-D image, got shape {image.shape}")
    gpu = hardware.cupy_available()
    if gpu:
        import cupy as cp
    n_devices = n_devices or (hardware.gpu_count() if gpu else 1)
    # replicate the edge once, globally, so every tile sees the same neighbours as the whole image
    padded = np.pad(image, HALO, mode="edge")
    out = np.empty_like(image)
    tiles = [
        (r, c)
        for r in split_ranges(image.shape[0], grid[0])
        for c in split_ranges(image.shape[1], grid[1])
    ]
    pending = []
    for k, (rows, cols) in enumerate(tiles):
        # the tile plus its halo, in padded coordinates
        with_halo = padded[rows.start : rows.stop + 2 * HALO, cols.start : cols.stop + 2 * HALO]
        if gpu:
            with cp.cuda.Device(k % n_devices):
                pending.append((rows, cols, _interior_blur(cp.asarray(with_halo), cp)))
        else:
            pending.append((rows, cols, _interior_blur(with_halo, np)))
    for rows, cols, tile in pending:
        out[rows, cols] = tile.get() if gpu else tile
    return out


def _interior_blur(with_halo, xp):
    """Blur the interior of a tile whose halo is already in place."""
    h, w = with_halo.shape[0] - 2 * HALO, with_halo.shape[1] - 2 * HALO
    out = xp.zeros((h, w), dtype=with_halo.dtype)
    for dy in range(3):
        for dx in range(3):
            out += with_halo[dy : dy + h, dx : dx + w]
    return out / 9
