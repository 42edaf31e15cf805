#!/usr/bin/env bash
# The forty-fourth session's device call (tests/gpu_runs/README.md):
#   1. memcheck and the plain driver on V-trace's two GAMMA_GRAD calls that differed from the
#      reference in s43.sh memcheck (657 and 846, vtrace-nv-131072x7-ax0-float32: log ρ = -8.0e-8
#      at the clip's kink), now with triton_variants' log_rhos clear of the kinks, MC_S seconds;
#   2. s41.sh grads: test_gpu.py's gradient, vmap and determinism tests, T_S seconds.
# `s44.sh traces` (the second call): test_gpu.py's test_trace_parameter_gradients, T_S seconds, then
# memcheck and the plain driver on the 13 calls that launch
# linear_kernel with DECAY_GRAD (eligibility traces' γ and λ summed in their adjoint; ids from
# `select_calls.py "linear_kernel,DECAY_GRAD=1" "linear_kernel,DECAY_GRAD=2"` on e60a35c), MC_S
# seconds, then grad_subsets for eligibility traces new against 4529933 (s42.sh time), GS_S each.
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name --format=csv,noheader
source tests/gpu_runs/wheels.sh
if [[ ${1:-} == traces ]]; then
  timeout "${T_S:-60}" python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu tests/test_gpu.py \
    -k test_trace_parameter_gradients > "$OUT/traces_pytest.log" 2>&1
  grep -E "passed|failed|^FAILED|^E " "$OUT/traces_pytest.log" | tail -12
  TOOLS=memcheck JOBS=8 PLAIN_TIMEOUT=60 TOTAL_TIMEOUT=${MC_S:-110} DRIVER_ARGS="--only 767-779" \
    bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -12
  cp /tmp/s/sanitize_summary.json "$OUT/sanitize_s44_traces.json"
  OPS=eligibility_traces DTYPES=${DTYPES:-float32} GS_S=${GS_S:-80} bash tests/gpu_runs/s42.sh time 2>&1 | grep -v "^NVIDIA"
  exit
fi
TOOLS=memcheck JOBS=2 PLAIN_TIMEOUT=90 TOTAL_TIMEOUT=${MC_S:-120} DRIVER_ARGS="--only ${IDS:-657,846}" \
  bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -12
cp /tmp/s/sanitize_summary.json "$OUT/sanitize_s44_kink.json"
T_S=${T_S:-330} bash tests/gpu_runs/s41.sh grads 2>&1 | tail -8
date -u
