#!/usr/bin/env bash
# The thirty-fifth session's device calls (tests/gpu_runs/README.md, run 30). Argument:
#   h200a (H200 only): the suite's Triton forward rows at N·T >= 2^22 with the kernels of today, the 20
#         fwd+bwd cases run 29 left, then the forward rows of the other shapes in what is left;
#   h200b (H200 only, not run yet): ab_step_vector.sh with ALL=1;
#   tests (any GPU): run.sh, the whole GPU test run;  memcheck (any GPU): the 91 calls alone.
what=${1:?usage: s35.sh h200a|h200b|tests|memcheck}
case "$what" in h200*)
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H200*) ;; *) nvidia-smi -L; exit 0;; esac;;
esac
source tests/gpu_runs/wheels.sh
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi -L; python3 -c "import jax, triton; print(jax.__version__, triton.__version__, jax.devices())"
bench() {  # SECONDS_CAP ARGS...
  local cap=$1; shift
  echo "== bench $* ($(date -u +%T))"
  timeout $((cap + 30)) python3 -m benchmarks.run --impls triton --max-seconds "$cap" "$@" 2>&1 | tail -12
}
memcheck() {  # TOTAL_S
  local ids=312,313,314,315,316,317,318,319,320,321,322,323,324,325,326,327,328,329,330,331,332,333,334,335,336,337,416,417,418,419,420,421,422,423,424,425,426,427,428,429,430,431,432,433,434,435,436,437,438,439,440,441,780,781,782,783,784,785,786,787,788,789,790,791,792,936,937,938,939,940,941,942,943,944,945,946,947,948,949,950,951,952,953,954,955,956,957,958,959,960,961
  echo "== memcheck, ${1}s ($(date -u +%T))"
  TOOLS=memcheck JOBS=8 PLAIN_TIMEOUT=100 TOTAL_TIMEOUT=$1 DRIVER_ARGS="--only $ids" \
    bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -25
  cp /tmp/s/sanitize_summary.json "$OUT/sanitize_hasfeat.json"
}
big=4096x1024,1024x4096,16384x512
case "$what" in
  h200a)
    bench 200 --modes fwd --shapes $big --out "$OUT/fwd_big_s35.json"
    cp benchmarks/results/h200.triton_bwd_big_s34.json "$OUT/bwd_s35.json"
    bench 110 --modes fwd+bwd --ops episodic_cumsum,linear_scan --shapes $big --resume --out "$OUT/bwd_s35.json"
    left=$((500 - SECONDS))
    ((left > 60)) && bench $((left - 30)) --modes fwd --out "$OUT/fwd_other_s35.json" \
      --shapes 512x4096,65536x16,32768x8,8x131072,1x1048576,16384x128,4096x128;;
  h200b) ALL=1 bash tests/gpu_runs/ab_step_vector.sh "$OUT/ab" 560;;
  tests)
    LIMIT=560 bash tests/gpu_runs/run.sh /tmp/r; cp /tmp/r/summary.json "$OUT/run_s35.json"
    grep -E "FAILED|ERROR" /tmp/r/pytest.log | head -30;;
  memcheck) memcheck ${MC_S:-400};;
esac
date -u
