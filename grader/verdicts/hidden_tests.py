"""Run a test cell's hidden tests in the grader's own process and decide their verdict.

nbgrader restores the hidden tests into each test cell before grading. The
grader's execute preprocessor (:class:`grader.integration.preprocessors.GuardedExecute`)
sends the kernel only the visible part (:func:`split_hidden`), then calls
:func:`judge` with the hidden part. The hidden code runs here, with
:mod:`.api` as ``grading`` and stand-ins (:mod:`.proxies`) for the names the
student defined: its source never exists in the student's kernel, and nothing
the student's code does there (hooks, patches, trace functions, exiting) can
change what it concludes, only the data it is given. That data includes how
the student's code worked (launches, calls, counters), recorded in the kernel:
it is believed only of cells the source gate (:mod:`.source_gate`) lets
through; any other source fails every hidden test after it, flagged for a human.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import math
from dataclasses import dataclass

import numpy as np

from grader.verdicts import api
from grader.verdicts.api import MachineryFailure, StudentError, is_machinery_error
from grader.verdicts.context import Submission
from grader.verdicts.kernel_runner import KernelRunnerError
from grader.verdicts.proxies import StudentFunction, StudentKernel
from grader.verdicts.source_gate import first_refusal
from grader.verdicts.student_source import defined_names, is_kernel_definition, literal_constants

BEGIN, END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


@dataclass
class Verdict:
    """A hidden test's outcome: passed, or the sentence the feedback shows (and a flag's reason)."""

    passed: bool
    message: str = ""
    flag: str | None = None
    #: Set when the grading machinery failed (the kernel died, an OS error here): then the
    #: test decided nothing, and the notebook must fail and be graded again, never be scored.
    machinery: str | None = None


def split_hidden(source: str) -> tuple[str, str | None]:
    """(visible part, hidden part or ``None``) of a test cell's source."""
    visible: list[str] = []
    hidden: list[str] = []
    inside, found = False, False
    for line in source.splitlines():
        stripped = line.strip()
        if stripped == BEGIN:
            inside, found = True, True
        elif stripped == END:
            inside = False
        elif inside:
            hidden.append(line)
        else:
            visible.append(line)
    return "\n".join(visible), ("\n".join(hidden) if found else None)


def _free_names(code: str) -> set[str]:
    tree = ast.parse(code)
    bound = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    }
    bound |= {a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)}
    bound |= {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    bound |= {
        (a.asname or a.name).split(".")[0]
        for n in ast.walk(tree)
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    loaded = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    return loaded - bound - set(dir(builtins))


def namespace(code: str, submission: Submission) -> dict:
    """What the hidden code sees: NumPy, math, :mod:`.api` as ``grading``, the student's names."""
    names: dict = {"np": np, "math": math, "grading": api}
    student = defined_names(submission.student_sources)
    constants = literal_constants(submission.given_sources)
    for name in _free_names(code) - set(names):
        if name in constants:
            names[name] = constants[name]
        elif name in student:
            if is_kernel_definition(name, submission.student_sources):
                names[name] = StudentKernel(name)
            else:
                names[name] = StudentFunction(name)
    return names


def judge(code: str, grade_id: str, submission: Submission) -> Verdict:
    """Run the hidden *code* of the test cell *grade_id* against *submission*."""
    try:
        compiled = compile(code, f"<hidden tests of {grade_id}>", "exec")
    except SyntaxError as error:
        return Verdict(
            False, "the hidden tests of this cell do not compile", f"hidden tests: {error}"
        )
    refusal = first_refusal(submission.student_sources)
    if refusal is not None:  # what the kernel reports could be forged: a human decides
        message = f"the grader cannot trust how your code got its answers ({refusal})"
        return Verdict(False, message, "; ".join([*submission.flags, message]))
    with submission.as_current(), contextlib.redirect_stdout(io.StringIO()):
        try:
            exec(compiled, namespace(code, submission))  # noqa: S102  (the instructor's tests)
        except MachineryFailure as failure:
            return Verdict(False, "the grader failed", machinery=str(failure))
        except api.GradingFailure as failure:
            message = str(failure)
            flags = submission.flags + (
                [message] if message.startswith("the grader cannot run") else []
            )
            return Verdict(False, message, "; ".join(flags) or None)
        except StudentError as error:
            kind = str(error).split(":", 1)[0][:60]
            return Verdict(False, f"your code raised {kind} on a hidden input")
        except KernelRunnerError as error:
            return Verdict(False, f"your kernel could not be run to its end: {error}")
        except AssertionError as error:
            return Verdict(False, str(error) or "a hidden test failed")
        except Exception as error:  # noqa: BLE001  (an answer of an unexpected kind, e.g. not data)
            if is_machinery_error(error):
                return Verdict(
                    False, "the grader failed", machinery=f"{type(error).__name__}: {error}"
                )
            return Verdict(
                False, f"a hidden test could not use your answer ({type(error).__name__})"
            )
    return Verdict(True, flag="; ".join(submission.flags) or None)
