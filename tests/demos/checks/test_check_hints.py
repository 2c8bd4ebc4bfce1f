"""The chapters' checks name the mistake that was made (issue 37, item 1: right verdict,
wrong hint).

Why: a check that fails a kernel for the right reason but blames the wrong part
sends the student to fix what was right. A register kept past its iteration was
blamed on the block combine, a load buffer put in shared memory was told about
``shared[warp]``, ``y`` uploaded twice was blamed on the output, and a tiled
matmul with bank conflicts or uncoalesced tile loads passed without a word
although the chapter teaches both. Each test is an answer as a student would
write it, run through the check the chapter calls, with a variant of its own.
"""

from __future__ import annotations

import demos.patterns  # noqa: F401  (the simulator's own shared buffers, shuffles and locals)
from demos.checks import answer_source, passes
from helpers import notebook_cell

WIDE_LOOP = (
    "            got[k] = values[i] if i < n else float32(0)  # the last group may pass the end\n"
)


def _verdict(name: str, source: str, capsys) -> tuple[bool, str]:
    ok = passes(name, notebook_cell(source, name))
    return ok, capsys.readouterr().out


def test_wide_sum_stale_register_is_named_not_the_combine(capsys) -> None:
    """`if i < n: got[k] = values[i]` keeps last iteration's value in got[k] for the tail."""
    model = answer_source("wide_sum")
    source = model.replace(WIDE_LOOP, "            if i < n:\n                got[k] = values[i]\n")
    ok, said = _verdict("wide_sum", source, capsys)
    assert not ok, said
    assert "read once but added 2 times" in said and "got[k] = 0 where i >= n" in said, said
    assert "shared[warp]" not in said, said


def test_wide_sum_stale_register_with_two_loads_is_named(capsys) -> None:
    """Variant: the same with LOADS = 2 and the guard written as `if i >= n: continue`."""
    model = answer_source("wide_sum").replace("LOADS = 4 ", "LOADS = 2 ")
    source = model.replace(
        WIDE_LOOP,
        "            if i >= n:\n                continue\n            got[k] = values[i]\n",
    )
    ok, said = _verdict("wide_sum", source, capsys)
    assert not ok and "read once but added" in said, said


def test_wide_sum_load_buffer_in_shared_memory_is_named(capsys) -> None:
    model = answer_source("wide_sum")
    source = model.replace(
        "got = cuda.local.array(LOADS, float32)", "got = cuda.shared.array(LOADS, float32)"
    )
    ok, said = _verdict("wide_sum", source, capsys)
    assert not ok, said
    assert "got is a cuda.shared.array" in said and "cuda.local.array(LOADS" in said, said
    assert "only lane 0 of each warp stores" not in said, said


def test_wide_sum_load_buffer_of_another_name_in_shared_memory_is_named(capsys) -> None:
    """Variant: the buffer called `loaded`, made two-dimensional per warp by mistake."""
    model = answer_source("wide_sum")
    source = model.replace(
        "got = cuda.local.array(LOADS, float32)", "loaded = cuda.shared.array(LOADS, float32)"
    ).replace("got[k]", "loaded[k]")
    ok, said = _verdict("wide_sum", source, capsys)
    assert not ok and "loaded is a cuda.shared.array" in said, said


def test_wide_sum_racy_warp_slot_still_gets_the_warp_advice(capsys) -> None:
    """The old advice stays where it belongs: every lane writing shared[warp]."""
    model = answer_source("wide_sum")
    source = model.replace(
        "    if lane == 0:\n        shared[warp] = acc\n", "    shared[warp] = acc\n"
    )
    ok, said = _verdict("wide_sum", source, capsys)
    assert not ok and "shared[warp]" in said and "is a cuda.shared.array" not in said, said


DEVICE_UPLOAD = "    d_x, d_y = cuda.to_device(x), cuda.to_device(y)  # host -> GPU, once each\n"


def test_distance_on_device_y_uploaded_twice_is_named(capsys) -> None:
    model = answer_source("distance_on_device")
    assert DEVICE_UPLOAD in model
    source = model.replace(
        DEVICE_UPLOAD, DEVICE_UPLOAD + "    d_y = cuda.to_device(y)  # once more\n"
    )
    ok, said = _verdict("distance_on_device", source, capsys)
    assert not ok and "y 2 times" in said and "the output" not in said, said


def test_distance_on_device_x_uploaded_for_each_argument_is_named(capsys) -> None:
    """Variant: x == y in a self-distance habit: to_device(x) passed twice."""
    source = answer_source("distance_on_device").replace(
        "kernel[grid, BLOCK](d_x, d_y, d_out)",
        "kernel[grid, BLOCK](cuda.to_device(x), d_y, d_out)",
    )
    ok, said = _verdict("distance_on_device", source, capsys)
    assert not ok and "x 2 times" in said, said


MATMUL = answer_source("tiled_matmul")
A_LOAD = "            a_tile[ty, tx] = a[i, start + tx]\n"
A_ZERO = "            a_tile[ty, tx] = 0\n"
assert A_LOAD in MATMUL and A_ZERO in MATMUL


def test_tiled_matmul_with_bank_conflicts_is_accepted_with_a_note(capsys) -> None:
    """a_tile stored transposed ([tx, ty]) and read so: right, 8-way conflicts on the stores."""
    source = (
        MATMUL.replace(A_LOAD, "            a_tile[tx, ty] = a[i, start + tx]\n")
        .replace(A_ZERO, "            a_tile[tx, ty] = 0\n")
        .replace("a_tile[ty, k]", "a_tile[k, ty]")
    )
    ok, said = _verdict("tiled_matmul", source, capsys)
    assert ok, said
    assert "a_tile is written with up to 8-way bank conflicts" in said, said


def test_tiled_matmul_with_uncoalesced_tile_loads_is_accepted_with_a_note(capsys) -> None:
    """The b tile loaded down a column: tx picks the row of b, ty the column."""
    source = MATMUL.replace(
        "        if start + ty < b.shape[0] and j < b.shape[1]:\n"
        "            b_tile[ty, tx] = b[start + ty, j]\n",
        "        jj = cuda.blockIdx.x * TILE + ty\n"
        "        if start + tx < b.shape[0] and jj < b.shape[1]:\n"
        "            b_tile[tx, ty] = b[start + tx, jj]\n",
    ).replace("            b_tile[ty, tx] = 0\n", "            b_tile[tx, ty] = 0\n")
    assert source.count("jj") == 3
    ok, said = _verdict("tiled_matmul", source, capsys)
    assert ok, said
    assert "the loads of b" in said and "not coalesced" in said, said


def test_tiled_matmul_model_answers_get_no_note(capsys) -> None:
    """Variant, the right side: the model answer, and with TILE = 8, are told nothing of the
    kind."""
    for source in (MATMUL, MATMUL.replace("TILE = 16", "TILE = 8")):
        ok, said = _verdict("tiled_matmul", source, capsys)
        assert ok and "slower than it needs to be" not in said, said
