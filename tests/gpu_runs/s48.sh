#!/usr/bin/env bash
# The forty-eighth session's device calls (tests/gpu_runs/README.md). Argument:
#   first (any GPU): the time-major rows in thread order (launch.THREAD_STEPS_TIME_MAJOR, common.
#          thread_order): test_gpu.py on the shapes whose rows take it (the look-back of 131072,
#          65536 and 32768 steps in few columns; TEST_S seconds), then `ab`;
#   ab (any GPU): the benchmark at 8 x 131072 time-major, every op, both dtypes and modes, triton
#          only, THREAD_STEPS_TIME_MAJOR=1 (the kernels as before) then the shipped 4 (BENCH_S
#          seconds a run);
#   verify (any GPU): run.sh, the whole GPU suite (RUN_S seconds).
what=${1:?usage: s48.sh first, ab or verify}
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name --format=csv,noheader
case "$what" in
  first)
    source tests/gpu_runs/wheels.sh
    timeout "${TEST_S:-220}" python3 -m pytest -q -n 4 -m gpu -p no:cacheprovider tests/test_gpu.py \
      -k "131072 or 65536 or 32768" 2>&1 | tail -6 | tee "$OUT/thread_order_tests.txt"
    bash tests/gpu_runs/s48.sh ab;;
  ab)
    source tests/gpu_runs/wheels.sh
    for k in 1 4; do
      timeout $((${BENCH_S:-120} + 40)) python3 -m benchmarks.run --impls triton --max-seconds "${BENCH_S:-120}" \
        --layouts time_major --dtypes float32,bfloat16 --modes fwd,fwd+bwd --shapes 8x131072 \
        --launch THREAD_STEPS_TIME_MAJOR=$k --out "$OUT/thread_steps_$k.json" 2>&1 | grep -E "rror|FAIL" | tail -4
    done;;
  verify)
    LIMIT=${RUN_S:-520} bash tests/gpu_runs/run.sh "$OUT/run" | tail -12;;
esac
