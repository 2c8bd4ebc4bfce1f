"""Execute one notebook top to bottom in its own folder and save it with its outputs.

    python tools/gpu-node/execute_notebook.py NOTEBOOK.ipynb OUTPUT.ipynb [TIMEOUT_S]

Uses nbclient (what ``jupyter nbconvert --execute`` runs underneath), so it
needs only the kernel and nbclient, not the whole Jupyter stack. A cell that
raises stops the run; the notebook is saved up to there either way, and the
exit status is 1.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError


def execute(source: Path, target: Path, timeout: int = 600) -> bool:
    """Run *source* in its folder (as JupyterLab would) and write the result to *target*."""
    notebook = nbformat.read(source, as_version=4)
    client = NotebookClient(
        notebook,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(source.resolve().parent)}},
    )
    start = time.perf_counter()
    ok = True
    try:
        client.execute()
    except CellExecutionError as error:
        print(str(error).strip().splitlines()[-1][:300])
        ok = False
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    print(f"{source.name}: {'ok' if ok else 'failed'} in {time.perf_counter() - start:.1f} s")
    return ok


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3):
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    timeout = int(argv[2]) if len(argv) == 3 else 600
    return 0 if execute(Path(argv[0]), Path(argv[1]), timeout) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
