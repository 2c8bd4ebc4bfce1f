"""The kernel checker fuzzed: a kernel that uses anything outside the allow-list is refused.

Hypothesis writes kernels from a small grammar of CUDA Python (the statements
and expressions students write) into which it mixes hostile pieces: names
and attribute paths that lead out of a kernel (``numba.core.config.os``,
dunders, ``open``), constructs that run code or hide it (lambdas,
comprehensions, f-strings, star-arguments, walrus, imports) and the places
they hid before (keyword arguments of a ``raise``). The property: any kernel
holding a hostile piece, wherever it sits in the tree, is refused; the same
kernel without it is accepted, so the grammar's honest part stays honest.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.verdicts.kernel_source import NotAKernel, kernel_definition

#: Expressions a kernel may use (x, out are arrays; i, j ints; N a given constant).
HONEST_ATOMS = [
    "i",
    "j",
    "N",
    "1",
    "2.5",
    "x[i]",
    "out.shape[0]",
    "x.size",
    "cuda.threadIdx.x",
    "cuda.blockIdx.y",
    "numba.cuda.blockDim.x",
    "cuda.grid(1)",
    "math.sqrt(2.0)",
    "numba.float32(1)",
    "np.float64(0)",
    "float32(3)",
    "min(i, j)",
    "sq(1.0)",
    "cuda.shared.array(32, numba.float32)",
    "cuda.local.array(4, np.int32)",
]
#: Pieces that must never reach the runner, wherever they are.
HOSTILE_ATOMS = [
    "numba.core.config.os",
    "cuda.sys",
    "cuda.simulator",
    "math.__dict__",
    "x.__class__",
    "x._item",
    "x.ctypes",
    "x.tofile('/tmp/f')",
    "np.save",
    "numba.njit",
    "open('/etc/passwd')",
    "__import__('os')",
    "getattr(x, 'shape')",
    "globals()",
    "eval('1')",
    "print(1)",
    "(lambda: 0)()",
    "[k for k in range(2)]",
    "{k: 0 for k in range(2)}",
    "f'{i}'",
    "(k := 1)",
    "min(*x)",
    "min(**N)",
    "range(1, key=numba.core)",
    "sq.__globals__",
    "type(x)",
    "SystemExit",
]


@st.composite
def expressions(draw: st.DrawFn, hostile: list[str], depth: int = 0) -> str:
    """An expression that may hold *hostile* pieces (each drawn piece is recorded there)."""
    if depth > 2 or draw(st.booleans()):
        if draw(st.integers(0, 9)) == 0:
            piece = draw(st.sampled_from(HOSTILE_ATOMS))
            hostile.append(piece)
            return piece
        return draw(st.sampled_from(HONEST_ATOMS))
    shape = draw(st.integers(0, 5))
    left = draw(expressions(hostile, depth + 1))
    if shape == 3:
        return f"x[int({left})]"
    if shape == 4:
        return f"(not {left})"
    right = draw(expressions(hostile, depth + 1))  # drawn only where it is used
    if shape == 0:
        return f"({left} + {right})"
    if shape == 1:
        return f"({left} if i < N else {right})"
    if shape == 2:
        return f"max({left}, {right})"
    return f"({left} < {right} and i > 0)"


@st.composite
def statements(draw: st.DrawFn, hostile: list[str], indent: str = "    ", depth: int = 0) -> str:
    kind = draw(st.integers(0, 7 if depth < 2 else 4))
    if kind == 2:
        return f"{indent}cuda.syncthreads()\n"
    if kind == 3 and draw(st.integers(0, 3)) != 0:
        return f'{indent}raise NotImplementedError("not yet")\n'
    if kind >= 5:
        inner = draw(statements(hostile, indent + "    ", depth + 1))
        if kind == 5:
            return f"{indent}for k1 in range(N):\n{inner}"
        if kind == 6:
            return f"{indent}while i < 0:\n{inner}"
        return f"{indent}if i < N:\n{inner}{indent}else:\n{indent}    pass\n"
    value = draw(expressions(hostile))  # drawn only where it is used
    if kind == 0:
        return f"{indent}k0 = {value}\n"
    if kind == 1:
        return f"{indent}out[i] += {value}\n"
    if kind == 3:
        hostile.append("raise with keywords")
        return f'{indent}raise ValueError("no", note={value})\n'
    return f"{indent}if {value}:\n{indent}    out[0] = 1\n"


DEVICE = "@cuda.jit(device=True)\ndef sq(v):\n    return v * v\n"


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_any_hostile_piece_anywhere_is_refused(data: st.DataObject) -> None:
    hostile: list[str] = []
    body = "".join(data.draw(statements(hostile)) for _ in range(data.draw(st.integers(1, 4))))
    kernel = "@cuda.jit\ndef k(x, out):\n    i = cuda.grid(1)\n    j = 0\n" + body
    if hostile:
        with pytest.raises(NotAKernel):
            kernel_definition("k", [DEVICE, kernel], ["N = 4"])
    else:
        checked = kernel_definition("k", [DEVICE, kernel], ["N = 4"])
        assert list(checked.functions)[-1] == "k"


@pytest.mark.parametrize(
    "body",
    [
        "    raise ValueError(note=numba.core.config.os)\n",  # keywords of a raise were skipped
        '    raise ValueError("x", note=open("/etc/passwd"))\n',
        "    math = x\n    math.tofile('/tmp/f')\n",  # a module name rebound to an array
        "    for cuda in range(2):\n        pass\n",
        "    numba.cuda\n",  # a prefix alone
    ],
)
def test_the_holes_that_were_found_stay_closed(body: str) -> None:
    with pytest.raises(NotAKernel):
        kernel_definition("k", ["@cuda.jit\ndef k(x, out):\n" + body])


def test_an_argument_may_not_hide_a_module() -> None:
    with pytest.raises(NotAKernel, match="hides"):
        kernel_definition("k", ["@cuda.jit\ndef k(math, out):\n    math.tofile('/tmp/f')\n"])
