#!/usr/bin/env bash
# Run the nbgrader assignments on a GPU (device tool, `.whl` carried), from the repo root:
#   bash tools/device/exercises.sh
# Executes every solution notebook in solutions/ (visible AND hidden tests run,
# so each must finish without an error) and every released notebook in
# exercises/ (blank: each must fail in a test cell), with nbclient. On a GPU the
# notebooks use CuPy, the real devices and compiled Numba kernels instead of
# NumPy and the simulator. Log and a JSON summary go to $OUT.
set -u
source tools/device/setup.sh || { echo "setup failed"; exit 1; }
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT/executed"
python3 - "$OUT" <<'PY' 2>&1 | tee "$OUT/exercises.log"
import json, sys, time, traceback
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

out = Path(sys.argv[1])
summary = {}
for folder, must_pass in (("solutions", True), ("exercises", False)):
    for path in sorted(Path(folder).glob("*/*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        start = time.perf_counter()
        error = None
        try:
            NotebookClient(nb, timeout=300, kernel_name="python3",
                           resources={"metadata": {"path": str(path.parent)}}).execute()
        except CellExecutionError as exc:
            error = str(exc).splitlines()[-1] if str(exc) else repr(exc)
        except Exception:
            error = traceback.format_exc(limit=3)
        seconds = round(time.perf_counter() - start, 2)
        ok = (error is None) if must_pass else (error is not None)
        summary[str(path)] = {"ok": ok, "seconds": seconds, "error": error}
        print(f"{'OK  ' if ok else 'FAIL'} {path} ({seconds} s){'' if error is None else ': ' + error[:300]}", flush=True)
        nbformat.write(nb, str(out / "executed" / f"{folder}-{path.name}"))
(out / "exercises.json").write_text(json.dumps(summary, indent=2))
sys.exit(0 if all(v["ok"] for v in summary.values()) else 1)
PY
exit "${PIPESTATUS[0]}"
