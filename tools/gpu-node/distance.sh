#!/usr/bin/env bash
# The distance-matrix benchmarks of chapters 3 and 4 on this GPU node, with their figures.
#   tools/gpu-node/distance.sh OUTDIR [quick|reference]        (default: quick, ~2 min)
# quick:     small sizes, the per-call overhead against torch.cdist, the kernel table
# reference: the sizes shipped in demos/results (~10 min), the chunked run on a
#            matrix 3.4x the device budget, and the rows/pairs/quads tuning grid
# Writes the JSON files and PNGs into OUTDIR (docs/benchmarks.md quotes them), and the
# original course's measurements*.json derived from the sweep. To ship a new
# reference, copy the JSON and PNG files into demos/results/ and measurements*.json
# into demos/ (where the original course's notebook reads them).
set -uo pipefail
source "$(dirname "$0")/common.sh"
mode=${1:-quick}
status=0
if [[ $mode == quick ]]; then
    "$PY" -m demos bench distance --sizes 64,1024,4096 --repeats 3 --compat --memory 27000 \
        --chunked 4 --device-memory-fraction 0.005 --overhead --output "$OUTDIR" --no-progress || status=1
    "$PY" -m demos bench kernels --sweep none --output "$OUTDIR" || status=1
elif [[ $mode == reference ]]; then
    "$PY" -m demos bench distance --sizes reference --repeats 5 --compat \
        --memory 27000 --chunked 24 --device-memory-fraction 0.05 --overhead \
        --output "$OUTDIR" --no-progress || status=1
    "$PY" -m demos bench kernels --sweep grid --output "$OUTDIR" || status=1
else
    echo "unknown mode $mode: quick or reference" >&2
    exit 2
fi
"$PY" -m demos plot --input "$OUTDIR" --output "$OUTDIR" || status=1
exit "$status"
