"""Sphinx configuration of the course's documentation site (MyST Markdown pages).

Build it with ``sphinx-build -W docs docs/_build`` (warnings are errors, as in
``tests/docs/test_site.py``). The pages are plain Markdown so that they also read
well on a forge or in JupyterLab; ``benchmarks.md`` is rendered by
``tools/docs/render.py`` and must not be edited by hand.
"""

project = "GPU programming in Python"
author = "the course's authors"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
# GitHub-style anchors for headings, so that links like benchmarks.md#grading-a-class-...
# work on the site and on a forge alike.
myst_heading_anchors = 4
html_theme = "alabaster"
html_static_path: list[str] = []
