#!/bin/bash
# The GPU throughput table of docs/guide/speed.md, in one command on a machine with a CUDA GPU
# and no network: random-weight stand-ins of minilm and a 0.82B LLaMA (benchmarks/standins.py),
# then benchmarks/encode_throughput.py per model, dtype and batching, for this tree and, with
# BASELINE set to an older ncprobe checkout, for that one (the same script on its code).
#
# usage: NCPROBE_DATA=DIR bash benchmarks/gpu_throughput.sh MINILM_FILES [rows|baseline]...
#   MINILM_FILES: minilm's files without its weights (config, tokenizer, pooling modules)
#   rows: this tree, batches of a count and ncprobe's automatic token budget, the last four
#     layers and (layer by layer) --layers all; each row prints ncprobe against both floors
#     (tokfloor: each batch tokenised as it runs; devfloor: the forward passes alone);
#   baseline: $BASELINE's code, batches of a count
# On a machine without network, benchmarks/offline_bundle.sh gathers MINILM_FILES, the data,
# the wheels and a baseline beforehand.
set -euo pipefail
files=$1; shift
work=${WORK:-/tmp/ncprobe-gpu}
mkdir -p "$work"
here=$(cd "$(dirname "$0")/.." && pwd)
export PYTHONUNBUFFERED=1
[ -d "$work/minilm" ] || python3 "$here/benchmarks/standins.py" minilm "$work/minilm" --files "$files" --device cuda
[ -d "$work/llama" ] || python3 "$here/benchmarks/standins.py" llama "$work/llama" --files "$files" --device cuda

bench() {  # tree, model, dtype, options of encode_throughput.py...
    local tree=$1 model=$2 dtype=$3; shift 3
    echo "=== $(basename "$tree") $model $dtype $*"
    PYTHONPATH="$tree${PYTHONPATH:+:$PYTHONPATH}" python3 "$here/benchmarks/encode_throughput.py" \
        --model "$work/$model" --device cuda --dtype "$dtype" "$@" 2>&1 \
        | grep -v -E "Loading weights|Warning|warn\(" || true
}

for what in "$@"; do
    case $what in
        rows)
            bench "$here" minilm float16 --batch-tokens 0 --batch-size 32 --naive-contexts 0
            bench "$here" minilm float16 --naive-contexts 5
            bench "$here" minilm bfloat16 --batch-tokens 0 --batch-size 128 --naive-contexts 0
            bench "$here" llama bfloat16 --batch-tokens 0 --batch-size 32 --naive-contexts 0 \
                --repeat 2
            bench "$here" llama bfloat16 --batch-tokens 0 --batch-size 128 --naive-contexts 0
            bench "$here" llama bfloat16 --naive-contexts 5
            bench "$here" minilm float16 --layers all --naive-contexts 0
            bench "$here" llama bfloat16 --layers all --naive-contexts 0 ;;
        rows-more)
            bench "$here" minilm float32 --naive-contexts 0
            bench "$here" llama float16 --naive-contexts 0 ;;
        baseline)
            base=${BASELINE:?set BASELINE to the older checkout}
            bench "$base" minilm float16 --batch-size 32 --naive-contexts 0
            bench "$base" llama bfloat16 --batch-size 32 --naive-contexts 0 --repeat 2
            bench "$base" llama bfloat16 --batch-size 128 --naive-contexts 0 ;;
        *) echo "unknown: $what" >&2; exit 2 ;;
    esac
done
