"""Check executed notebooks for what a student would see as a problem: red boxes and raw data.

    python tools/gpu-node/check_outputs.py EXECUTED.ipynb [...]

A cell fails when it shows stderr output (a red box in JupyterLab: warnings,
library start-up noise), an error, terminal colour codes (ANSI escapes, which
JupyterLab prints raw in plain-text outputs) or a raw Python dict printed as a
result. Prints one line per problem and exits 1 if there is any, so the
GPU-node notebook tool marks such a chapter as failed.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
RAW_DICT = re.compile(r"^\{['\"][^'\"]+['\"]: ", re.MULTILINE)


def _text(output: dict) -> str:
    if output.get("output_type") == "stream":
        return output.get("text", "")
    return str(output.get("data", {}).get("text/plain", ""))


def problems(path: Path) -> list[str]:
    """Every red box, error, colour code or raw dict in the outputs of one executed notebook."""
    found = []
    notebook = nbformat.read(path, as_version=4)
    for number, cell in enumerate(notebook.cells):
        if cell.cell_type != "code":
            continue
        where = f"{path.name} cell {number} ({cell.get('id', '?')})"
        for output in cell.get("outputs", []):
            text = _text(output)
            first = (text.strip().splitlines() or [""])[0][:120]
            if output.get("output_type") == "error":
                found.append(
                    f"{where}: error {output.get('ename')}: {output.get('evalue', '')[:120]}"
                )
            elif output.get("output_type") == "stream" and output.get("name") == "stderr":
                found.append(f"{where}: stderr output: {first}")
            if ANSI.search(text):
                found.append(f"{where}: terminal colour codes in the output: {first}")
            if RAW_DICT.search(text):
                found.append(f"{where}: a raw dict printed: {first}")
    return found


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    found = [line for name in argv for line in problems(Path(name))]
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
