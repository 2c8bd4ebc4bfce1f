"""The name a student's kernel gives its block size, and the checks' words made to use it.

Chapter 4c has two parts that each launch blocks of their own size, its scan
(``SCAN_BLOCK``) and its stencil (``STENCIL_BLOCK``): one shared ``BLOCK`` let a
student who changed it for one part break the other without a word. The
exercises, and older copies of the chapter, still call it ``BLOCK``. A check
finds which name the kernel uses (:func:`demos.patterns.scan.block_name`) and,
through :func:`in_its_words`, says that name wherever its messages say
``BLOCK``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from demos.checks._harness import CheckFailed
from demos.patterns import scan


def in_its_words(names: tuple[str, ...]) -> Callable[[Callable[[Any], str]], Callable]:
    """A check whose words say ``BLOCK`` for the block size, made to say the name the student's
    kernel gives it: the first of *names* it reads or defines, else the first of *names*."""

    def wrap(check: Callable[[Any], str]) -> Callable[[Any], str]:
        @functools.wraps(check)
        def worded(kernel: Any) -> str:
            name = scan.block_name(kernel, names) or names[0]

            def say(text: str) -> str:
                return re.sub(r"\bBLOCK\b", name, text)

            try:
                return say(check(kernel))
            except CheckFailed as failed:
                raise CheckFailed(say(str(failed))) from None

        return worded

    return wrap
