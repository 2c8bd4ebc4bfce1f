"""A notebook's box and its kernel runner, as plain ``nbgrader autograde`` makes them for tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.sandbox.box import Box, open_box, plain_setting
from grader.verdicts.kernel_runner import KernelRunner


@contextlib.contextmanager
def notebook_box(tmp_path: Path) -> Iterator[Box]:
    """The box plain ``nbgrader autograde`` would make for a notebook in an empty folder."""
    notebook = tmp_path / "notebook"
    notebook.mkdir()
    with contextlib.ExitStack() as stack:
        limits, folder = plain_setting(stack)
        box = open_box(limits, notebook, folder, private=[tmp_path])
        try:
            yield box
        finally:
            box.close()


@pytest.fixture
def sandboxed_runner(tmp_path: Path) -> Iterator[KernelRunner]:
    """A :class:`KernelRunner` placed in a fresh notebook box (closed, box and all, after)."""
    with notebook_box(tmp_path) as box, KernelRunner(box.runner_command()) as runner:
        yield runner
