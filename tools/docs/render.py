"""Render the docs pages that quote measurements from the result files they quote.

    python tools/docs/render.py           # rewrite the rendered pages in docs/
    python tools/docs/render.py --check   # exit 1, with a diff, if any page would change

Each ``tools/docs/templates/NAME.md.j2`` (Jinja2) becomes ``docs/NAME.md``. A
template reads a result file with ``result("demos/results/x.json")`` and writes
its figures with the filters of ``formats.py``, so a re-measured result changes
the page by re-rendering, never by hand. The check also fails when a result
file in ``demos/results/`` or ``grader/results/`` is quoted by no page: a new
benchmark gets its section in a template when its JSON is committed.

Hand-written pages may hold rendered blocks between markers (``blocks.py``):
course/README.md's chapter table is rendered from the course manifest,
``demos/course.toml``, by ``templates/blocks/chapters.md.j2``.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

import blocks
import figures
import formats
import jinja2

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = Path(__file__).resolve().parent / "templates"
RESULT_FOLDERS = ("demos/results", "grader/results")
HEADER = (
    "<!-- Rendered by tools/docs/render.py from tools/docs/templates/{name}.j2: edit that. -->\n"
)


class Results:
    """The result files, read on demand; remembers which ones a template quoted."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.read: set[str] = set()

    def __call__(self, path: str) -> dict[str, Any]:
        self.read.add(path)
        return json.loads((self.root / path).read_text(encoding="utf-8"))

    def unquoted(self) -> list[str]:
        """Measured results under RESULT_FOLDERS that no template read.

        Published specifications (such as ``gpu_specs.json``) are inputs of the chapters,
        not measurements (``demos.provenance.is_measured``), and may go unquoted.
        """
        from demos import provenance

        present = {
            path.relative_to(self.root).as_posix() for path in provenance.result_files(self.root)
        }
        return sorted(p for p in present - self.read if p.startswith(RESULT_FOLDERS))


def stale_results() -> list[str]:
    """The results measured before their code last changed (``demos.provenance``)."""
    from demos import provenance

    return provenance.stale_results()


def _printed_tables(root: Path) -> dict[str, Any]:
    """The tables the benchmark tools print themselves, so that each is written once.

    ``live_run`` reads a GPU node's chapter logs (``tools/gpu-node/notebooks.sh`` writes
    them to ``OUTDIR/live/``; committed under ``demos/results/live/DATE/MACHINE/``) and
    ``live_tables`` prints them with ``tools/gpu-node/live_tables.py``, one column per run.
    """
    from demos.benchmarks import distance_overhead, kernels

    spec = importlib.util.spec_from_file_location(
        "live_tables", ROOT / "tools" / "gpu-node" / "live_tables.py"
    )
    live = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(live)

    def live_tables(runs: list[dict[str, Any]], level: int = 3) -> str:
        """The runs' tables, their chapter headings at ``level``."""
        text = live.markdown(runs).rstrip("\n")
        return re.sub(r"(?m)^### ", "#" * level + " ", text)

    def notebook_times(folder: str) -> list[tuple[str, int, str]]:
        """(chapter, seconds, outcome) per line of a run's ``notebooks.txt``."""
        lines = (root / folder / "notebooks.txt").read_text(encoding="utf-8").splitlines()
        return [
            (Path(path).stem, int(seconds), outcome)
            for seconds, _, path, outcome in (line.split(" ", 3) for line in lines)
        ]

    return {
        "kernels_table": kernels.markdown_table,
        "overhead_table": distance_overhead.markdown_table,
        "live_run": lambda folder: live.read(root / folder / "live"),
        "live_tables": live_tables,
        "notebook_times": notebook_times,
    }


def environment(results: Results) -> jinja2.Environment:
    """Jinja2 set up for Markdown: strict (a missing key fails), block tags leave no lines."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=["jinja2.ext.do"],
    )
    env.filters.update(formats.FILTERS)
    env.globals.update(
        result=results,
        table=formats.table,
        stale_results=stale_results,
        **figures.GLOBALS,
        **_printed_tables(results.root),
    )
    return env


def rendered_blocks(root: Path, env: jinja2.Environment) -> dict[Path, str]:
    """The hand-written pages with their blocks rendered (path -> text).

    A page missing from *root* (a partial copy of the tree) is left out; a page
    without its markers stops the rendering (``blocks.BlockError``).
    """
    from demos import manifest

    pages = {}
    for page, names in blocks.PAGES.items():
        path = root / page
        if not path.exists():
            continue
        env.globals["course"] = manifest.load(root / "demos" / "course.toml")
        text = path.read_text(encoding="utf-8")
        pages[path] = blocks.fill(
            page, text, names, lambda name: env.get_template(f"blocks/{name}.md.j2").render()
        )
    return pages


def render_all(root: Path = ROOT) -> tuple[dict[Path, str], list[str]]:
    """Every rendered page (path -> text), and the result files no page quotes."""
    results = Results(root)
    env = environment(results)
    pages = {}
    for template in sorted(TEMPLATES.glob("*.md.j2")):
        name = template.name.removesuffix(".j2")
        text = env.get_template(template.name).render()
        pages[root / "docs" / name] = HEADER.format(name=name) + text
    pages.update(rendered_blocks(root, env))
    return pages, results.unquoted()


def differences(pages: dict[Path, str]) -> str:
    """A unified diff of every page whose file differs from its rendering."""
    out = []
    for path, text in pages.items():
        old = path.read_text(encoding="utf-8") if path.exists() else ""
        if old != text:
            name = path.relative_to(ROOT).as_posix()
            out += difflib.unified_diff(
                old.splitlines(True), text.splitlines(True), f"{name} (committed)", f"{name}"
            )
    return "".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; fail on a diff")
    args = parser.parse_args(argv)
    pages, unquoted = render_all()
    if unquoted:
        print("result files no docs page quotes: " + ", ".join(unquoted), file=sys.stderr)
    if args.check:
        diff = differences(pages)
        if diff:
            print(diff + "\nthe docs are out of date: run python tools/docs/render.py")
        return 1 if diff or unquoted else 0
    for path, text in pages.items():
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 1 if unquoted else 0


if __name__ == "__main__":
    sys.exit(main())
