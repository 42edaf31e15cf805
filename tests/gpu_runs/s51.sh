#!/usr/bin/env bash
# The fifty-first session's device calls (tests/gpu_runs/README.md; no machine was lent that session,
# so they ran in the fifty-second: `cvec` three times, at 13e1b1c, where TIME_MAJOR_CVEC_ALIGNED
# was a bool; it is now a table, kernel name -> least steps, so `cvec` as written no longer parses:
# it is kept as it ran (s52.sh times the table). Argument:
#   cvec (any GPU): launch.TIME_MAJOR_CVEC_ALIGNED (vector loads across the columns of time-major rows
#          of N a multiple of 16, which load one element an instruction as shipped) on against off:
#          the benchmark at CVEC_SHAPES (the short time-major rows: 32768x8, 65536x16, 4096x128,
#          16384x128), CVEC_OPS (default GAE, V-trace, Retrace, eligibility traces; the other four
#          in a second call), both dtypes and modes, triton only, BENCH_S (250) seconds a run;
#   first (any GPU): `s50.sh whole` (WHOLE_S 70), then `s50.sh memcheck` in what is left of 570 s;
#   second (any GPU): `s50.sh vmin` (BENCH_S 90), then `s50.sh memcheck` in what is left.
what=${1:?usage: s51.sh cvec, first or second}
export PYTHONUNBUFFERED=1
case "$what" in
  cvec)
    source tests/gpu_runs/wheels.sh
    for on in True False; do
      timeout $((${BENCH_S:-250} + 30)) python3 -m benchmarks.run --impls triton --max-seconds "${BENCH_S:-250}" \
        --ops "${CVEC_OPS:-gae,vtrace,retrace,eligibility_traces}" --layouts time_major --dtypes float32,bfloat16 \
        --modes fwd,fwd+bwd --shapes "${CVEC_SHAPES:-32768x8,65536x16,4096x128,16384x128}" \
        --launch "TIME_MAJOR_CVEC_ALIGNED=$on" --out "$OUT/cvec_$on.json" 2>&1 | grep -E "rror|FAIL|stopped" | tail -4
      echo "cvec $on done at ${SECONDS}s"
    done
    date -u;;
  first)
    WHOLE_S=${WHOLE_S:-70} bash tests/gpu_runs/s50.sh whole
    MC_S=$((560 - SECONDS)) bash tests/gpu_runs/s50.sh memcheck;;
  second)
    BENCH_S=${BENCH_S:-90} bash tests/gpu_runs/s50.sh vmin
    MC_S=$((560 - SECONDS)) bash tests/gpu_runs/s50.sh memcheck;;
esac
