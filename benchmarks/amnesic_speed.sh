#!/usr/bin/env bash
# The whole `ncprobe run amnesic` command beside plain runs of the same targets (issue 40),
# cold (an empty embedding cache) and warm (the same cache, new results directories), each
# command in its own process: wall seconds and peak resident memory (GNU time), the load
# average before and after. The amnesic run does what the plain runs do three times (plain,
# erased, control) plus the concept's vectors and erasers, so about 3x the plain runs is its
# floor.
#
# Run on an idle machine from the repository root:
#   NCPROBE_DATA=../shared/ncimp/raw bash benchmarks/amnesic_speed.sh [MODEL] [AMNESIC OPTIONS...]
# e.g. `bash benchmarks/amnesic_speed.sh glove-6b-50d` (vectors, targets ncimp,astitch) or
# `bash benchmarks/amnesic_speed.sh minilm --where forward --erase-layer 3 --targets ncimp
# --layers 3,4,5,6` (a `--layers` given is the plain runs' too).
# Writes benchmarks/results/amnesic-speed-<model>-<date>.json and prints a table.
set -euo pipefail
model=${1:-glove-6b-50d}
shift || true
extra=("$@")
targets=ncimp,astitch
plain=()  # the views of the amnesic run, for the plain runs too (the same targets' work)
for ((i = 0; i < ${#extra[@]}; i++)); do
    if [ "${extra[$i]}" = "--targets" ]; then targets=${extra[$((i + 1))]}; fi
    if [ "${extra[$i]}" = "--layers" ]; then plain=(--layers "${extra[$((i + 1))]}"); fi
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=benchmarks/results/amnesic-speed-$(basename "$model")-$(date -u +%Y%m%d).json
mkdir -p benchmarks/results
records=()

timed() {  # name, phase, command...
    local name=$1 phase=$2
    shift 2
    local log="$work/$name-$phase.time"
    /usr/bin/time -f "%e %M" -o "$log" "$@" >/dev/null 2>"$work/$name-$phase.err" || {
        echo "$name ($phase) failed:" >&2
        tail -20 "$work/$name-$phase.err" >&2
        exit 1
    }
    read -r secs kb <"$log"
    records+=("{\"command\": \"$name\", \"phase\": \"$phase\", \"seconds\": $secs, \"peak_mb\": $((kb / 1024))}")
    printf '%-10s %-5s %8.1f s %7d MB\n' "$name" "$phase" "$secs" "$((kb / 1024))"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for phase in cold warm; do
    [ "$phase" = cold ] && rm -rf "$work/cache"
    export NCPROBE_CACHE="$work/cache"
    if [[ ",$targets," == *",ncimp,"* ]]; then
        timed plain-ncimp "$phase" ncprobe compute --model "$model" "${plain[@]}" --out "$work/ncimp-$phase" --quiet
    fi
    if [[ ",$targets," == *",astitch,"* ]]; then
        timed plain-astitch "$phase" ncprobe run astitch --model "$model" "${plain[@]}" --out "$work/astitch-$phase" --quiet
    fi
    timed amnesic "$phase" ncprobe run amnesic --model "$model" "${extra[@]}" --out "$work/amnesic-$phase" --quiet
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)
commit=$(git rev-parse --short HEAD)
{
    printf '{"model": "%s", "options": "%s", "commit": "%s", "date": "%s", "cpus": %s,\n' \
        "$model" "${extra[*]}" "$commit" "$(date -u +%FT%TZ)" "$(nproc)"
    printf ' "load_before": "%s", "load_after": "%s",\n "runs": [\n  ' "$load_before" "$load_after"
    (IFS=$'\n'; echo "${records[*]}" | paste -sd, | sed 's/},{/},\n  {/g')
    printf ' ]}\n'
} >"$out"
echo "load average before: $load_before; after: $load_after; written $out"
