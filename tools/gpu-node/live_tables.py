"""Turn the chapters' "your GPU beside the reference" logs into Markdown tables.

    python tools/gpu-node/live_tables.py LIVEDIR > live.md

LIVEDIR holds one ``<chapter>.jsonl`` per executed chapter, written by
:func:`demos.live.side_by_side` when ``DEMOS_LIVE_LOG`` is set (the GPU-node
notebook tool sets it). Each table gets the live and reference columns and
whether the lesson's direction held live, ready to paste into BENCHMARKS.md.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _cell(value: Any, unit: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        if unit in ("", "MB") or abs(value) >= 1000:
            text = f"{value:,.0f}"
        elif abs(value) >= 10:
            text = f"{value:.1f}"
        else:
            text = f"{value:.3g}"
        return f"{text} {unit}".strip()
    return str(value)


def _verdict(entry: dict[str, Any]) -> str:
    if entry.get("reference_only"):
        return "reference only: " + entry["reference_only"]
    if entry.get("error"):
        return "live measurement failed: " + entry["error"]
    return {True: "holds live", False: "does not hold live", None: "no live check"}[
        entry.get("lesson_holds")
    ]


def markdown(entries_by_chapter: dict[str, list[dict[str, Any]]]) -> str:
    """One section per chapter, one table per logged measurement."""
    lines: list[str] = []
    for chapter, entries in entries_by_chapter.items():
        lines += [f"### {chapter}", ""]
        for entry in entries:
            live_name = entry.get("machine") or "this machine"
            lines += [
                f"**{entry['title']}** ({_verdict(entry)}; measured in {entry['seconds']:.1f} s)",
                "",
                f"| | {live_name} | reference: {entry.get('reference_machine') or '-'} |",
                "| --- | --- | --- |",
            ]
            for row in entry["rows"]:
                lines.append(
                    f"| {row['label']} | {_cell(row['live'], row['unit'])} "
                    f"| {_cell(row['reference'], row['unit'])} |"
                )
            lines.append("")
    return "\n".join(lines)


def read(folder: Path) -> dict[str, list[dict[str, Any]]]:
    return {
        path.stem: [
            json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line
        ]
        for path in sorted(folder.glob("*.jsonl"))
    }


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    print(markdown(read(Path(argv[0]))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
