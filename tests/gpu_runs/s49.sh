#!/usr/bin/env bash
# The forty-ninth session's device calls (tests/gpu_runs/README.md). Argument:
#   first (any GPU): `ab`, then `memcheck` in what is left of 560 s;
#   ab (any GPU): V-trace's vectorised split of time-major rows of few columns ([256, 8] blocks at
#          8 warps, one row a thread, so no thread order) at other warps and blocks, per kernel
#          (launch.TIME_MAJOR_VECTOR_SPLIT_WARPS / _ELEMS): the benchmark at 8 x 131072 time-major,
#          V-trace, both dtypes and modes, triton only, BENCH_S seconds a run; the shipped plan first
#          and last (drift);
#   memcheck (any GPU): compute-sanitizer memcheck and the plain driver on 16 of the 263 calls that
#          launch time-major rows in thread order (select_calls.py "LAYOUT=0,VEC=4" "LAYOUT=0,VEC=2"
#          on 06b2dc2, every 16th; IDS overrides), MC_S seconds;
#   second (any GPU), with {"vtrace_kernel": 4} shipped: memcheck on calls 1174-1175 (V-trace's rows
#          of 32768 steps in 8 time-major columns, the split at 4 warps), then `verify`;
#   h200 (an H200 only): the 8 x 131072 time-major rows re-timed for h200.json;
#   verify (any GPU): test_gpu.py on V-trace and the long rows (TEST_S seconds).
what=${1:?usage: s49.sh first, ab, memcheck, second, h200 or verify}
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name --format=csv,noheader
source tests/gpu_runs/wheels.sh
bench() {  # tag, then --launch values
  local tag=$1; shift
  local args=()
  for l in "$@"; do args+=(--launch "$l"); done
  timeout $((${BENCH_S:-60} + 50)) python3 -m benchmarks.run --impls triton --max-seconds "${BENCH_S:-60}" --ops vtrace \
    --layouts time_major --dtypes float32,bfloat16 --modes fwd,fwd+bwd --shapes 8x131072 "${args[@]}" \
    --out "$OUT/vsplit_$tag.json" 2>&1 | grep -E "rror|FAIL" | tail -4
  echo "$tag done at ${SECONDS}s"
}
both='{"vtrace_kernel": 4, "vtrace_adjoint_kernel": 4}'
elems='{"vtrace_kernel": 4096, "vtrace_adjoint_kernel": 4096}'
case "$what" in
  first)
    bash tests/gpu_runs/s49.sh ab
    MC_S=$((560 - SECONDS)) bash tests/gpu_runs/s49.sh memcheck;;
  ab)
    bench ship 'TIME_MAJOR_VECTOR_SPLIT_WARPS={}'
    bench w4fwd 'TIME_MAJOR_VECTOR_SPLIT_WARPS={"vtrace_kernel": 4}'
    bench w4 "TIME_MAJOR_VECTOR_SPLIT_WARPS=$both"
    bench e8 "TIME_MAJOR_VECTOR_SPLIT_ELEMS=$elems"
    bench e4 "TIME_MAJOR_VECTOR_SPLIT_WARPS=$both" "TIME_MAJOR_VECTOR_SPLIT_ELEMS=$elems"
    bench ship2 'TIME_MAJOR_VECTOR_SPLIT_WARPS={}';;
  memcheck)
    TOOLS=memcheck JOBS=4 PLAIN_TIMEOUT=80 TOTAL_TIMEOUT=${MC_S:-230} \
      DRIVER_ARGS="--only ${IDS:-4,66,142,213,275,368,446,509,585,656,730,800,872,950,1027,1105}" \
      bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -8
    cp /tmp/s/sanitize_summary.json "$OUT/sanitize_s49_${MC_TAG:-thread_order}.json";;
  second)
    IDS=1174,1175 MC_S=${MC_S:-130} MC_TAG=vsplit bash tests/gpu_runs/s49.sh memcheck
    TEST_S=${TEST_S:-170} bash tests/gpu_runs/s49.sh verify;;
  h200)
    nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 1; }
    timeout 200 python3 -m benchmarks.run --impls triton --max-seconds 150 --layouts time_major \
      --shapes 8x131072 --out "$OUT/h200_tm_8x131072.json" 2>&1 | grep -E "rror|FAIL|wrote" | tail -4;;
  verify)
    timeout "${TEST_S:-200}" python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu tests/test_gpu.py \
      -k "vtrace and (131072 or 65536 or 32768 or time_major)" > "$OUT/vtrace_pytest.log" 2>&1
    grep -E "passed|failed|^FAILED|^E " "$OUT/vtrace_pytest.log" | tail -8;;
esac
date -u
