"""Bar chart of the CNN benchmark: images/s per device, batch 32 beside the fastest setting."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any


def plot(result: dict[str, Any], output_dir: Path) -> list[Path]:
    """Draw ``cnn_throughput_<label>[_host_data].png`` from a ``bench cnn`` result; returns the
    files written.

    Log scale: one CPU thread and a GPU differ by orders of magnitude.
    """
    from demos.plots import pyplot, save_figure

    plt = pyplot()
    if result.get("benchmark") != "cnn":
        raise ValueError(f"not a cnn benchmark result: {result.get('benchmark')!r}")
    names = result.get("parameters", {}).get("device_names", {})
    rows = [r for r in result["results"] if "images_per_second" in r]
    if not rows:
        raise ValueError("the result holds no successful measurement to plot")
    devices = list(dict.fromkeys(r["device"] for r in rows))
    batch32 = [
        max(
            (
                r["images_per_second"]
                for r in rows
                if r["device"] == d and r["batch_size"] == 32 and r["precision"] == "float32"
            ),
            default=0.0,
        )
        for d in devices
    ]
    best = [
        max(rows_d, key=lambda r: r["images_per_second"])
        for rows_d in ([r for r in rows if r["device"] == d] for d in devices)
    ]
    fig, ax = plt.subplots(figsize=(7, 4))
    xs = range(len(devices))
    ax.bar([x - 0.2 for x in xs], batch32, width=0.4, label="batch 32, float32 (tutorial)")
    ax.bar(
        [x + 0.2 for x in xs],
        [b["images_per_second"] for b in best],
        width=0.4,
        label="fastest setting",
    )
    for x, b in zip(xs, best):
        ax.annotate(
            f"{b['images_per_second']:,.0f}\nbatch {b['batch_size']}\n{b['precision']}",
            (x + 0.2, b["images_per_second"]),
            ha="center",
            va="bottom",
            fontsize=7,
        )
    ax.set_xticks(list(xs), [names.get(d, d) for d in devices])
    ax.set_yscale("log")
    ax.set_ylim(top=max(b["images_per_second"] for b in best) * 40)  # room for the labels
    ax.set_ylabel("training images / s")
    ax.set_title(
        f"Tutorial CNN training throughput ({result.get('parameters', {}).get('label', '')})"
    )
    ax.legend(fontsize=8, loc="upper right")
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    label = str(result.get("parameters", {}).get("label", ""))
    slug = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
    # runs that copied every batch from host memory get their own name: they measure the input path
    # too
    host_fed = not all(r.get("data_on_device", False) for r in rows)
    path = output_dir / (
        "cnn_throughput"
        + (f"_{slug}" if slug else "")
        + ("_host_data" if host_fed else "")
        + ".png"
    )
    return [save_figure(fig, path)]
