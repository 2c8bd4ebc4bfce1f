"""Chapter 4a's tools: the sync-counting array module, timelines, the ncu table, the checks.

The counting module is what the ``profiling`` assignment grades with, so it
must count every way a value reaches the host (and nothing else), with NumPy
here and CuPy on a GPU. Timeline arithmetic is checked on hand-made intervals;
the chapter's model answers must pass its checks and the stubs fail them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from demos import hardware
from demos.profiling import live, ncu, timeline
from demos.profiling.sync_counter import SyncCountingModule, counting_module
from helpers import ROOT


@pytest.mark.parametrize(
    "read_back",
    [
        lambda a: float(a.sum()),
        lambda a: a.sum().item(),
        lambda a: int(a[0]),
        lambda a: bool(a[0] > 0),
        lambda a: print(a),
        lambda a: f"{a.sum():.2f}",
        lambda a: np.asarray(a),
        lambda a: a.tolist(),
    ],
    ids=["float", "item", "int", "bool", "print", "format", "np.asarray", "tolist"],
)
def test_every_way_to_the_host_is_counted(read_back) -> None:
    xp = SyncCountingModule()
    a = xp.asarray(np.arange(1.0, 5.0))
    read_back(a)
    assert xp.counter.syncs == 1, dict(xp.counter.transfers)


def test_device_work_is_not_counted_and_results_are_right() -> None:
    xp = SyncCountingModule()
    host = np.random.default_rng(0).random((6, 3))
    p = xp.asarray(host)
    x2 = (p * p).sum(axis=1)
    d = x2[:, None] - 2 * (p @ p.T) + x2[None, :]
    d = xp.maximum(d, 0)
    assert (xp.counter.syncs, xp.counter.uploads) == (0, 1)
    assert xp.counter.operations >= 6
    assert len(d) == 6 and d.shape == (6, 6)  # shapes are known on the host: no transfer
    expected = ((host[:, None] - host[None]) ** 2).sum(-1)
    np.testing.assert_allclose(xp.asnumpy(d), expected, atol=1e-12)
    assert xp.counter.transfers["asnumpy"] == 1


def test_raw_buffer_interfaces_are_hidden() -> None:
    a = SyncCountingModule().asarray(np.ones(3))
    for name in ("__array_interface__", "__cuda_array_interface__", "__dlpack__"):
        assert not hasattr(a, name)


def test_counting_module_wraps_numpy_without_a_gpu() -> None:
    if not hardware.cupy_available():
        assert counting_module()._base is np


def _iv(pairs, lane="a"):
    return [timeline.Interval("x", lane, float(s), float(e)) for s, e in pairs]


def test_timeline_arithmetic() -> None:
    ivs = _iv([(4, 6), (0, 1), (0.5, 2)])
    assert timeline.busy_time(ivs) == pytest.approx(4.0)
    assert timeline.idle_gaps(ivs) == [(2.0, 4.0)]
    assert timeline.summary(ivs) == {
        "span_ms": 6.0,
        "busy_ms": 4.0,
        "idle_ms": 2.0,
        "largest_gap_ms": 2.0,
    }
    assert timeline.overlap_time(_iv([(0, 2), (3, 5)]), _iv([(1, 4)])) == pytest.approx(2.0)
    assert timeline.overlap_time(_iv([(0, 1)]), _iv([(1, 2)])) == 0.0
    assert timeline.summary([])["span_ms"] == 0.0


def test_event_timeline_on_the_host_clock_says_so() -> None:
    recorder = timeline.EventTimeline(use_gpu=False)
    with recorder.step("work"):
        sum(range(1000))
    (record,) = recorder.records()
    assert (
        record["clock"] == "host"
        and record["lane"] == "host"
        and record["end_ms"] >= record["start_ms"]
    )
    fig = timeline.plot(timeline.from_records(recorder.records()), "test")
    assert fig.axes[0].get_xlabel() == "time (ms)"


NCU_CSV = """==PROF== Connected to process 1
"ID","Kernel Name","gpu__time_duration.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed","sm__warps_active.avg.pct_of_peak_sustained_active"
"","","nsecond","%","%"
"0","_ZN6cudapy5demos8distance10numba_cuda12naive_kernelB2v1","1,234,000","1.5","3.1"
"1","_ZN6cudapy5demos8distance10numba_cuda16coalesced_kernelB2v2","250,000","80.2","90.0"
"2","some_other_kernel","1","1","1"
"""  # noqa: E501


def test_ncu_table_is_read_from_the_csv_export(tmp_path: Path) -> None:
    rows = ncu.parse_csv(NCU_CSV)
    assert [r["kernel"] for r in rows] == ["naive", "coalesced"]
    assert rows[0]["duration"] == pytest.approx(1234.0)  # ns -> us
    assert rows[1]["memory throughput"] == pytest.approx(80.2)
    with pytest.raises(ValueError, match="no ncu CSV table"):
        ncu.parse_csv("==PROF== nothing here")
    csv_path = tmp_path / "raw.csv"
    csv_path.write_text(NCU_CSV)
    out = tmp_path / "ncu.json"
    assert ncu.main(["table", str(csv_path), "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["benchmark"] == "ncu_distance_kernels" and "environment" in data


@pytest.mark.nogpu
def test_benchmarks_refuse_clearly_without_a_gpu(tmp_path: Path) -> None:
    for command in ("profiling", "patterns", "streams", "managed"):
        proc = subprocess.run(
            [sys.executable, "-m", "demos", "bench", command, "--output", str(tmp_path)],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert proc.returncode == 1 and "needs a GPU with CuPy" in proc.stdout, (
            proc.stdout + proc.stderr
        )
        assert "Traceback" not in proc.stderr


def test_missing_reference_is_announced(capsys: pytest.CaptureFixture[str]) -> None:
    assert live.reference("no_such_reference") is None
    assert (
        "No reference result demos/results/no_such_reference.json is shipped"
        in capsys.readouterr().out
    )


@pytest.mark.gpu
def test_profiling_bench_runs_quick_on_a_gpu() -> None:
    from demos.profiling import bench

    results = bench.run(quick=True)
    assert results["overlap"]["correct"]
    assert results["timing"]["cuda_events_ms"] > 0
    names = [r["name"] for r in results["pipeline"]["timeline"]]
    assert names == [
        "upload",
        "row norms (einsum)",
        "inner products (matmul)",
        "combine",
        "download",
    ]
