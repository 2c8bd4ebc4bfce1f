#!/usr/bin/env bash
# Execute every course notebook top to bottom on a lent GPU machine, with nbclient.
# Run from the repository root with `.whl` carried (nbclient, nbformat, ipykernel,
# keras, ... as wheels):   bash tools/device/notebooks.sh [course/03-*.ipynb ...]
# Writes under $OUT: notebooks.log (per notebook: status, seconds, first error),
# notebooks.json (the same as data), and executed/<name>.ipynb with outputs,
# so the GPU paths of the chapters (timings, plots) can be inspected.
# The whole run stops after NOTEBOOKS_TIMEOUT seconds (default 540).
# There is no TensorFlow on the device: chapter 5 runs on Keras' JAX backend.
set -u
source tools/device/setup.sh || exit 1
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/executed"
if [[ $# -gt 0 ]]; then notebooks=("$@"); else notebooks=(course/*.ipynb); fi

timeout "${NOTEBOOKS_TIMEOUT:-540}" python3 - "$OUT" "${notebooks[@]}" <<'PY' 2>&1 | grep -v "^I0000\|^WARNING: All log" | tee "$OUT/notebooks.log"
import json
import sys
import time
import traceback
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

out = Path(sys.argv[1])
results = []
for name in sys.argv[2:]:
    path = Path(name)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    status, error = "ok", None
    try:
        client.execute()
    except CellExecutionError as exc:
        status, error = "failed", str(exc).strip().splitlines()[-1]
    except Exception as exc:  # a kernel that dies or times out
        status, error = "failed", f"{type(exc).__name__}: {exc}"
        traceback.print_exc()
    seconds = time.perf_counter() - start
    nbformat.write(nb, out / "executed" / path.name)
    results.append({"notebook": path.name, "status": status, "seconds": round(seconds, 1), "error": error})
    print(f"{status:6s} {seconds:7.1f} s  {path.name}" + (f"\n       {error}" if error else ""), flush=True)
(out / "notebooks.json").write_text(json.dumps(results, indent=2) + "\n")
failed = [r["notebook"] for r in results if r["status"] != "ok"]
print(f"{len(results) - len(failed)} of {len(results)} notebooks ran without error" + (f"; failed: {failed}" if failed else ""))
sys.exit(1 if failed else 0)
PY
exit "${PIPESTATUS[0]}"
