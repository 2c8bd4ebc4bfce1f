"""The grader makes its cgroup able to hold the notebooks' memory cgroups, or says why not.

Under cgroups v2 a cgroup with processes inside cannot give its children the
memory controller. :func:`grader.sandbox.cgroup_parent.place` moves the grader's own
process into a leaf of its own, and only it, where it may. Two kinds of test:

* against a fake cgroup tree in a temporary folder, whose "kernel" (the two
  writes that move a process and enable a controller) keeps the v2 rule: every
  decision, and that nothing is moved where the answer is no;
* against this machine's real cgroups v2, where the test runs as root and the
  v2 root offers a domain controller (memory, io, hugetlb, ...; on the 2-core
  development machine only hugetlb, its memory controller being in a v1
  hierarchy): the kernel refuses the controller while the process is inside,
  and accepts it once the process has moved itself into its leaf.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grader.sandbox import cgroup_parent, cgroups
from grader.sandbox.cgroup_parent import FALLBACK, LEAF, LEAF_MADE, SITE, Placement, place
from helpers import ROOT

PID = str(os.getpid())


class FakeKernel:
    """A cgroup tree in a folder, with the v2 rules the placement depends on."""

    def __init__(self, mount: Path) -> None:
        self.mount = mount

    def make(self, path: str, procs: list[str], controllers: str = "memory io", enabled: str = ""):
        cgroup = self.mount / path.strip("/")
        cgroup.mkdir(parents=True, exist_ok=True)
        (cgroup / "cgroup.controllers").write_bytes(controllers.encode())
        (cgroup / "cgroup.subtree_control").write_bytes(enabled.encode())
        (cgroup / "cgroup.procs").write_bytes("\n".join(procs).encode())
        return cgroup

    def procs(self, cgroup: Path) -> list[str]:
        path = cgroup / "cgroup.procs"
        return path.read_text().split() if path.exists() else []

    def write(self, path: Path, text: str) -> int:
        """What the kernel does with a write into ``cgroup.procs`` or ``cgroup.subtree_control``."""
        cgroup = path.parent
        if path.name == "cgroup.subtree_control":
            if cgroup != self.mount and self.procs(cgroup):
                raise OSError(errno.EBUSY, "Device or resource busy")
            enabled = set(path.read_text().split()) | {text.lstrip("+")}
            path.write_bytes(" ".join(sorted(enabled)).encode())
            return len(text)
        if path.name == "cgroup.procs":
            for procs in self.mount.rglob("cgroup.procs"):
                procs.write_bytes(
                    "\n".join(p for p in self.procs(procs.parent) if p != text).encode()
                )
            if not (cgroup / "cgroup.controllers").exists():  # a new cgroup's files
                (cgroup / "cgroup.controllers").write_bytes(b"")
                (cgroup / "cgroup.subtree_control").write_bytes(b"")
            path.write_bytes("\n".join([*self.procs(cgroup), text]).encode())
            return len(text)
        return Path.write_bytes(path, text.encode())


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeKernel:
    fake = FakeKernel(tmp_path)
    real = Path.write_text

    def write_text(path: Path, text: str, *args, **kwargs) -> int:
        if path.is_relative_to(tmp_path) and path.name.startswith("cgroup."):
            return fake.write(path, text)
        return real(path, text, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", write_text)
    monkeypatch.delenv("GRADER_CGROUP", raising=False)
    return fake


def test_alone_in_its_cgroup_the_grader_moves_itself_into_a_leaf(kernel: FakeKernel) -> None:
    job = kernel.make("/gpu-job", [PID])
    placement = place(kernel.mount, "/gpu-job")
    assert (placement.parent, placement.way) == (job, LEAF_MADE), placement
    assert kernel.procs(job / LEAF) == [PID] and kernel.procs(job) == []
    assert "memory" in (job / "cgroup.subtree_control").read_text().split()
    # a grading worker started afterwards finds itself in the leaf: its parent, nothing moved
    again = place(kernel.mount, f"/gpu-job/{LEAF}")
    assert (again.parent, again.way) == (job, LEAF_MADE)
    assert kernel.procs(job / LEAF) == [PID]


def test_it_never_moves_a_process_it_did_not_start(kernel: FakeKernel) -> None:
    job = kernel.make("/gpu-job", ["1", PID])
    placement = place(kernel.mount, "/gpu-job")
    assert placement.way == FALLBACK and placement.parent is None
    assert "1 other process(es) share" in placement.reason
    assert "Delegate=yes" in placement.reason
    assert kernel.procs(job) == ["1", PID] and not (job / LEAF).exists()
    assert (job / "cgroup.subtree_control").read_text() == ""


def test_a_cgroup_without_the_memory_controller_is_left_alone(kernel: FakeKernel) -> None:
    job = kernel.make("/gpu-job", [PID], controllers="pids hugetlb")
    placement = place(kernel.mount, "/gpu-job")
    assert placement.way == FALLBACK and "not given the memory controller" in placement.reason
    assert kernel.procs(job) == [PID] and not (job / LEAF).exists()


def test_a_cgroup_the_site_prepared_is_used_as_it_is(kernel: FakeKernel) -> None:
    kernel.make("/", ["1", PID])
    root = place(kernel.mount, "/")  # the machine's root cgroup: exempt from the rule
    assert (root.parent, root.way) == (kernel.mount, SITE)
    ready = kernel.make("/grading.slice/grader", [], enabled="memory")
    site = place(kernel.mount, "/grading.slice/grader")
    assert (site.parent, site.way) == (ready, SITE)
    assert not (ready / LEAF).exists()


def test_a_systemd_unit_must_be_delegated(
    kernel: FakeKernel, monkeypatch: pytest.MonkeyPatch
) -> None:
    unit = kernel.make("/system.slice/grading.service", [PID])
    refused = place(kernel.mount, "/system.slice/grading.service")
    assert refused.way == FALLBACK and "grading.service" in refused.reason
    assert "Delegate=yes" in refused.reason
    assert kernel.procs(unit) == [PID] and not (unit / LEAF).exists()
    marked = True
    try:  # what systemd 251 and later write on a cgroup it delegated
        os.setxattr(unit, "trusted.delegate", b"1")
    except OSError:  # a file system without trusted attributes: the instructor's word
        marked = False
        monkeypatch.setenv("GRADER_CGROUP", "delegated")
    delegated = place(kernel.mount, "/system.slice/grading.service")
    assert (delegated.parent, delegated.way) == (unit, LEAF_MADE), (marked, delegated)
    assert kernel.procs(unit / LEAF) == [PID]


def test_each_notebooks_cgroup_is_made_under_the_placements_parent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GRADER_CGROUP", raising=False)
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(cgroups, "placement", lambda: Placement(tmp_path, LEAF_MADE, "here"))
    made = cgroups.create("grader-60001", 1 << 30)
    assert made is not None and made.path == tmp_path / "grader-60001" and made.version == 2
    assert (made.path / "memory.max").read_text() == str(int((1 << 30) * (1 + cgroups.SLACK)))


def _sandbox_report(**env: str) -> str:
    """What ``python -m grader sandbox`` says about memory here."""
    proc = subprocess.run(
        [sys.executable, "-m", "grader", "--course", str(ROOT), "sandbox"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, **env},
    )
    return next(line for line in proc.stdout.splitlines() if line.startswith("memory:"))


def test_the_sandbox_command_says_which_path_was_taken() -> None:
    here = _sandbox_report()
    ways = (SITE, LEAF_MADE, "cgroups v1 memory hierarchy", FALLBACK)
    assert any(way in here for way in ways), here
    off = _sandbox_report(GRADER_CGROUP="off")
    assert off.startswith("memory: no cgroup per notebook (fallback: GRADER_CGROUP=off"), off
    assert "mapped shared memory against --memory" in off
    assert "/tmp, /var/tmp and /dev/shm count against --disk and are capped in size" in off


# ---------------------------------------------------------------- the real kernel

DOMAIN_CONTROLLERS = ("memory", "io", "hugetlb", "rdma", "misc")

# Joins BASE, tries the controller there (the rule), then lets place() do its work.
CHILD = r"""
import errno, json, os, sys
from pathlib import Path
from grader.sandbox.cgroup_parent import place
mount, base, controller = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
def own():
    line = next(l for l in open("/proc/self/cgroup") if l.startswith("0::"))
    return line.split("::", 1)[1].strip()
(base / "cgroup.procs").write_text(str(os.getpid()))
try:
    (base / "cgroup.subtree_control").write_text("+" + controller)
    refused = None
except OSError as error:
    refused = errno.errorcode[error.errno]
before = own()
placement = place(mount, before, controller)
print(json.dumps({"refused": refused, "before": before, "after": own(),
                  "way": placement.way, "parent": str(placement.parent),
                  "reason": placement.reason}))
"""


def _real_v2() -> tuple[Path, str] | None:
    """This machine's v2 mount and a domain controller its root offers, where root may write."""
    mount = cgroup_parent.v2_mount()
    if os.geteuid() != 0 or mount is None or not os.access(mount, os.W_OK):
        return None
    offered = (mount / "cgroup.controllers").read_text().split()
    controller = next((c for c in DOMAIN_CONTROLLERS if c in offered), None)
    return (mount, controller) if controller else None


def _child(mount: Path, base: Path, controller: str) -> dict:
    """Run :data:`CHILD` in cgroup *base*; what it saw and what place() answered."""
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(mount), str(base), controller],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(proc.stdout)


@pytest.mark.skipif(
    _real_v2() is None,
    reason="needs root, a writable cgroups v2 and a domain controller in its root",
)
def test_on_this_machines_cgroups_v2_the_leaf_move_is_what_makes_the_controller_possible() -> None:
    mount, controller = _real_v2()
    root_control = mount / "cgroup.subtree_control"
    was_enabled = controller in root_control.read_text().split()
    if not was_enabled:
        try:
            root_control.write_text(f"+{controller}")
        except OSError as error:  # a container's cgroup namespace: its root holds processes
            pytest.skip(f"the cgroups v2 root here cannot give its children {controller}: {error}")
    base = mount / f"grader-test-{os.getpid()}"
    base.mkdir()
    other = subprocess.Popen(["sleep", "60"])
    try:
        (base / "cgroup.procs").write_text(str(other.pid))
        # another process inside: the kernel refuses, the grader moves nothing
        shared = _child(mount, base, controller)
        assert shared["refused"] == "EBUSY", shared
        assert shared["way"] == FALLBACK and "1 other process(es)" in shared["reason"], shared
        assert shared["after"] == shared["before"] and not (base / LEAF).exists()
        assert (base / "cgroup.procs").read_text().split() == [str(other.pid)]
        other.kill()
        other.wait()
        time.sleep(0.1)
        # alone: still refused while inside; the grader moves itself, then the kernel agrees
        alone = _child(mount, base, controller)
        assert alone["refused"] == "EBUSY", alone
        assert alone["way"] == LEAF_MADE and alone["parent"] == str(base), alone
        assert alone["after"] == alone["before"] + f"/{LEAF}", alone
        assert controller in (base / "cgroup.subtree_control").read_text().split()
        notebook = base / "notebook"
        notebook.mkdir()
        assert any(p.name.startswith(f"{controller}.") for p in notebook.iterdir())
        notebook.rmdir()
        # a grading worker started in the leaf afterwards: the same parent, nothing moved
        worker = _child(mount, base / LEAF, controller)
        assert worker["way"] == LEAF_MADE and worker["parent"] == str(base), worker
        assert worker["after"] == worker["before"], worker
    finally:
        other.kill()
        other.wait()
        for cgroup in (base / LEAF, base):
            if cgroup.exists():
                cgroup.rmdir()
        if not was_enabled:
            root_control.write_text(f"-{controller}")
