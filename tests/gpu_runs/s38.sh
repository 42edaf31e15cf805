#!/usr/bin/env bash
# The thirty-eighth session's device calls (tests/gpu_runs/README.md). Argument:
#   grads (any GPU): 7916662's float32 h for 16-bit parameter gradients (ops.py, param_residual):
#          test_gpu.py's test_bfloat16_parameter_gradients and test_gradients_with_shared_parameters
#          (whose comparison it now shares), then param_residual_hlo.py (the Triton launches in the
#          compiled gradient, with and without the parameter's gradient);
#   memcheck (any GPU): memcheck and the plain driver on the 13 calls of s36.sh memcheck and on
#          bfloat16 calls with γ and λ one a row at 131072x7 time-major (one an op) and linear_scan's
#          bfloat16 b of one value (both ids at 7916662);
#   s37 (an H200): s37.sh first;
#   ep_cvec (an H200): time-major bfloat16 episodic sums with 2 columns a thread (COLUMN_VEC_16BIT
#          with episodic_cumsum: 2) against the shipped 1, benchmarks.run at the four T >= 512 shapes,
#          fwd and fwd+bwd, in the order shipped, 2, shipped, 2 (run 13 timed them only with float32's
#          entry: 0.96-1.12x in bfloat16).
what=${1:?usage: s38.sh grads|memcheck|s37|ep_cvec}
source tests/gpu_runs/wheels.sh
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
case "$what" in
  grads)
    SELECT="${GRADS_SELECT:-bfloat16_parameter_gradients or gradients_with_shared_parameters}" LIMIT=${GRADS_S:-300} \
      bash tests/gpu_runs/run.sh /tmp/r
    cp /tmp/r/summary.json "$OUT/run_s38_grads.json"; grep -E "FAILED|ERROR" /tmp/r/pytest.log | head -30
    timeout 120 python3 tests/gpu_runs/param_residual_hlo.py 2>&1 | tail -10;;
  memcheck)
    TOOLS=memcheck JOBS=8 PLAIN_TIMEOUT=100 TOTAL_TIMEOUT=${MC_S:-300} \
      DRIVER_ARGS="--only ${IDS:-937,939,941,943,945,947,949,951,953,955,957,959,961,976,1002,1028,1054,1080,1106,587,613,619}" bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -25
    cp /tmp/s/sanitize_summary.json "$OUT/sanitize_s38.json";;
  s37) bash tests/gpu_runs/s37.sh first;;
  ep_cvec)
    vec='{"gae": 2, "retrace": 2, "lambda_returns": 2, "discounted_returns": 2, "eligibility_traces": 2, '
    vec+='"linear_scan": 2, "episodic_cumsum": 2}'
    for i in 1 2; do
      for v in shipped cvec2; do
        launch=(); [[ $v == cvec2 ]] && launch=(--launch "COLUMN_VEC_16BIT=$vec")
        timeout ${EP_S:-120} python3 -m benchmarks.run --ops episodic_cumsum --impls triton --dtypes bfloat16 \
          --layouts time_major --modes fwd,fwd+bwd --shapes 4096x1024,16384x512,1024x4096,512x4096 \
          "${launch[@]}" --out "$OUT/ep_cvec_${v}_$i.json" 2>&1 | grep -E "episodic|rror" | tail -8
      done
    done;;
esac
date -u
