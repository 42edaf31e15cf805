#!/usr/bin/env bash
# The thirty-sixth session's device calls (tests/gpu_runs/README.md, run 31). Argument:
#   first: on an H200, ab_step_vector.sh with ALL=1 (the H200's numbers for run 26's table);
#          on any other GPU, the "gpu" part below;
#   gpu (any GPU): run.sh on test_gpu.py alone;  rest (any GPU): run.sh on the other tests of "triton";
#   traces (any GPU): eligibility traces' adjoint reading a γ or λ that varies in time a step later
#          (the fused backward, no longer the reference's vjp): test_gpu.py's eligibility traces
#          tests, then param_forms for eligibility traces at 4096x1024;
#   memcheck (any GPU): memcheck and the plain driver on the 13 calls that launch that backward
#          (select_calls.py linear_kernel,REVERSE=True,HAS_RESET=True,HAS_DECAY=True,GAMMA_FULL=4 and
#          the same with GAMMA_FULL=2, LAMBDA_FULL=4, LAMBDA_FULL=2: ids at 465b5fb; none before it).
# Run 30's single run.sh call met its 560 s limit about 46 tests short, hence the two parts.
what=${1:?usage: s36.sh first|gpu|rest|traces|memcheck}
if [[ $what == first ]]; then
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H200*) what=h200b;; *) what=gpu;; esac
fi
source tests/gpu_runs/wheels.sh
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi -L; python3 -c "import jax, triton; print(jax.__version__, triton.__version__, jax.devices())"
tests() {  # SELECT NAME
  SELECT="$1" LIMIT=560 bash tests/gpu_runs/run.sh /tmp/r; cp /tmp/r/summary.json "$OUT/run_s36_$2.json"
  grep -E "FAILED|ERROR" /tmp/r/pytest.log | head -30
}
case "$what" in
  h200b) ALL=1 bash tests/gpu_runs/ab_step_vector.sh "$OUT/ab" 560;;
  gpu) tests gpu gpu;;
  rest) tests "triton and not gpu" rest;;
  traces)
    SELECT="gpu and eligibility_traces" LIMIT=${TRACES_S:-90} bash tests/gpu_runs/run.sh /tmp/r
    cp /tmp/r/summary.json "$OUT/run_s36_traces.json"; grep -E "FAILED|ERROR" /tmp/r/pytest.log | head
    timeout 60 python3 -m benchmarks.param_forms --shapes 4096x1024 --ops eligibility_traces \
      --forms scalar,time,full --out "$OUT/pf_traces.json" 2>&1 | grep -E "µs|wrote|rror";;
  memcheck)
    TOOLS=memcheck JOBS=8 PLAIN_TIMEOUT=100 TOTAL_TIMEOUT=${MC_S:-200} \
      DRIVER_ARGS="--only 937,939,941,943,945,947,949,951,953,955,957,959,961" \
      bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -25
    cp /tmp/s/sanitize_summary.json "$OUT/sanitize_traces.json";;
esac
date -u
