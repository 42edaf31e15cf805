#!/usr/bin/env bash
# Register caps and warps prepared on the CPU in the twenty-ninth session (tune_h200.md, "Prepared
# for the next GPU session: waves and register caps"), timed against HEAD in one call.
# Usage, from the repository root on the GPU machine (.whl carried):
#   bash tests/gpu_runs/ab_caps.sh OUTDIR [CONFIG ...]      (default: base caps base caps)
# CONFIG: base (the shipped plans), caps (CAPS below), columns (CAPS and COLUMNS). Each config
# runs three benchmark groups (v, l, r below) into OUTDIR/h200.<config><k>_<group>_s29.json, k its
# turn, and the tarball $TGZ (default OUTDIR.tgz; give it a path under $OUT, OUTDIR one outside:
# the device returns 8 files at most) is rewritten after each config, so a call cut short keeps
# what it finished.
# Compiled for sm_90 beforehand (registers, spills, waves): 2026-12-04-cpu-kernel-resources-s29-*.md.
source tests/gpu_runs/wheels.sh
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
out=${1:?usage: ab_caps.sh OUTDIR [CONFIG ...]}
shift
tgz=${TGZ:-$out.tgz}
configs=("$@")
((${#configs[@]})) || configs=(base caps base caps)
mkdir -p "$out"
# V-trace's adjoint PHASE 2: in time-major column blocks 71 -> 64 registers (1.29 -> 0.97 waves at
# 512 blocks; 8 B spill), in long rows' blocks 146-159 -> 128 (two blocks an SM, 0-68 B spill);
# linear_kernel's rows of 4096 steps 76 (bfloat16) / 78-96 (adjoint launches) -> 64; the returns'
# adjoint at 4 warps in [1024, 1] blocks.
CAPS=(
  --launch 'SPLIT_REGISTERS={"vtrace_adjoint_kernel": {(2, 4, 256, 8): 64, (2, 512, 4, 8): 128, (2, 2048, 1, 8): 128, (2, 256, 8, 8): 128}}'
  --launch 'ROW_REGISTERS={"vtrace_kernel": {(4096, 16): 64, (1024, 4): 64}, "retrace_adjoint_kernel": {(4096, 16): 64}, "linear_kernel": {(4096, 8): 64}}'
  --launch 'ONE_ROW_BLOCK_KERNELS=("adjoint_kernel",)'
)
# CAPS, and every column-block launch at 1.29-1.55 waves at 16384x512 capped at 32 (one wave).
COLUMNS=(
  --launch 'SPLIT_REGISTERS={"vtrace_adjoint_kernel": {(2, 4, 256, 8): 64, (1, 4, 256, 8): 32, (2, 512, 4, 8): 128, (2, 2048, 1, 8): 128, (2, 256, 8, 8): 128}, "vtrace_kernel": {(1, 4, 256, 8): 32, (2, 4, 256, 8): 32}, "adjoint_kernel": {(2, 4, 256, 8): 32}}'
  "${CAPS[@]:2}"
)
bench() { python3 -m benchmarks.run --impls triton "$@" 2>&1 | tail -3; }
declare -A turn
for c in "${configs[@]}"; do
  case $c in
    base) args=() ;;
    caps) args=("${CAPS[@]}") ;;
    columns) args=("${COLUMNS[@]}") ;;
    *) echo "unknown config $c"; exit 2 ;;
  esac
  k=$((${turn[$c]:-0} + 1)); turn[$c]=$k
  name=$out/h200.$c${k}
  date -u; echo "== $c ($k)"
  # v: V-trace fwd+bwd, every shape the caps touch and the batch-major rows as controls
  bench --ops vtrace --modes fwd+bwd --shapes 4096x1024,1024x4096,16384x512,512x4096,8x131072,1x1048576 \
    --layouts time_major,batch_major --out "${name}_v_s29.json" "${args[@]}"
  # l: linear_kernel's rows of 4096 steps
  bench --ops eligibility_traces,episodic_cumsum,linear_scan --modes fwd,fwd+bwd --shapes 1024x4096,512x4096 \
    --layouts batch_major --out "${name}_l_s29.json" "${args[@]}"
  # r: the returns' adjoint in [1024, 1] blocks; the column blocks at 16384x512 (columns)
  bench --ops gae,lambda_returns,discounted_returns --modes fwd+bwd --shapes 4096x1024,16384x512 \
    --layouts time_major,batch_major --out "${name}_r_s29.json" "${args[@]}"
  tar czf "$tgz" -C "$out" .
done
date -u
