#!/usr/bin/env bash
# The thirty-eighth session's device calls (tests/gpu_runs/README.md). Argument:
#   grads (any GPU): 7916662's float32 h for 16-bit parameter gradients (ops.py, param_residual):
#          test_gpu.py's test_bfloat16_parameter_gradients and test_gradients_with_shared_parameters
#          (whose comparison it now shares), then param_residual_hlo.py (the Triton launches in the
#          compiled gradient, with and without the parameter's gradient);
#   memcheck (any GPU): memcheck and the plain driver on the 13 calls of s36.sh memcheck and on
#          bfloat16 calls with γ and λ one a row at 131072x7 time-major (one an op) and linear_scan's
#          bfloat16 b of one value (both ids at 7916662);
#   s37 (an H200): s37.sh first.
what=${1:?usage: s38.sh grads|memcheck|s37}
source tests/gpu_runs/wheels.sh
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
case "$what" in
  grads)
    SELECT="bfloat16_parameter_gradients or gradients_with_shared_parameters" LIMIT=${GRADS_S:-300} \
      bash tests/gpu_runs/run.sh /tmp/r
    cp /tmp/r/summary.json "$OUT/run_s38_grads.json"; grep -E "FAILED|ERROR" /tmp/r/pytest.log | head -30
    timeout 120 python3 tests/gpu_runs/param_residual_hlo.py 2>&1 | tail -10;;
  memcheck)
    TOOLS=memcheck JOBS=8 PLAIN_TIMEOUT=100 TOTAL_TIMEOUT=${MC_S:-300} \
      DRIVER_ARGS="--only ${IDS:?IDS: the calls' ids}" bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -25
    cp /tmp/s/sanitize_summary.json "$OUT/sanitize_s38.json";;
  s37) bash tests/gpu_runs/s37.sh first;;
esac
date -u
