"""``python -m grader bench``: how long a class takes to grade, serially and in parallel.

A throw-away copy of the course gets synthetic submissions for each assignment
asked for (by default every assignment of the course manifest, ``demos/course.toml``),
cycling through a class of twenty: 12 correct, 4 partial (only the first
answer cell done), 1 looping, 1 memory-hungry and 2 hostile (test cells
blanked by an input transformer, writes at the gradebook). All of them are
graded in one run of ``python -m grader autograde`` with *workers* processes;
then a sample of the correct and partial ones is also graded by plain serial
``nbgrader autograde`` (the others are unsafe without the sandbox) to give the
per-notebook serial time. The JSON records the machine, the versions, the
run's wall time and how busy the CPUs were, each assignment's notebook-seconds
and scores per kind (also cell by cell), and the estimated speedup over serial
nbgrader.

A run stopped before its end (SIGTERM from an outer ``timeout``, Ctrl-C, its
own ``--deadline``: :mod:`grader.run.stopping`) still writes its JSON, with the
notebooks graded so far, marked ``"complete": false`` and named
``...-incomplete.json`` so that it never replaces a finished run's file.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat

from demos import manifest
from grader.run import batch as batch_mod
from grader.run.graded import cell_scores, unlike_the_rest
from grader.run.stopping import stopping
from grader.sandbox import isolation as sandbox
from grader.trials.synthetic_class import CLASS_OF_20, KINDS, class_pattern, submission

__all__ = ["CLASS_OF_20", "assignment_names", "bench", "submission"]


def hardware() -> dict:
    """The machine the numbers come from."""
    model = ""
    try:
        model = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        pass
    gpus = ""
    if shutil.which("nvidia-smi"):
        gpus = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    import nbgrader

    return {
        "host": platform.node(),
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30),
        "gpus": gpus or "none",
        "python": platform.python_version(),
        "nbgrader": nbgrader.__version__,
        "sandbox": sandbox.detect_level(),
        # other work on the machine slows every number down
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def _nbgrader(course: Path, *args: str) -> float:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        env=env,
        check=True,
        capture_output=True,
    )
    return time.monotonic() - started


def _course_copy(course: Path, into: Path) -> Path:
    copy = into / "course"
    copy.mkdir(parents=True)
    shutil.copy2(course / "nbgrader_config.py", copy / "nbgrader_config.py")
    shutil.copytree(course / "solutions", copy / "solutions")
    return copy


def _class_to_grade(
    course: Path, into: Path, assignment: str, kinds: dict[str, str], workers: int
) -> tuple[batch_mod.Batch, list[str]]:
    """A course copy in *into* with *assignment* released and one submission per student."""
    copy = _course_copy(course, into)
    _nbgrader(copy, "generate_assignment", assignment)
    notebooks = {kind: submission(copy, assignment, kind) for kind in set(kinds.values())}
    for student, kind in kinds.items():
        target = copy / "submitted" / student / assignment / f"{assignment}.ipynb"
        target.parent.mkdir(parents=True)
        nbformat.write(notebooks[kind], target)
    return batch_mod.Batch(copy, assignment, copy / "grading", workers), list(kinds)


def _cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def bench(
    course: Path,
    assignments: list[str],
    students: int,
    workers: int,
    serial_sample: int,
    output: Path,
    stop: threading.Event | None = None,
    pattern: list[str] = CLASS_OF_20,
) -> Path:
    """Run the benchmark; the path of the JSON it wrote.

    All assignments' classes are graded in one run of *workers* (as
    ``python -m grader autograde A B ...`` does), so the wall time is the
    time to grade them all; each assignment also records the seconds its
    notebooks took. The students' kinds cycle through *pattern*. Once *stop*
    is set, grading ends (:func:`grader.run.batch.run_classes`), no serial sample
    is taken, and the JSON holds the notebooks graded so far.
    """
    result = {
        "hardware": hardware(),
        "students": students,
        "workers": workers,
        "class_pattern": pattern,
        "assignments": {},
    }
    with tempfile.TemporaryDirectory(prefix="grader-bench-") as tmp:
        Path(tmp).chmod(0o711)  # the sandbox user walks through it at the "uid" level
        kinds: dict[str, str] = {}  # the same class, by name and kind, in every assignment
        for i in range(students):
            kind = pattern[i % len(pattern)]
            kinds[f"s{i:03d}-{kind}"] = kind
        # each class in its own course copy, all at once: generate_assignment is
        # seconds of nbgrader start-up per assignment, not worth waiting for in turn
        with ThreadPoolExecutor(max_workers=len(assignments)) as pool:
            classes = list(
                pool.map(
                    lambda a: _class_to_grade(course, Path(tmp) / a, a, kinds, workers),
                    assignments,
                )
            )
        busy, total = _cpu_times()
        started = time.monotonic()
        results = batch_mod.run_classes(classes, stop=stop)
        wall = time.monotonic() - started
        busy_after, total_after = _cpu_times()
        result |= _progress(results, len(classes) * students, started, stop)
        # when each class's first notebook started: the cheap ones while the costly
        # solutions were still being timed, then the most costly first
        first = {
            run.assignment: min(o.started_seconds for o in outcomes)
            for (run, _), outcomes in zip(classes, results)
            if outcomes
        }
        result["first_started_seconds"] = dict(sorted(first.items(), key=lambda kv: kv[1]))
        result["wall_seconds"] = round(wall, 1)
        result["cpu_busy_percent"] = round(
            100 * (busy_after - busy) / max(1, total_after - total), 1
        )
        sample = 0 if stop is not None and stop.is_set() else serial_sample
        for (run, names), outcomes in zip(classes, results):
            result["assignments"][run.assignment] = _assignment_result(
                course, run, names, outcomes, kinds, sample, Path(tmp)
            )
    serial = sum(a["estimated_serial_seconds"] for a in result["assignments"].values())
    result["estimated_serial_seconds"] = round(serial, 1)
    result["speedup_vs_serial_estimate"] = round(serial / max(0.1, result["wall_seconds"]), 2)
    output.mkdir(parents=True, exist_ok=True)
    path = output / (
        f"grading-bench-{'-'.join(assignments)}-{students}students-{workers}w-"
        f"{result['hardware']['cores']}cores{'' if result['complete'] else '-incomplete'}.json"
    )
    from demos import provenance  # which grading code and versions this time belongs to
    from demos.grading.watch import tool_sources

    # the grader, and what of demos it runs: the kernel side and the tools it stands on
    sources = ["grader", *tool_sources()]
    stamped = provenance.stamp(result, sources)
    path.write_text(json.dumps(stamped, indent=1) + "\n")
    return path


def _progress(
    results: list[list[batch_mod.Outcome]],
    total: int,
    started: float,
    stop: threading.Event | None,
) -> dict:
    """How far the run got: complete or not, notebooks graded of all, why and when it stopped.

    ``stopped_at_seconds`` counts as ``wall_seconds`` does, from the start of the
    grading run (the solutions' runs for the cell limits included); negative: stopped
    while the submissions were still being made.
    """
    graded = sum(len(outcomes) for outcomes in results)
    progress: dict = {"complete": graded == total, "graded_notebooks": graded}
    progress["total_notebooks"] = total
    if stop is not None and stop.is_set():
        progress["stopped_by"] = getattr(stop, "reason", "") or "stop"
        at = getattr(stop, "at", None)
        progress["stopped_at_seconds"] = None if at is None else round(at - started, 1)
    return progress


def _assignment_result(
    course: Path,
    run: batch_mod.Batch,
    students: list[str],
    outcomes: list[batch_mod.Outcome],
    kinds: dict[str, str],
    serial_sample: int,
    tmp: Path,
) -> dict:
    """One assignment's figures: its notebooks' seconds, scores per kind, the serial sample."""
    assignment, copy = run.assignment, run.course
    graded = {o.student for o in outcomes}
    students = [s for s in students if s in graded]  # all, unless the run was stopped
    serial = [s for s in students if kinds[s] in ("good", "partial")][:serial_sample]
    serial_times = []
    if serial:
        # After the class, on a warm machine (libraries in the file cache, GPU driver
        # loaded), as an instructor's serial run would mostly be; in a course copy of its
        # own, released as an instructor would (a few seconds, so only when sampled).
        serial_copy = _course_copy(course, tmp / f"{assignment}-serial")
        _nbgrader(serial_copy, "generate_assignment", assignment)
        for student in serial:
            shutil.copytree(copy / "submitted" / student, serial_copy / "submitted" / student)
        serial_times = [
            _nbgrader(serial_copy, "autograde", assignment, "--student", s) for s in serial
        ]
    per_kind: dict[str, list] = defaultdict(list)
    for o in outcomes:
        per_kind[kinds[o.student]].append(o)
    serial_mean = sum(serial_times) / max(1, len(serial_times))
    first_of_kind = {kinds[s]: s for s in reversed(students)}
    return {
        "notebook_seconds": round(sum(o.seconds for o in outcomes), 1),
        "threads_per_notebook": run.threads,
        "gpu": run.gpu,
        "serial_nbgrader_seconds_per_notebook": round(serial_mean, 2),
        "serial_sample": len(serial_times),
        "estimated_serial_seconds": round(serial_mean * len(students), 1),
        "by_kind": {
            kind: {
                "count": len(v),
                "scores": sorted({o.score for o in v if o.score is not None}),
                "not_graded": sum(o.status != "graded" for o in v),
                "flagged": sum(bool(o.flags) for o in v),
                "mean_seconds": round(sum(o.seconds for o in v) / len(v), 1),
                # where those seconds went (GuardedExecute's phases: grader.integration)
                "mean_phase_seconds": mean_phases(v),
                # what the reviewer is told, once per distinct text
                "flags": sorted({f for o in v for f in o.flags}),
                # to compare graders cell by cell (CPU against GPU)
                "cell_scores": cell_scores(copy, assignment, first_of_kind[kind]),
                # the same answer should get the same score: which did not, and why
                "unlike_the_rest": unlike_the_rest(copy, assignment, v),
            }
            for kind, v in per_kind.items()
        },
    }


def mean_phases(outcomes: list[batch_mod.Outcome]) -> dict[str, float]:
    """The mean seconds of each phase over the notebooks that recorded them, plus nbgrader's own.

    ``nbgrader`` is the rest of a notebook's time: the submission's copy and
    check, nbgrader's start, its gradebook and the sandbox's clean-up. The
    ``*_cpu`` entries are CPU seconds, not wall: the kernel's processes and
    the grading process with its simulator.
    """
    timed = [o for o in outcomes if o.phases]
    if not timed:
        return {}
    names = sorted({name for o in timed for name in o.phases})
    means = {name: sum(o.phases.get(name, 0.0) for o in timed) / len(timed) for name in names}
    wall = sum(v for name, v in means.items() if not name.endswith("_cpu"))
    means["nbgrader"] = sum(o.seconds for o in timed) / len(timed) - wall
    return {name: round(value, 2) for name, value in means.items()}


def assignment_names(text: str) -> list[str]:
    """``--assignments``: ``all`` (the course manifest's assignments, in its order) or
    comma-separated names among them; an unknown name is refused before anything runs."""
    known = list(manifest.course().assignments)
    if text.strip() == "all":
        return known
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"not an assignment of the course: {', '.join(unknown) or repr(text)} "
            f"(demos/course.toml has {', '.join(known)}; or all)"
        )
    return list(dict.fromkeys(names))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--students", type=int, default=6, help="per assignment")
    parser.add_argument(
        "--assignments",
        type=assignment_names,
        default="all",
        help="comma-separated, or all: every assignment of the course manifest (the default)",
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--serial-sample",
        type=int,
        default=3,
        help="students graded by plain serial nbgrader autograde to compare",
    )
    parser.add_argument(
        "--deadline",
        type=float,
        metavar="SECONDS",
        help="after this many seconds from the start, start no more notebooks, end those in "
        "flight and write what was graded (as on SIGTERM or Ctrl-C); set it below an outer "
        "time limit",
    )
    parser.add_argument(
        "--class-pattern",
        type=class_pattern,
        default=CLASS_OF_20,
        metavar="KINDS",
        help=f"comma-separated kinds the students cycle through, of {', '.join(KINDS)} "
        "(default: the class of 20)",
    )
    parser.add_argument("--output", type=Path, default=Path("grader/results"))


def main(course: Path, args: argparse.Namespace) -> int:
    """Run the benchmark, print where its JSON is; 1 when it was stopped before its end.

    SIGTERM, SIGINT and ``--deadline`` stop it (:mod:`grader.run.stopping`), for
    this command only: the previous handlers come back when it returns.
    """
    assignments = args.assignments
    with stopping(args.deadline) as stop:
        path = bench(
            course,
            assignments,
            args.students,
            args.workers,
            args.serial_sample,
            args.output.resolve(),
            stop,
            args.class_pattern,
        )
    result = json.loads(path.read_text())
    if not result["complete"]:
        print(
            f"grader bench: stopped ({result.get('stopped_by', 'stop')}) after "
            f"{result['wall_seconds']:g} s: {result['graded_notebooks']} of "
            f"{result['total_notebooks']} notebooks graded; the partial result:",
            file=sys.stderr,
        )
    print(path)
    return 0 if result["complete"] else 1
