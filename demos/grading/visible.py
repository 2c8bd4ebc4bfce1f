"""What the assignments' visible tests are made of: seeded inputs and generic failures.

The visible tests run in the student's own kernel (as when they press
Validate), so nothing here is a safeguard: a grade is decided by the hidden
tests, which run in the grader's process (``grader.verdicts``), never here.

* :func:`rng` gives every visible test its own generator from a fixed seed:
  the same inputs for every student and at every run. A visible test starts
  by asking for its inputs and then launches the student's kernels on
  test-sized grids from host arrays, so :func:`rng` also silences Numba's
  performance advice, which on stderr would cost the cell its points
  (importing this package silences nothing).
* :func:`expect`, :func:`assert_close` and :func:`assert_equal` fail with one
  sentence written by the course.
"""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from demos.kernel_testing import to_host, wrong_entries
from demos.numba_advice import silence_advice

_SALT = b"gpu-python course: visible test inputs"


class GradingFailure(AssertionError):
    """A failed expectation of a test, with a message written by the course (safe to show)."""


def seed_for(test_name: str) -> int:
    """The fixed seed of the visible test *test_name*."""
    return int.from_bytes(hashlib.sha256(_SALT + test_name.encode()).digest()[:8], "little")


def rng(test_name: str) -> np.random.Generator:
    """The random generator for the inputs of the test called *test_name*."""
    silence_advice()
    return np.random.default_rng(seed_for(test_name))


def expect(condition: Any, message: str) -> None:
    """Fail with *message* unless *condition*."""
    if not condition:
        raise GradingFailure(message)


def assert_close(
    actual: Any, expected: Any, what: str, rtol: float = 1e-7, atol: float = 0.0
) -> None:
    """Fail with "*what* is wrong" unless shapes match and values are close."""
    try:
        got, want = to_host(actual), np.asarray(expected)
    except (TypeError, ValueError):
        raise GradingFailure(f"{what} is not an array") from None
    expect(got.shape == want.shape, f"{what} has the wrong shape")
    wrong = wrong_entries(got, want, rtol=rtol, atol=atol, equal_nan=True)
    expect(wrong.size == 0, f"{what} is wrong")


def assert_equal(actual: Any, expected: Any, what: str) -> None:
    """Like :func:`assert_close`, for exact values (indices, integers)."""
    assert_close(actual, expected, what, rtol=0.0, atol=0.0)
