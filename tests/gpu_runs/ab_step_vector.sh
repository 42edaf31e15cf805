#!/usr/bin/env bash
# γ and λ one a time step read as a [BT] vector (form 4, launch.STEP_VECTOR_KERNELS) against the
# block of T addresses (form 2), timed in one call with benchmarks.param_forms at 4096x1024
# (tune_h200.md, run 26). Usage, from the repository root on the GPU machine (.whl carried):
#   bash tests/gpu_runs/ab_step_vector.sh OUTDIR [LIMIT_S]
# Writes OUTDIR/pf_<name>.json, time-major, "time" form: shipped (all nine kernels), block
# (STEP_VECTOR_KERNELS=()), offpolicy_block (V-trace and Retrace with their kernels' block load,
# the table of the thirty-second session), then all (every op, layout, mode and form as shipped)
# in what is left of LIMIT_S (default 560 s) unless ALL=0. Run 26 ran this script's version of
# 02c04b8 (the six-kernel table, with Retrace's kernels or V-trace's adjoint added).
source tests/gpu_runs/wheels.sh
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
out=${1:?usage: ab_step_vector.sh OUTDIR [LIMIT_S]}
limit=${2:-560}
mkdir -p "$out"
six='"gae_kernel","vtrace_kernel","returns_kernel","linear_kernel","adjoint_kernel","linear_adjoint_kernel"'
pf() {  # NAME ARGS...: one param_forms run at 4096x1024, cut off at what is left of the limit
  local name=$1; shift
  local left=$((limit - SECONDS))
  ((left > 20)) || { echo "== $name: skipped, ${left}s left"; return; }
  echo "== $name ($(date -u +%T), ${left}s left)"
  timeout "$left" python3 -m benchmarks.param_forms --shapes 4096x1024 --out "$out/pf_$name.json" "$@" 2>&1 \
    | grep -E "µs|wrote|Error|error" | tail -40
}
tm=(--layouts time_major --forms time)
pf shipped "${tm[@]}"
pf block "${tm[@]}" --launch 'STEP_VECTOR_KERNELS=()'
pf offpolicy_block --ops vtrace,retrace "${tm[@]}" --launch "STEP_VECTOR_KERNELS=($six)"
[ "${ALL:-1}" = 1 ] && pf all
date -u
