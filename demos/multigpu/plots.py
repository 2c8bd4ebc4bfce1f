"""Figures for ``multigpu`` benchmark JSON: speedup vs GPU count, and the sum crossover."""

from __future__ import annotations

from pathlib import Path


def plot(result: dict, output_dir: Path) -> list[Path]:
    """Draw the figures of one ``multigpu`` result; returns the files written."""
    from demos.plots import pyplot, save_figure

    plt = pyplot()
    if result.get("benchmark") != "multigpu":
        raise ValueError(f"not a multigpu result: benchmark={result.get('benchmark')!r}")
    res = result["results"]
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    curves = {}
    if "matvec" in res:
        curves["mat-vec 10,000 x 300,000"] = res["matvec"]["speedup"]
    if "reduce" in res:
        for n in ("750000000", "30000000"):
            if n in res["reduce"]["speedup"]:
                curves[f"sum of {int(n) / 1e6:g} M"] = res["reduce"]["speedup"][n]
    if "lorenz" in res:
        curves[f"Lorenz ensemble ({res['lorenz']['n']:,})"] = res["lorenz"]["speedup"]
    if curves:
        fig, ax = plt.subplots(figsize=(6, 4))
        top = max(int(g) for c in curves.values() for g in c)
        ax.plot([1, top], [1, top], "k:", label="ideal")
        for label, speedup in curves.items():
            gs = sorted(speedup, key=int)
            ax.plot([int(g) for g in gs], [speedup[g] for g in gs], "o-", label=label)
        ax.set(xlabel="GPUs", ylabel="speedup over 1 GPU", title="Scaling over GPUs")
        ax.set_xticks(sorted({int(g) for c in curves.values() for g in c}))
        ax.legend()
        written.append(save_figure(fig, output_dir / "multigpu_speedup.png"))
    if "reduce" in res:
        fig, ax = plt.subplots(figsize=(6, 4))
        times = res["reduce"]["times_s"]
        sizes = sorted(times, key=int)
        for g in sorted(times[sizes[0]], key=int):
            ax.loglog(
                [int(n) for n in sizes],
                [times[n][g] * 1e6 for n in sizes],
                "o-",
                label=f"{g} GPU(s)",
            )
        if res["reduce"].get("crossover_size"):
            ax.axvline(res["reduce"]["crossover_size"], color="grey", ls="--", label="crossover")
        ax.set(
            xlabel="vector length (float32)",
            ylabel="time per sum (us)",
            title="Sum: when do more GPUs pay?",
        )
        ax.legend()
        written.append(save_figure(fig, output_dir / "multigpu_reduce_crossover.png"))
    return written
