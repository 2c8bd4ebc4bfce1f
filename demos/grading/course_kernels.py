"""Is a kernel the course's own? For the kernel-patterns assignment and its tests.

The course package ships working histogram and reduction kernels
(:mod:`demos.patterns.kernels`, some built by factories, some nested). A
submission that hands one of them in, or a thin wrapper around one, has not
written a kernel. :func:`is_course_kernel` catches both; it lives with the
grading code, so the chapters' modules hold no grading logic.
"""

from __future__ import annotations

import functools
import types
from typing import Any

from demos.grading.watch import uses_course_code


@functools.lru_cache(maxsize=1)
def _course_code_objects() -> frozenset[types.CodeType]:
    """Code objects of every kernel in :mod:`demos.patterns.kernels`, nested ones included."""
    from demos.patterns import kernels
    from demos.patterns.simulator import python_function

    found: set[types.CodeType] = set()
    stack = [getattr(obj, "__code__", None) for obj in vars(kernels).values()]
    stack += [
        getattr(python_function(k), "__code__", None)
        for k in (kernels.histogram_racy, kernels.histogram_global_atomic)
    ]
    while stack:
        code = stack.pop()
        if isinstance(code, types.CodeType) and code not in found:
            found.add(code)
            stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return frozenset(found)


def is_course_kernel(kernel: Any) -> bool:
    """True when *kernel* is (or runs the code of) one of the course package's own kernels."""
    from demos.patterns.simulator import python_function

    fn = python_function(kernel)
    return uses_course_code(fn) or fn.__code__ in _course_code_objects()
