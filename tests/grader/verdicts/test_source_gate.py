"""grader.verdicts.source_gate: honest answers pass, every way to reach the recorder is refused.

The honest side is the instructor's answers and the visible tests of every
assignment (a student may copy those into a cell of their own), plus the
variants a student plausibly writes (magics, ``xp.__name__``, a helper of
their own called ``_helper``). The hostile side is each attack measured on
the real grader, and the variants of it a student would try next.
"""

from __future__ import annotations

import string

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grader.integration.preprocessors import is_autograder_test, is_given
from grader.verdicts.context import Submission
from grader.verdicts.hidden_tests import judge, split_hidden
from grader.verdicts.source_gate import first_refusal, refusals
from helpers import ROOT

NOTEBOOKS = sorted((ROOT / "solutions").glob("*/*.ipynb"))


def _cells(path, keep) -> list[str]:
    nb = nbformat.read(path, as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code" and keep(c)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.parent.name for p in NOTEBOOKS])
def test_the_instructors_answers_pass(path) -> None:
    answers = _cells(path, lambda c: not is_given(c) and not is_autograder_test(c))
    assert answers and refusals(answers) == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.parent.name for p in NOTEBOOKS])
def test_visible_tests_copied_into_a_students_cell_pass(path) -> None:
    visible = [split_hidden(s)[0] for s in _cells(path, is_autograder_test)]
    assert refusals(visible) == []


HONEST = [
    "%timeit fast_monitor(xp, windows, 1.0)",
    "%%time\nresult = diffuse(u, 0.25, 100)\n",
    "%timeit -n 3 -r 2 diffuse(u, 0.25, 10)",
    "%matplotlib inline\nimport matplotlib.pyplot as plt",
    'print("array module:", xp.__name__, np.__version__)',
    'if __name__ == "__main__":\n    print("run")',
    "def _helper(x):\n    return x * 2\n_cache = {}\n_cache['a'] = _helper(1)",
    "def f(out):\n    for _ in range(3):\n        out[0][1] = 2\n    return getattr(out, 'shape')",
    "from demos import grading\nwith grading.watch() as seen:\n    r = diffuse(u, 0.2, 3)",
    "from demos.grading import rng, assert_close, devices\nfrom demos.profiling.sync_counter"
    " import counting_module",
    "import numpy as np\nfrom numba import cuda\nimport math, functools, itertools, collections",
    "def broken(:\n    pass",  # does not parse: runs nothing in the kernel either
    "class Window:\n    size = 3\n    def mean(self, x):\n        return x.mean()",
    "x = [1, 2]\nx[0] += 1\ndel x[1]",
    "print(f'{len([1])} items')\nlevel = max(1, 2)",
    "kinds = [type(layer).__name__ for layer in model.layers]",
    "import sys\nprint('debugging', file=sys.stderr)\nfrom sys import stdout",
]


@pytest.mark.parametrize("source", HONEST)
def test_honest_cells_pass(source: str) -> None:
    assert refusals([source]) == []


HOSTILE = {
    # the measured attacks
    "def __import__(name, *a, **k):\n    return real(name, *a, **k)": "__import__",
    'c = getattr(getattr(xp, "eludom_"[::-1], xp), "retnuoc_"[::-1])': "computed",
    'def fast(xp, w, t):\n    return globals()["slow" + "_monitor"](xp, w, t)': "globals",
    # the same ideas, spelled otherwise
    "import builtins\nbuiltins.__import__ = hook": "builtins",
    "import sys\nsys.modules['demos.grading.serve'].handle = fake": "sys",
    "from sys import modules": "sys",
    "import sys\nsys.setprofile(None)": "sys",
    "import sys\nhooks = sys.meta_path": "sys",
    "import sys\nsys.stderr = None": "attribute",
    "import sys\ns = sys": "sys",
    "import sys as s": "sys",
    "import typing\nm = typing.sys.modules": "sys",
    "import importlib": "importlib",
    "import inspect": "inspect",
    "import gc": "gc",
    "import ctypes": "ctypes",
    "import os": "os",
    "import threading": "threading",
    "import operator": "operator",
    "import timeit\ntimeit.timeit('1')": "timeit",
    "import demos.grading.serve": "grading",
    "from demos.grading import serve": "serve",
    "from demos.grading.watch import watch": "grading",
    "from demos.grading.compaction import simulated": "grading",
    "from demos.grading.compaction import _launch": "grading",
    "from demos.grading.compaction.np import load": "grading",
    "import demos.grading.compaction": "grading",
    "m = demos.grading.serve.MAKERS": "grading",
    "class Spy:\n    def __getattr__(self, name):\n        return 0": "__getattr__",
    "print(vars(xp))": "vars",
    "print(type(xp).__dict__)": "__dict__",
    "def f(devs):\n    return type(devs[0]).mro()[1].asnumpy(devs[0], x)": "mro",
    "from demos.grading import SimulatedDevice": "SimulatedDevice",
    "x = xp.counter.__dict__": "__dict__",
    "x = xp._module._counter": "private",
    "eval('1')": "eval",
    "exec('x = 1')": "exec",
    "c = compile('1', 'f', 'eval')": "compile",
    "breakpoint()": "breakpoint",
    "get_ipython().user_ns['x'] = 1": "get_ipython",
    "!ls": "get_ipython",
    "%load_ext something": "get_ipython",
    "np.sum = lambda *a: 0": "attribute",
    "cupy.cuda.Stream.synchronize = lambda self: None": "attribute",
    "def f(xp):\n    xp.counter = None": "attribute",
    "def f(xp):\n    xp.counter.uploads += 100": "attribute",
    "del np.testing": "attribute",
    "def f(devs):\n    devs[0].received[:] = []": "item of an attribute",
    "def print(*a):\n    pass": "builtin",
    "len = 3": "builtin",
    "import numpy as range": "builtin",
    "def f():\n    global sum\n    sum = 0": "builtin",
    "for abs in range(3):\n    pass": "builtin",
    "setattr(np, 'sum', f)": "setattr",
    "g = getattr\nx = g(xp, 'counter')": "getattr",
    "x = getattr(xp, name)": "computed",
    "x = getattr(xp, '_module')": "private",
    "hasattr(xp, '__class__')": "dunder",
    "f = (x for x in []).gi_frame.f_back.f_locals": "gi_frame",
    "a = np.ctypeslib.as_array(p, (3,))": "ctypeslib",
    "v = np.lib.stride_tricks.as_strided(x, (9,), (8,))": "stride_tricks",
    "a = np.load('x.npy', allow_pickle=True)": "allow_pickle",
    "address = id(xp)": "id",
    "name = '__class__'": "dunder",
    "Spy = type('Spy', (), {'__get' + 'attr__': lambda self, name: 0})": "making a class",
    "import dataclasses\nSpy = dataclasses.make_dataclass('Spy', [])": "make_dataclass",
    "from . import x": "relative",
    "from numpy import _core": "private",
    "%timeit __import__('os')": "__import__",
    "match xp:\n    case Spy(_module=m):\n        pass": "class pattern",
}


@pytest.mark.parametrize("source, why", HOSTILE.items(), ids=list(range(len(HOSTILE))))
def test_hostile_cells_are_refused_with_the_line(source: str, why: str) -> None:
    refusal = first_refusal(["import numpy as np", source])
    assert refusal is not None and refusal.cell == 2
    everything = " ".join(str(r) for r in refusals([source]))
    assert why in everything, everything
    assert str(refusal).startswith("your cell 2, line ")


def test_a_refusal_anywhere_before_the_test_counts() -> None:
    sources = [*[f"x{k} = {k}" for k in range(5)], "import gc", "y = 1"]
    refusal = first_refusal(sources)
    assert refusal is not None and (refusal.cell, refusal.line) == (6, 1)


_IDENTIFIER = st.text(string.ascii_letters + string.digits + "_", min_size=1, max_size=8).filter(
    lambda s: not s[0].isdigit()
)
_KEYWORDS = {"None", "True", "False", "and", "or", "not", "in", "is", "if", "else", "for", "def"}


@settings(max_examples=200, deadline=None)
@given(
    chain=st.lists(_IDENTIFIER.filter(lambda s: s not in _KEYWORDS), min_size=1, max_size=5),
    where=st.integers(min_value=0, max_value=4),
    secret=_IDENTIFIER.filter(lambda s: s not in _KEYWORDS and s != "_"),
    dunder=st.booleans(),
    context=st.sampled_from(["x = {}", "def f(xp):\n    return {}", "print({}())", "{} = 1"]),
)
def test_a_private_or_dunder_attribute_anywhere_in_a_chain_is_refused(
    chain: list[str], where: int, secret: str, dunder: bool, context: str
) -> None:
    hidden = f"__{secret}__" if dunder else f"_{secret}"
    if hidden in {"__name__", "__doc__", "__version__", "__main__"}:
        hidden = "__dict__"
    parts = ["xp", *chain]
    parts.insert(1 + where % len(parts), hidden)
    source = context.format(".".join(parts))
    assert first_refusal([source]) is not None, source


def test_a_refused_source_is_never_asked_and_goes_to_a_human() -> None:
    asked: list[dict] = []
    submission = Submission(
        ask_kernel=lambda request: asked.append(request) or {},
        student_sources=["def __import__(name, *args):\n    pass\ndef f(x):\n    return x"],
        given_sources=[],
        runner=None,  # type: ignore[arg-type]  (no kernel is started for a refused source)
    )
    verdict = judge("assert f(1) == 1", "a-test", submission)
    assert not verdict.passed and verdict.flag and asked == []
    assert "cannot trust how your code got its answers" in verdict.message
    assert "your cell 1, line 1: uses the dunder name __import__" in verdict.message


def test_a_call_that_switched_off_the_watch_fails_every_watch_and_is_flagged() -> None:
    from grader.verdicts import api
    from grader.verdicts.proxies import StudentFunction

    reply = {"value": 1, "course_code": False, "seen": {"profiler_removed": True}}
    submission = Submission(lambda request: reply, ["def f():\n    return 1"], [], None)  # type: ignore[arg-type]
    with submission.as_current(), api.watch() as seen:
        assert StudentFunction("f")() == 1
    assert seen.profiler_removed and seen.course_calls and seen.forbidden_calls
    assert submission.flags == ["f switched off the grader's watch"]
