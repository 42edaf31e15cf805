#!/usr/bin/env bash
# The forty-seventh session's device calls (tests/gpu_runs/README.md). Argument:
#   verify (any GPU): run.sh on the tree as it is (the whole GPU suite, RUN_S seconds), the first
#          full run since the fifth of December and the first with launch.call's explicit
#          enable_fp_fusion=True (3220d25);
#   graphs (any GPU): the in-jit loop with and without XLA capturing it into CUDA graphs
#          (--xla_gpu_graph_min_graph_size=1; run 20 timed it on a synthetic loop only): the light
#          ops' batch-major rows, where the in-jit target misses most, triton only, the default
#          flags then the flag, PAIRS times (default 2; BENCH_S seconds a run);
#   proto (any GPU): proto_rows.py, K consecutive steps a thread for time-major rows of few
#          columns, against the shipped block's layout and a copy (block-local scans only);
#   first (any GPU): the owed check of the explicit enable_fp_fusion=True (test_gpu.py's
#          oracle and register-cap tests, TEST_S seconds), proto, then one pair of graphs;
#   h200 (an H200): s39.sh h200, carried over since the thirty-ninth session.
# Ran in the forty-seventh session (an H100; tests/gpu_runs/README.md): first (326 passed; proto
# 1.23-1.52x; the flag's in-jit pair median 1.02x) and verify at RUN_S=470 (2300 passed, 0 failed,
# cut at 92 %). h200 not run: no H200 was lent.
what=${1:?usage: s47.sh verify, first, graphs, proto or h200}
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name --format=csv,noheader
case "$what" in
  verify)
    LIMIT=${RUN_S:-520} bash tests/gpu_runs/run.sh "$OUT/run" | tail -12;;
  first)
    source tests/gpu_runs/wheels.sh
    timeout "${TEST_S:-200}" python3 -m pytest -q -n 4 -m gpu -p no:cacheprovider tests/test_gpu.py \
      -k "test_matches_oracle or test_register_caps_compile_into_the_ptx" 2>&1 | tail -4 | tee "$OUT/fp_fusion_tests.txt"
    bash tests/gpu_runs/s47.sh proto
    PAIRS=1 BENCH_S=${BENCH_S:-90} bash tests/gpu_runs/s47.sh graphs;;
  proto)
    source tests/gpu_runs/wheels.sh
    timeout "${PROTO_S:-120}" python3 tests/gpu_runs/proto_rows.py "$OUT/proto_rows.json" 2>&1 | grep -v Warning | tail -8;;
  graphs)
    source tests/gpu_runs/wheels.sh
    for i in $(seq "${PAIRS:-2}"); do
      for v in default graphs; do
        flags=""; [[ $v == graphs ]] && flags="--xla_gpu_graph_min_graph_size=1"
        XLA_FLAGS="$flags" timeout $((${BENCH_S:-100} + 40)) python3 -m benchmarks.run --impls triton --max-seconds "${BENCH_S:-100}" \
          --ops eligibility_traces,episodic_cumsum,discounted_returns,lambda_returns \
          --layouts batch_major --dtypes float32,bfloat16 --modes fwd,fwd+bwd --shapes 16384x512,4096x1024 \
          --out "$OUT/graphs_${v}_$i.json" 2>&1 | grep -E "rror" | tail -4
      done
    done;;
  h200) bash tests/gpu_runs/s39.sh h200;;
esac
