#!/usr/bin/env bash
# The fifty-second session's next device call (tests/gpu_runs/README.md, Left 1 and 2; not yet run).
#   confirm (any GPU): the shipped launch.TIME_MAJOR_CVEC_ALIGNED table as one plan: the benchmark,
#          triton, time-major, at the short rows (32768x8, 65536x16, 4096x128, 16384x128), all
#          eight ops, both dtypes and modes, BENCH_S (240) seconds; compare with
#          benchmarks/results/h100.cvec_aligned_{on,off}_{a,b}_s52.json (run 35). Then
#          test_gpu.py's time-major cases of 4096 and 1024 columns in what is left of 560 s.
what=${1:?usage: s52.sh confirm}
export PYTHONUNBUFFERED=1
case "$what" in
  confirm)
    source tests/gpu_runs/wheels.sh
    timeout $((${BENCH_S:-240} + 30)) python3 -m benchmarks.run --impls triton --max-seconds "${BENCH_S:-240}" \
      --ops vtrace,gae,retrace,lambda_returns,discounted_returns,eligibility_traces,episodic_cumsum,linear_scan \
      --layouts time_major --dtypes float32,bfloat16 --modes fwd,fwd+bwd \
      --shapes 32768x8,65536x16,4096x128,16384x128 --out "$OUT/cvec_table.json" 2>&1 | grep -E "rror|FAIL|stopped" | tail -4
    echo "confirm done at ${SECONDS}s"
    timeout $((560 - SECONDS)) python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu tests/test_gpu.py \
      -k "time_major and (4096 or 1024)" > "$OUT/tm_pytest.log" 2>&1
    grep -E "passed|failed|^FAILED|^E " "$OUT/tm_pytest.log" | tail -8;;
esac
