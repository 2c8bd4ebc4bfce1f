"""Turn the chapters' "your GPU beside the reference" logs into Markdown tables.

    python tools/gpu-node/live_tables.py LIVEDIR [LIVEDIR ...] > live.md

Each LIVEDIR (one per machine) holds one ``<chapter>.jsonl`` per executed chapter, written by
:func:`demos.live.side_by_side` when ``DEMOS_LIVE_LOG`` is set (the GPU-node
notebook tool sets it). Each table gets the live and reference columns and
whether the lesson's direction held live; committed under demos/results/live/, the
benchmarks page renders them.
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


def _run_gpu(run: dict[str, list[dict[str, Any]]]) -> str | None:
    """The GPU a run was made on: the machine of its first GPU measurement."""
    for entries in run.values():
        for entry in entries:
            machine = entry.get("machine") or ""
            if machine and not machine.startswith("this machine") and machine != "no GPU":
                return machine
    return None


def _column(entry: dict[str, Any] | None, gpu: str | None) -> str:
    """A live column's header; a CPU measurement names the GPU node it ran on."""
    if entry is None:
        return "-"
    machine = entry.get("machine") or "this machine"
    if machine.startswith("this machine") and gpu:
        return machine.replace("this machine", f"{gpu} node, CPU")
    return machine


def markdown(runs: list[dict[str, list[dict[str, Any]]]]) -> str:
    """One section per chapter, one table per measurement, one live column per run.

    *runs* are :func:`read` results of the same chapters on different machines
    (an H200 node, an H100 node, ...); the reference column comes from the first.
    """
    lines: list[str] = []
    first = runs[0]
    gpus = [_run_gpu(run) for run in runs]
    for chapter, entries in first.items():
        lines += [f"### {chapter}", ""]
        for k, entry in enumerate(entries):
            same = [
                run.get(chapter, [])[k] if k < len(run.get(chapter, [])) else None for run in runs
            ]
            machines = [_column(e, gpu) for e, gpu in zip(same, gpus)]
            verdicts = "; ".join(
                f"{m}: {_verdict(e)}" for m, e in zip(machines, same) if e is not None
            )
            lines += [
                f"**{entry['title']}** ({verdicts})",
                "",
                "| | "
                + " | ".join(machines)
                + f" | reference: {entry.get('reference_machine') or '-'} |",
                "| --- |" + " --- |" * (len(runs) + 1),
            ]
            for r, row in enumerate(entry["rows"]):
                live_cells = [
                    _cell(e["rows"][r]["live"], row["unit"]) if e and r < len(e["rows"]) else "-"
                    for e in same
                ]
                lines.append(
                    f"| {row['label']} | "
                    + " | ".join(live_cells)
                    + f" | {_cell(row['reference'], row['unit'])} |"
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
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    print(markdown([read(Path(folder)) for folder in argv]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
