"""Hidden-test verdicts are decided where student code cannot reach: attacks, by real nbgrader.

For every one of the seven assignments, three submissions attack the grading
from inside the student's kernel, and plain ``nbgrader autograde`` (the
NbGraderAPI, with this course's configuration) grades them:

* **hooks**: the release left blank, plus every IPython hook a student can
  install: input transformers at every stage and through the manager, an AST
  transformer, a custom exception handler, ``pre_run_cell``/``post_run_cell``
  events that print each cell's raw source and clear its error;
* **patches**: every answer replaced by a function returning an object that
  equals anything (kernels left empty), plus patched ``numpy.testing``,
  ``numpy.allclose``, the course's test helpers (their code objects swapped
  too), a forged answering module in ``sys.modules``, a trace and a profile
  function;
* **snoop**: the instructor's solution, plus a hook printing every cell's raw
  source, the input history, ``os.environ`` and ``/proc/self/environ``;
* and, for profiling, an answer that waits in its loop and then clears the
  sync counter it was handed.

The first two must score 0 (before, hooks alone took 10/10 everywhere); the
solution with snooping uses ``get_ipython`` and ``os``, which the grader's
source gate refuses (such a kernel could forge what it reports), so it scores
0 until a human grades it; and no line of a hidden test and not the course
secret may appear in any output of the graded notebook or in the feedback.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import nbformat
import pytest
from nbgrader_driver import (
    ASSIGNMENTS,
    NEW_ASSIGNMENTS,
    assert_all_succeeded,
    hand_in,
    make_course,
    run_nbgrader,
    scores,
)

from grader.verdicts.hidden_tests import split_hidden

pytestmark = pytest.mark.slow

ALL = ASSIGNMENTS + NEW_ASSIGNMENTS
SECRET = "s3cret-only-the-grader-knows-7f1c"

HOOKS = """
ip = get_ipython()
def _blank_tests(lines):
    return ["pass\\n"] if any("assert" in l or "grading" in l for l in lines) else lines
ip.input_transformers_cleanup.append(_blank_tests)
ip.input_transformers_post.append(_blank_tests)
ip.input_transformer_manager.cleanup_transforms.append(_blank_tests)
import ast as _ast
class _Empty(_ast.NodeTransformer):
    def visit_Module(self, node):
        return _ast.Module(body=[], type_ignores=[])
ip.ast_transformers.append(_Empty())
ip.set_custom_exc((BaseException,), lambda shell, etype, value, tb, tb_offset=None: None)
def _clear(result):
    result.error_in_exec = None
    result.error_before_exec = None
ip.events.register("post_run_cell", _clear)
ip.events.register("pre_run_cell", lambda info: print("RAW CELL:", info.raw_cell))
"""

PATCHES = """
import sys, types
import numpy as np
import numpy.testing
class Always:
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __lt__(self, other): return True
    def __le__(self, other): return True
    def __gt__(self, other): return True
    def __ge__(self, other): return True
    def __bool__(self): return True
    def __float__(self): return 0.0
    def __len__(self): return 3
    def __iter__(self): return iter([Always(), Always(), Always()])
    def __getitem__(self, key): return Always()
    def __getattr__(self, name): return Always()
    def __call__(self, *args, **kwargs): return Always()
    def __sub__(self, other): return 0.0
    __rsub__ = __add__ = __radd__ = __mul__ = __rmul__ = __sub__
for name in ("assert_allclose", "assert_array_equal", "assert_equal", "assert_array_almost_equal"):
    setattr(numpy.testing, name, lambda *a, **k: None)
np.allclose = lambda *a, **k: True
np.array_equal = lambda *a, **k: True
from demos import grading as _g
_g.check = _g.assert_close = _g.assert_equal = lambda *a, **k: None
_fake = types.ModuleType("demos.grading.serve")
_fake.handle = lambda text: '{"value": null, "seen": {}, "made": [], "calls": []}'
sys.modules["demos.grading.serve"] = _fake
sys.settrace(lambda frame, event, arg: None)
"""

SNOOP_FIRST = """
get_ipython().events.register("pre_run_cell", lambda info: print("RAW CELL:", info.raw_cell))
"""
SNOOP_LAST = """
import os
print("ENV:", dict(os.environ))
print("PROC:", open("/proc/self/environ", "rb").read())
print("HISTORY:", get_ipython().history_manager.input_hist_raw)
"""


def _answer_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [
        c
        for c in nb.cells
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")
    ]


def _always_answers(source: str) -> str:
    """Each function of an answer cell returning an always-equal object; kernels left empty."""
    lines = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef):
            decorators = "".join(f"@{ast.unparse(d)}\n" for d in node.decorator_list)
            if "jit" in decorators:
                lines.append(
                    f"{decorators}def {node.name}({ast.unparse(node.args)}):\n    return\n"
                )
            else:
                lines.append(f"def {node.name}(*args, **kwargs):\n    return Always()\n")
    return "\n".join(lines)


def _attack(release: Path, solution: Path, kind: str) -> str:
    nb = nbformat.read(solution if kind == "snoop" else release, as_version=4)
    answers = _answer_cells(nb)
    if kind == "hooks":
        answers[0].source = HOOKS + "\n" + answers[0].source
    elif kind == "patches":
        for cell in answers:
            cell.source = _always_answers(cell.source)
        answers[0].source = PATCHES + "\n" + answers[0].source
    else:
        answers[0].source = SNOOP_FIRST + "\n" + answers[0].source
        answers[-1].source = answers[-1].source + "\n" + SNOOP_LAST
    return nbformat.writes(nb)


def _hidden_lines(solution: Path) -> list[str]:
    """Distinctive lines of the notebook's hidden tests (never to be seen in any output)."""
    found, visible_lines = [], set()
    for cell in nbformat.read(solution, as_version=4).cells:
        visible, hidden = split_hidden(cell.source) if cell.cell_type == "code" else ("", None)
        visible_lines |= {line.strip() for line in visible.splitlines()}
        if hidden:
            found += [line.strip() for line in hidden.splitlines() if len(line.strip()) > 40]
    return [line for line in found if line not in visible_lines]


#: A profiling answer that waits for the device in its loop, then clears the counter it was given.
COUNTER_RESET = """def fast_monitor(xp, windows, threshold):
    alarms, loudest, loudest_window = 0, 0.0, -1
    for k, window in enumerate(windows):
        x = xp.asarray(window)
        level = xp.sqrt((x * x).mean(axis=1)).max()
        if level > threshold:
            alarms += 1
            if float(level) > loudest:
                loudest, loudest_window = float(level), k
    xp.counter.reset()
    return alarms, loudest, loudest_window
"""


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = make_course(tmp_path_factory.mktemp("verdicts"))
    assert_all_succeeded(run_nbgrader(root, [["generate_assignment", a] for a in ALL]))
    for assignment in ALL:
        release = root / "exercises" / assignment / f"{assignment}.ipynb"
        solution = root / "solutions" / assignment / f"{assignment}.ipynb"
        for kind in ("hooks", "patches", "snoop"):
            hand_in(root, kind, assignment, _attack(release, solution, kind))
    reset = nbformat.read(root / "solutions" / "profiling" / "profiling.ipynb", as_version=4)
    next(c for c in _answer_cells(reset) if "def fast_monitor" in c.source).source = COUNTER_RESET
    hand_in(root, "counter-reset", "profiling", nbformat.writes(reset))
    os.environ["COURSE_GRADING_SECRET"] = SECRET
    try:
        steps = [["autograde", a, kind] for a in ALL for kind in ("hooks", "patches", "snoop")]
        steps += [["autograde", "profiling", "counter-reset"]]
        steps += [
            ["generate_feedback", a, kind] for a in ALL for kind in ("hooks", "patches", "snoop")
        ]
        assert_all_succeeded(run_nbgrader(root, steps))
    finally:
        del os.environ["COURSE_GRADING_SECRET"]
    return root


@pytest.mark.parametrize("assignment", ALL)
@pytest.mark.parametrize("kind, expected", [("hooks", 0.0), ("patches", 0.0), ("snoop", 0.0)])
def test_attacks_from_the_kernel_do_not_change_verdicts(
    graded: Path, assignment: str, kind: str, expected: float
) -> None:
    assert scores(graded)[(assignment, kind)] == (expected, 10.0)


def test_a_counter_the_tests_read_cannot_be_cleared_by_the_answer(graded: Path) -> None:
    # right numbers (2) and the timelines (4); the syncs part (4) sees every wait
    assert scores(graded)[("profiling", "counter-reset")] == (6.0, 10.0)


@pytest.mark.parametrize("assignment", ALL)
def test_hidden_tests_and_the_secret_never_reach_the_kernel_or_feedback(
    graded: Path, assignment: str
) -> None:
    hidden = _hidden_lines(graded / "solutions" / assignment / f"{assignment}.ipynb")
    assert hidden, "every assignment has hidden tests"
    for kind in ("hooks", "snoop"):
        notebook = nbformat.read(
            graded / "autograded" / kind / assignment / f"{assignment}.ipynb", as_version=4
        )
        printed = "\n".join(
            str(o) for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", [])
        )
        assert "RAW CELL:" in printed, "the hook ran (the test would prove nothing otherwise)"
        leaked = [line for line in hidden if line in printed]
        assert not leaked, f"hidden test lines reached the kernel: {leaked[:3]}"
        assert SECRET not in printed
        feedback = (graded / "feedback" / kind / assignment / f"{assignment}.html").read_text()
        assert SECRET not in feedback
        assert not [line for line in hidden if line in feedback]
