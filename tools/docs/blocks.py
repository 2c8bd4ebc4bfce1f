"""Rendered blocks inside hand-written pages: a table kept between two markers.

A page such as ``course/README.md`` is mostly prose, written by hand, but its
chapter table is data (``demos/course.toml``). The table lives between

    <!-- rendered:NAME from tools/docs/templates/blocks/NAME.md.j2: edit that -->
    ...
    <!-- /rendered:NAME -->

and ``render.py`` replaces what is between the markers, leaving the rest of the
page as its author wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# The pages (relative to the repository) and the blocks each holds.
PAGES: dict[str, tuple[str, ...]] = {
    "course/README.md": ("chapters",),
    "docs/students.md": ("chapter_list",),
}
OPEN = "<!-- rendered:{name} from tools/docs/templates/blocks/{name}.md.j2: edit that -->\n"
CLOSE = "<!-- /rendered:{name} -->"


class BlockError(ValueError):
    """A page lacks the markers of a block it should hold."""


def fill(page: str, text: str, blocks: tuple[str, ...], render: Callable[[str], str]) -> str:
    """*text* with each named block's content replaced by ``render(name)``."""
    for name in blocks:
        opening, closing = OPEN.format(name=name), CLOSE.format(name=name)
        pattern = re.compile(re.escape(opening) + r".*?" + re.escape(closing), re.DOTALL)
        if not pattern.search(text):
            raise BlockError(f"{page}: no block {name!r}: put {opening.strip()} and {closing} in")
        content = render(name).rstrip("\n") + "\n"
        text = pattern.sub(lambda _: opening + content + closing, text, count=1)
    return text
