#!/usr/bin/env bash
# Tunes several ops side by side on one GPU: one tune.py process per op (compiling in parallel,
# timing one at a time under a shared lock, see tune.py), then prints the per-shape summary.
# Usage, from the repository root on the GPU machine: bash tests/gpu_runs/tune_all.sh OUTDIR MODE OPS
# (MODE as tune.py's: time_major, columns, vector, or all; OPS comma-separated)
# LIMIT (seconds, default 300) bounds every process; each writes OUTDIR/tune-MODE-OP.{json,log}
# after every shape, so a process cut off keeps what it measured. Two tune_all.sh side by side share
# the GPU's timing lock when TUNE_LOCK names one file for both. PACK=1 packs OUTDIR into
# OUTDIR.tgz and removes it (the device tool returns at most 8 files from $OUT).
set -u
out=${1:?usage: tune_all.sh OUTDIR MODE OPS}
mode=${2:?mode}
ops=${3:?ops}
mkdir -p "$out"
source tests/gpu_runs/wheels.sh
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false TUNE_LOCK=${TUNE_LOCK:-$(mktemp /tmp/tune_lock.XXXXXX)}
[ "$mode" = all ] && mode=
pids=()
for op in ${ops//,/ }; do
  timeout -k 5 "${LIMIT:-300}" python3 tests/gpu_runs/tune.py "$out/tune-${mode:-all}-$op.json" "$op" $mode \
    >"$out/tune-${mode:-all}-$op.log" 2>&1 &
  pids+=($!)
done
wait "${pids[@]}"
python3 tests/gpu_runs/tune.py --summary "$out"/tune-"${mode:-all}"-*.json
if [ "${PACK:-0}" = 1 ]; then
  tar czf "$out.tgz" -C "$(dirname "$out")" "$(basename "$out")" && rm -rf "$out"
fi
