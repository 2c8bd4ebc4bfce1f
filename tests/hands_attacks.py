"""The cells the students of ``test_grader_hands`` add to the solution: each an attack.

Code strings only, filled in by the test (``COURSE``, ``VICTIM``, ``BACKUP``
stand for paths it makes); the test says what the grader must do with each.
"""

LINKS = r"""
import os
from pathlib import Path
here = Path.cwd()
for name, target in {
    "gradebook.db": COURSE + "/gradebook.db",
    "nbgrader_config.py": COURSE + "/nbgrader_config.py",
    "solutions": COURSE + "/solutions",
    "alice": COURSE + "/submitted/alice",
    "root": "/",
}.items():
    try:
        os.symlink(target, here / name)
    except OSError as error:
        print("no link", name, type(error).__name__)
# the notebook itself becomes a link to a file only root may write
try:
    (here / "simt.ipynb").unlink()
    os.symlink(VICTIM, here / "simt.ipynb")
    print("notebook replaced by a link")
except OSError as error:
    print("kept notebook", type(error).__name__)
"""

BACKUP_READER = r"""
try:
    print("BACKUP READ", open(BACKUP).read())
except OSError as error:
    print("no backup", type(error).__name__)
"""

LINK_READER = r"""
try:
    print("LINK READ", open("handed-link.txt").read())
except OSError as error:
    print("no link", type(error).__name__)
"""

SHARED_MEMORY = r"""
import mmap
block = mmap.mmap(-1, 1400 << 20, flags=mmap.MAP_SHARED | mmap.MAP_ANONYMOUS)
for offset in range(0, len(block), 4096):
    block[offset] = 1
"""

TMP_FILES = r"""
with open("/tmp/filler", "wb") as f:
    for _ in range(14):
        f.write(b"x" * (100 << 20))
"""

FOLDER_FILES = r"""
for n in range(5):
    with open(f"filler-{n}", "wb") as f:
        for _ in range(4):
            f.write(b"x" * (100 << 20))
"""

# under each file system's size cap, over the disk limit together (and over the memory cgroup)
SPREAD = r"""
import time
for folder in ("/dev/shm", "/tmp"):
    with open(f"{folder}/filler", "wb") as f:
        for _ in range(9):
            f.write(b"x" * (100 << 20))
time.sleep(5)
"""

EXITS = "import os\nos._exit(3)"

# more CPU time than --cpu allows: cells that would each run until their time limit
# (15 s or more), twelve of them, so that a kernel starved of CPU on a busy machine
# still reaches the limit before the cells' limits let it be graded
BURNS = ["while True:\n    pass"] * 12

# more processes than --processes allows; the limit answers, the notebook goes on
FORKS = r"""
import subprocess
started = []
try:
    for _ in range(200):
        started.append(subprocess.Popen(["sleep", "60"]))
except OSError as error:
    print("STOPPED AT", len(started), type(error).__name__)
for process in started:
    process.kill()
    process.wait()
"""
