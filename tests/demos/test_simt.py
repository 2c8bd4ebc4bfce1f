"""demos.simt: the loop and the one-thread-per-element kernel of chapter 2 agree with NumPy.

Runs on the GPU where there is one, else in the CUDA simulator (tiny sizes).
"""

from __future__ import annotations

import numpy as np
import pytest

from demos import simt


@pytest.mark.parametrize("n, threads_per_block", [(1, 32), (37, 8), (100, 32), (64, 64)])
def test_kernel_matches_loop_and_numpy(
    rng: np.random.Generator, n: int, threads_per_block: int
) -> None:
    source = rng.random(n)
    start = rng.random(n)
    by_loop, by_kernel = start.copy(), start.copy()
    simt.add_to_loop(source, by_loop)
    simt.add_to(source, by_kernel, threads_per_block=threads_per_block)
    np.testing.assert_allclose(by_loop, start + source)
    np.testing.assert_allclose(by_kernel, start + source)


def test_threads_past_the_end_write_nothing() -> None:
    # 10 elements, blocks of 4: the last block has 2 idle threads, which must not write.
    who = simt.thread_coordinates(10, 4)
    np.testing.assert_array_equal(who["global_index"], np.arange(10))
    np.testing.assert_array_equal(who["block"], np.arange(10) // 4)
    np.testing.assert_array_equal(who["thread"], np.arange(10) % 4)


def test_divergent_kernel_takes_both_branches() -> None:
    values = np.arange(12, dtype=np.float64)
    out = np.zeros_like(values)
    simt.divergent_kernel[2, 8](values, out)
    np.testing.assert_allclose(out, np.where(np.arange(12) % 2 == 0, values * 2.0, values + 100.0))


def test_blocks_for_rounds_up_and_rejects_bad_input() -> None:
    assert [simt.blocks_for(n, 32) for n in (0, 1, 32, 33, 64)] == [0, 1, 1, 2, 2]
    with pytest.raises(ValueError, match="threads_per_block"):
        simt.blocks_for(10, 0)


def test_mismatched_shapes_are_rejected() -> None:
    with pytest.raises(ValueError, match="same shape"):
        simt.add_to_loop(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="1-D"):
        simt.add_to(np.zeros((2, 2)), np.zeros((2, 2)))


def test_launch_figure_shows_every_block_and_greys_idle_threads() -> None:
    import matplotlib

    matplotlib.use("Agg")
    fig = simt.draw_launch(10, 4)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.texts]
    assert [f"block {b}" for b in range(3)] == [t for t in labels if t.startswith("block")]
    assert [str(i) for i in range(10)] == [t for t in labels if t.isdigit()]
    assert labels.count("–") == 2  # the last block's two threads past the end
    matplotlib.pyplot.close(fig)
