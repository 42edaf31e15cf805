#!/usr/bin/env bash
# The forty-second session's device calls (tests/gpu_runs/README.md). Every result is written to
# $OUT as it comes (grad_subsets rewrites its JSON after each case), so a call cut short keeps what
# it finished. Argument:
#   subsets (any GPU): test_gpu.py's test_gradients_of_some_inputs (the 15 cases, the V-trace one
#          that failed in s41.sh grads among them), then timing as `time` for GAE;
#   time (any GPU): benchmarks.grad_subsets for OPS (default gae) at 4096x1024, both layouts, DTYPES
#          (default float32), each subset, from this checkout ("new") and from 4529933's
#          rlscan_jax in .old/ with this checkout's benchmarks ("old": `git archive 4529933
#          rlscan_jax | tar -x -C .old`, carried), new then old, GS_S seconds each;
#   memcheck (any GPU): as s41.sh memcheck (calls 1118-1173);
#   verify (any GPU): test_gpu.py's V-trace gradient tests (V-trace's γ and λ summed in its fused
#          backward, GAMMA_GRAD and LAMBDA_GRAD), then `time` for V-trace (new and old) and GAE (new
#          alone: its "first" cases failed their gate in `subsets`, fixed since: ops._mark).
what=${1:?usage: s42.sh subsets, time, memcheck or verify}
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name --format=csv,noheader
source tests/gpu_runs/wheels.sh
timing() {
  [ -d .old/rlscan_jax ] || { echo "no .old/rlscan_jax"; return 1; }
  rm -rf /tmp/ab && mkdir -p /tmp/ab && cp -r benchmarks /tmp/ab/ && cp -r .old/rlscan_jax /tmp/ab/
  local versions="new old"
  [ -n "${NEW_ONLY:-}" ] && versions=new
  for op in ${OPS:-gae}; do
    for v in $versions; do
      dir=$PWD; [[ $v == old ]] && dir=/tmp/ab
      (cd "$dir" && PYTHONPATH=/tmp/site:$dir timeout "${GS_S:-90}" python3 -m benchmarks.grad_subsets --ops "$op" \
        --dtypes "${DTYPES:-float32}" --shapes 4096x1024 --out "$OUT/gs_${op}_$v.json") 2>&1 | tail -9
    done
  done
}
case "$what" in
  subsets)
    timeout "${T_S:-150}" python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu tests/test_gpu.py \
      -k test_gradients_of_some_inputs > "$OUT/subsets_pytest.log" 2>&1
    grep -E "passed|failed|^FAILED|^E " "$OUT/subsets_pytest.log" | tail -25
    timing;;
  time) timing;;
  verify)
    timeout "${T_S:-150}" python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu tests/test_gpu.py \
      -k "vtrace and (gradients or parameter)" > "$OUT/vtrace_pytest.log" 2>&1
    grep -E "passed|failed|^FAILED|^E " "$OUT/vtrace_pytest.log" | tail -25
    OPS=vtrace timing
    OPS=gae NEW_ONLY=1 timing;;
  memcheck)
    TOOLS=memcheck JOBS=8 PLAIN_TIMEOUT=100 TOTAL_TIMEOUT=${MC_S:-330} DRIVER_ARGS="--only 1118-1173" \
      bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -12
    cp /tmp/s/sanitize_summary.json "$OUT/sanitize_s42_memcheck.json";;
esac
date -u
