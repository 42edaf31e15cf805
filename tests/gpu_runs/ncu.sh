#!/usr/bin/env bash
# Nsight Compute on the kernels of a few slow benchmark cases (the GPU machine; carry .whl).
# Usage: bash tests/gpu_runs/ncu.sh OUTDIR ["OP NxT LAYOUT [DTYPE]" ...]
# Writes OUTDIR/<case>.txt: speed of light, memory workload, launch statistics, occupancy and
# warp stall reasons of every Triton kernel launch of the case's three calls (clock control off,
# so the clocks are those the kernels really run at). LAUNCH="NAME=VALUE ..." profiles a plan that is
# not shipped (ncu_case.py), TAG=name is appended to the file names. NCU_ARGS adds ncu options, e.g.
# NCU_ARGS="--cache-control none" keeps the caches between the kernels of a call (ncu flushes them
# before every kernel it profiles by default, which hides the L2 between a split's passes).
set -u
out=${1:?usage: ncu.sh OUTDIR [cases]}
shift
mkdir -p "$out"
source tests/gpu_runs/wheels.sh
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
[ -n "$ncu" ] || { echo "ncu not found"; exit 1; }
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=("gae 1024x4096 batch_major" "gae 4096x128 time_major" "gae 8x131072 batch_major")
for c in "${cases[@]}"; do
  read -r op nt layout dtype <<<"$c"
  dtype=${dtype:-float32}
  name="${op}_${nt}_${layout}_${dtype}${TAG:+_$TAG}"
  timeout 180 "$ncu" --clock-control none ${NCU_ARGS:-} --kernel-name regex:'_kernel$' \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \
    --section WarpStateStats python3 tests/gpu_runs/ncu_case.py $op $nt $layout $dtype >"$out/$name.txt" 2>&1
  echo "$name: rc=$? $(grep -c 'Duration' "$out/$name.txt") kernel profiles"
done
