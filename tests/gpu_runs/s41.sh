#!/usr/bin/env bash
# The forty-first session's device calls (tests/gpu_runs/README.md). Argument:
#   race (any GPU): the fortieth session's owed racecheck, with the plain driver, on the 14 calls
#          that cover every (kernel, phase, layout) launching the segment sums of the fused
#          parameters' gradients (RC_IDS, as s40.sh final), with a budget of its own (RC_S), then
#          test_bfloat16_parameter_gradients and test_gradients_with_shared_parameters (T_S);
#   grads (any GPU): test_gpu.py's gradient, vmap and determinism tests complete (T_S), with
#          test_gradients_of_some_inputs (the fused backward writing only the gradients asked for);
#   time (any GPU): benchmarks.grad_subsets at 4096x1024, both layouts, float32, the five ops with a
#          selective backward (ops.SELECTIVE), each subset (all, critic, params, first), from this
#          checkout ("new") and from 4529933's rlscan_jax in .old/ with this checkout's benchmarks
#          ("old": `git archive 4529933 rlscan_jax | tar -x -C .old`, carried), new, old, new, old.
#   last (any GPU; the 228 s of device time left after `time` ran out unwritten): the case of
#          test_gradients_of_some_inputs that failed in `grads` (V-trace batch-major 4096x33), its
#          log written at once, then grad_subsets on GAE time-major alone, new then old.
#   memcheck (any GPU): memcheck and the plain driver on the 56 calls that differentiate some inputs
#          or use one output (triton_variants.calls()[1118:1174], Inputs.wrt and Inputs.used).
what=${1:?usage: s41.sh race, grads, time, last or memcheck}
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name --format=csv,noheader
case "$what" in
  race)
    TOOLS=racecheck JOBS=8 PLAIN_TIMEOUT=100 TOTAL_TIMEOUT=${RC_S:-330} \
      DRIVER_ARGS="--only ${RC_IDS:-572,574,576,578,580,582,588,624,625,626,627,628,629,632}" \
      bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -12
    cp /tmp/s/sanitize_summary.json "$OUT/sanitize_s41_racecheck.json"
    SELECT="gpu and (bfloat16_parameter_gradients or gradients_with_shared_parameters)" LIMIT=${T_S:-200} \
      bash tests/gpu_runs/run.sh /tmp/r
    cp /tmp/r/summary.json "$OUT/run_s41_race.json"; grep -E "FAILED|ERROR" /tmp/r/pytest.log | head -20;;
  grads)
    SELECT="gpu and (gradients or vmap or deterministic)" LIMIT=${T_S:-540} bash tests/gpu_runs/run.sh /tmp/r
    cp /tmp/r/summary.json "$OUT/run_s41_grads.json"; grep -E "FAILED|ERROR" /tmp/r/pytest.log | head -20
    grep -E "passed|failed" /tmp/r/pytest.log | tail -2;;
  last)
    source tests/gpu_runs/wheels.sh
    timeout 90 python3 -m pytest -q -p no:cacheprovider -x -m gpu tests/test_gpu.py -k "test_gradients_of_some_inputs and vtrace-4096" \
      > "$OUT/last_pytest.log" 2>&1
    grep -E "passed|failed|Error|assert" "$OUT/last_pytest.log" | tail -15
    rm -rf /tmp/ab && mkdir -p /tmp/ab && cp -r benchmarks /tmp/ab/ && cp -r .old/rlscan_jax /tmp/ab/
    for v in new old; do
      dir=$PWD; [[ $v == old ]] && dir=/tmp/ab
      (cd "$dir" && PYTHONPATH=/tmp/site:$dir timeout 70 python3 -m benchmarks.grad_subsets --ops gae \
        --layouts time_major --shapes 4096x1024 --out "$OUT/gs_last_$v.json") 2>&1 | tail -6
    done;;
  memcheck)
    TOOLS=memcheck JOBS=8 PLAIN_TIMEOUT=100 TOTAL_TIMEOUT=${MC_S:-330} DRIVER_ARGS="--only 1118-1173" \
      bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -12
    cp /tmp/s/sanitize_summary.json "$OUT/sanitize_s41_memcheck.json";;
  time)
    [ -d .old/rlscan_jax ] || { echo "no .old/rlscan_jax"; exit 1; }
    source tests/gpu_runs/wheels.sh
    rm -rf /tmp/ab && mkdir -p /tmp/ab && cp -r benchmarks /tmp/ab/ && cp -r .old/rlscan_jax /tmp/ab/
    for i in 1 2; do
      for v in new old; do
        dir=$PWD; [[ $v == old ]] && dir=/tmp/ab
        (cd "$dir" && PYTHONPATH=/tmp/site:$dir timeout "${GS_S:-130}" python3 -m benchmarks.grad_subsets \
          --shapes 4096x1024 --out "$OUT/gs_${v}_$i.json") 2>&1 | grep -E "wrote|rror|FAILED" | tail -4
      done
    done;;
esac
date -u
