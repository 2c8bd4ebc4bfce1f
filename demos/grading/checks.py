"""What hidden tests are made of: seeded inputs, generic failures, safe comparisons.

* :func:`rng` gives every test its own generator from a seed: the same inputs
  at every re-grade, and, when the instructor sets ``COURSE_GRADING_SECRET`` in
  the grader's environment, inputs nobody can work out from the published
  test source.
* :func:`hidden_test` wraps a hidden test: the student's output (which could
  print hidden inputs) and warnings go nowhere, and any failure reaches the
  feedback as one generic sentence, never a hidden input or expected value.
* :func:`assert_close` and :func:`check` compare with NumPy functions taken
  when this module was imported (before any student code ran), so patching
  ``np.testing.assert_allclose`` or ``np.allclose`` later changes nothing, and
  :func:`check_untampered` fails when such a patch (or an IPython input or AST
  transformer) is found.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import hmac
import io
import os
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import numpy as np

#: The environment variable with the course secret (set it in the grader's
#: environment, never on a command line).
SECRET_VARIABLE = "COURSE_GRADING_SECRET"


def _read_secret() -> str | None:
    # Inside a notebook kernel the secret is taken out of the environment, so
    # code that runs later there (the student's) does not find it in os.environ;
    # elsewhere (e.g. the grading process itself) the environment is left as it is.
    ipython = sys.modules.get("IPython")
    if ipython is not None and ipython.get_ipython() is not None:
        return os.environ.pop(SECRET_VARIABLE, None)
    return os.environ.get(SECRET_VARIABLE)


_SECRET = _read_secret()

_DEFAULT_SALT = b"gpu-python course: default grading seed"


class GradingFailure(AssertionError):
    """A failed check, with a message written by the course (safe to show)."""


def seed_for(test_name: str) -> int:
    """The seed of *test_name*: fixed by default, derived from the course secret when set."""
    key = _SECRET.encode() if _SECRET else _DEFAULT_SALT
    digest = hmac.new(key, test_name.encode(), hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "little")


def rng(test_name: str) -> np.random.Generator:
    """The random generator for the inputs of the test called *test_name*."""
    return np.random.default_rng(seed_for(test_name))


def check(condition: Any, message: str) -> None:
    """Fail with *message* (a sentence that gives nothing hidden away) unless *condition*."""
    if not condition:
        raise GradingFailure(message)


# --- comparisons that student code cannot have patched --------------------------------
_asarray, _abs, _all, _isnan = np.asarray, np.abs, np.all, np.isnan
_less_equal, _equal = np.less_equal, np.equal


def _host(array: Any) -> np.ndarray:
    if type(array).__module__.startswith(("cupy", "demos.grading")) and hasattr(array, "get"):
        array = array.get()
    return _asarray(array)


def assert_close(actual: Any, expected: Any, what: str, rtol: float = 1e-7, atol: float = 0.0) -> None:
    """Fail with "*what* is wrong for a hidden input" unless shapes match and values are close."""
    try:
        got, want = _host(actual), _asarray(expected)
    except (TypeError, ValueError):
        raise GradingFailure(f"{what} is not an array") from None
    check(got.shape == want.shape, f"{what} has the wrong shape for a hidden input")
    with np.errstate(invalid="ignore", over="ignore"):
        close = _equal(got, want) | _less_equal(_abs(got - want), atol + rtol * _abs(want))
    ok = close | (_isnan(got) & _isnan(want))
    check(bool(_all(ok)), f"{what} is wrong for a hidden input")


def assert_equal(actual: Any, expected: Any, what: str) -> None:
    """Like :func:`assert_close`, for exact values (indices, integers)."""
    assert_close(actual, expected, what, rtol=0.0, atol=0.0)


# --- the hidden-test wrapper -----------------------------------------------------------
@contextlib.contextmanager
def _silenced() -> Iterator[None]:
    """No output at all: Python's streams, warnings, and C-level writes to fds 1 and 2."""
    sink = io.StringIO()
    saved = []
    with contextlib.ExitStack() as stack:
        stack.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        stack.enter_context(contextlib.redirect_stdout(sink))
        stack.enter_context(contextlib.redirect_stderr(sink))
        try:
            for fd in (1, 2):
                saved.append((fd, os.dup(fd)))
            devnull = os.open(os.devnull, os.O_WRONLY)
            for fd, _ in saved:
                os.dup2(devnull, fd)
            os.close(devnull)
        except OSError:  # no such descriptors (embedded interpreters): Python-level only
            pass
        try:
            yield
        finally:
            for fd, copy in saved:
                os.dup2(copy, fd)
                os.close(copy)


@contextlib.contextmanager
def hidden_test(name: str, what: str) -> Iterator[np.random.Generator]:
    """Run a hidden test quietly; yields its seeded generator.

    *what* names the part being tested ("the saxpy kernel"). Whatever goes
    wrong inside, the error seen is one :class:`GradingFailure` whose message is
    either a course-written check message or "*what* fails for a hidden input".
    """
    check_untampered()
    try:
        with _silenced():
            yield rng(name)
    except GradingFailure:
        raise
    except Exception as error:
        raise GradingFailure(
            f"{what} fails for a hidden input ({type(error).__name__}); test it on more cases"
        ) from error
    check_untampered()


# --- tampering that the notebook itself can see -------------------------------------------
_NUMPY_NAMES = ("allclose", "isclose", "array_equal", "asarray", "abs", "all", "isfinite")
_TESTING_NAMES = ("assert_allclose", "assert_array_equal", "assert_equal", "assert_array_almost_equal")
_BUILTIN_NAMES = (
    "isinstance", "len", "abs", "all", "any", "max", "min", "sum", "float", "int", "type", "zip",
    "range", "getattr", "compile", "exec", "__import__", "print",
)
_SHELL_METHODS = ("run_cell", "run_cell_async", "transform_cell", "run_ast_nodes", "run_code")
_SHELL_LISTS = ("input_transformers_cleanup", "input_transformers_post", "ast_transformers")

_originals: dict[str, Any] = {}


def _ipython() -> Any:
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


def _current() -> dict[str, Any]:
    found: dict[str, Any] = {}
    found.update({f"numpy.{n}": getattr(np, n, None) for n in _NUMPY_NAMES})
    found.update({f"numpy.testing.{n}": getattr(np.testing, n, None) for n in _TESTING_NAMES})
    found.update({f"builtins.{n}": getattr(builtins, n, None) for n in _BUILTIN_NAMES})
    shell = _ipython()
    if shell is not None:
        for name in _SHELL_LISTS:
            found[f"IPython.{name}"] = tuple(getattr(shell, name, ()))
        for name in _SHELL_METHODS:
            found[f"IPython.{name}"] = getattr(type(shell), name, None)
            if name in vars(shell):  # patched on the instance
                found[f"IPython.{name} (instance)"] = vars(shell)[name]
    for module_name in ("demos.grading", __name__):
        module = sys.modules.get(module_name)
        if module is not None:
            found.update({f"{module_name}.{k}": v for k, v in vars(module).items()
                          if callable(v) and not k.startswith("__")})
    return found


def remember_originals() -> None:
    """Record what an untouched kernel has (called once, when demos.grading is imported)."""
    _originals.clear()
    _originals.update(_current())


def check_untampered() -> None:
    """Fail if testing functions, builtins, IPython's transformers or this package were patched."""
    now = _current()
    changed = [k for k, v in _originals.items() if now.get(k) is not v and now.get(k) != v]
    changed += [k for k in now if k not in _originals and k.endswith("(instance)")]
    check(not changed, "the grading machinery was modified (testing functions, IPython's "
                       "transformers or demos.grading): this submission is flagged for review")
