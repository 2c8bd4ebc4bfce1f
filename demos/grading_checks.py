"""Hidden-test helpers of the ``profiling`` and ``kernel_patterns`` assignments: seeds, own work.

A re-grade must give the same score, so hidden inputs come from a seed; and the
hidden-test source is shown to instructors and may leak, so the seed mixes in a
course secret from the environment variable ``COURSE_GRADING_SECRET`` when the
instructor sets one (without it, a fixed seed). Each test draws from its own
labelled stream, so adding a test does not change the inputs of another.

A hidden test must also see that the work is the student's: :func:`uses_course_code`
finds functions that are, or call, the course package's own code.

(Kept apart from :mod:`demos.grading` until the two are merged into one.)
"""

from __future__ import annotations

import hashlib
import os
import types
from typing import Any

import numpy as np

SECRET_ENV = "COURSE_GRADING_SECRET"


def grading_rng(label: str) -> np.random.Generator:
    """A NumPy generator seeded from *label* and the course secret (if set)."""
    secret = os.environ.get(SECRET_ENV, "")
    digest = hashlib.sha256(f"{secret}\0{label}".encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


def _is_course_object(value: Any) -> bool:
    if isinstance(value, types.ModuleType):
        return value.__name__.split(".")[0] == "demos"
    module = getattr(value, "__module__", None) or getattr(getattr(value, "py_func", None), "__module__", "")
    return isinstance(module, str) and module.split(".")[0] == "demos"


def uses_course_code(fn: Any) -> bool:
    """True when *fn* (a function or a ``@cuda.jit`` kernel) is, or refers to, code of ``demos``.

    Looks at the function itself and at every global name its code (nested
    functions and lambdas included) uses: a wrapper around the course's own
    implementation is caught as well as the implementation itself.
    """
    fn = getattr(fn, "py_func", None) or getattr(fn, "fn", None) or fn
    if _is_course_object(fn):
        return True
    code, globals_ = getattr(fn, "__code__", None), getattr(fn, "__globals__", {})
    stack = [code] if isinstance(code, types.CodeType) else []
    while stack:
        current = stack.pop()
        for name in current.co_names:
            if name in globals_ and _is_course_object(globals_[name]):
                return True
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return False
