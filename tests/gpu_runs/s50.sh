#!/usr/bin/env bash
# The fiftieth session's device calls (tests/gpu_runs/README.md). Argument:
#   first (any GPU): `vrows`, then `s49.sh second` (memcheck on calls 1174-1175, test_gpu.py on
#          V-trace) in what is left of 570 s;
#   vrows (any GPU): V-trace's other time-major rows that TIME_MAJOR_VECTOR_SPLIT_WARPS =
#          {"vtrace_kernel": 4} moved from 8 warps to 4 (2 columns from 65536 steps, 4 from 32768,
#          6 and 8 from 16384, 10-14 from 8192; tune_h200.md run 33): the benchmark at five such
#          shapes, time-major, both dtypes and modes, triton only, shipped against `{}`, BENCH_S
#          seconds a run.
#   second (any GPU): `whole`, then `vmin`;
#   memcheck (any GPU): compute-sanitizer memcheck and the plain driver on calls 1174-1175 (V-trace's
#          rows of 131072 steps in 8 time-major columns: the forward split at 4 warps), MC_S seconds;
#   whole (any GPU): time-major rows of 128 steps scanned whole in thread order
#          (launch.WHOLE_ROW_THREAD_WARPS 1 and 2: [128, 8] blocks at 1 warp, 4 steps a thread, or
#          2 warps, 2 steps) against the shipped 0 (8 warps, one step a thread): the benchmark at
#          WHOLE_SHAPES (4096x128, 16384x128) time-major, WHOLE_OPS (GAE, Retrace, eligibility traces), float32,
#          fwd and fwd+bwd, WHOLE_S seconds a run;
#   vmin (any GPU): TIME_MAJOR_VECTOR_SPLIT_WARPS_MIN_PROGRAMS (512) at V-trace's rows of 512 and
#          256 programs (12x65536, 6x131072: 4 warps; 8x65536: 8), shipped against `{}`.
what=${1:?usage: s50.sh first, vrows, second, whole, vmin or memcheck}
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name --format=csv,noheader
source tests/gpu_runs/wheels.sh
bench() {  # out tag, ops, shapes, then --launch values (DTYPES: float32,bfloat16 unless given)
  local tag=$1 ops=$2 shp=$3; shift 3
  local args=()
  for l in "$@"; do args+=(--launch "$l"); done
  timeout $((${BENCH_S:-80} + 50)) python3 -m benchmarks.run --impls triton --max-seconds "${BENCH_S:-80}" --ops "$ops" \
    --layouts time_major --dtypes "${DTYPES:-float32,bfloat16}" --modes fwd,fwd+bwd --shapes "$shp" "${args[@]}" \
    --out "$OUT/$tag.json" 2>&1 | grep -E "rror|FAIL" | tail -4
  echo "$tag done at ${SECONDS}s"
}
vshapes=2x65536,4x32768,6x16384,8x16384,12x8192
case "$what" in
  first)
    bash tests/gpu_runs/s50.sh vrows
    left=$((570 - SECONDS))
    MC_S=$((left * 2 / 5)) TEST_S=$((left * 3 / 5 - 30)) bash tests/gpu_runs/s49.sh second;;
  vrows)
    bench vrows_ship vtrace "$vshapes"
    bench vrows_w8 vtrace "$vshapes" 'TIME_MAJOR_VECTOR_SPLIT_WARPS={}';;
  second)
    bash tests/gpu_runs/s50.sh whole
    BENCH_S=$(((500 - SECONDS) / 2 - 30)) bash tests/gpu_runs/s50.sh vmin;;
  whole)
    for w in 0 1 2; do
      DTYPES=float32 BENCH_S=${WHOLE_S:-85} bench "whole_w$w" "${WHOLE_OPS:-gae,retrace,eligibility_traces}" \
        "${WHOLE_SHAPES:-4096x128,16384x128}" "WHOLE_ROW_THREAD_WARPS=$w"
    done;;
  memcheck)
    TOOLS=memcheck JOBS=2 PLAIN_TIMEOUT=$((${MC_S:-300} - 20)) TOTAL_TIMEOUT=${MC_S:-300} \
      DRIVER_ARGS="--only 1174,1175" bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -8
    cp /tmp/s/sanitize_summary.json "$OUT/sanitize_s50_vsplit.json";;
  vmin)
    bench vmin_ship vtrace 12x65536,6x131072,8x65536
    bench vmin_w8 vtrace 12x65536,6x131072,8x65536 'TIME_MAJOR_VECTOR_SPLIT_WARPS={}';;
esac
date -u
