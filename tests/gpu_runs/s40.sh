#!/usr/bin/env bash
# The fortieth session's device calls (tests/gpu_runs/README.md). Argument:
#   check (any GPU): test_gpu.py's gradient tests (γ and λ in every form, bfloat16 parameter
#          gradients, vmap, determinism), with γ's and λ's gradients now summed inside the fused
#          backward of GAE, λ-returns and discounted returns and linear_scan's b of one value or one a
#          row likewise; then memcheck and the plain driver on the calls that launch those variants
#          (IDS: tests/gpu_runs/select_calls.py GAMMA_GRAD=1 GAMMA_GRAD=2 HAS_DB=2);
#   time (any GPU): param_forms fwd+bwd, GAE, λ-returns and discounted returns at 4096x1024 both
#          layouts, γ (and λ) one value, one a row, one a time step, float32 and bfloat16 inputs, from
#          this checkout ("new") and from 49b4cbe's rlscan_jax and benchmarks in .old/ ("old", `git
#          archive 49b4cbe rlscan_jax benchmarks | tar -x -C .old`, carried): with --param-grads
#          new, old, new, old; then with the parameters held (traced, not differentiated) new, old.
#   again (any GPU; after the first two, on the time-major rule of ops._param_grads_fused): the
#          gradient tests of `check` with a longer limit (T_S), then param_forms fwd+bwd
#          --param-grads new, old, new, old for linear_scan (b one value, one a row, one a time step;
#          d b summed in the launch for the first two) and for the returns' time-major rows with γ one
#          a time step (now u and the reference's vjp again, as old).
#   final (any GPU; on the committed kernels, after the code motion into _next_value): racecheck
#          and the plain driver on the 14 calls that cover every (kernel, phase, layout) launching the
#          segment sums (RC_IDS: a greedy cover of `select_calls.py`
#          "adjoint_kernel,GAMMA_GRAD=2" "linear_adjoint_kernel,HAS_DB=2"), then
#          test_bfloat16_parameter_gradients and test_gradients_with_shared_parameters.
what=${1:?usage: s40.sh check, time, again or final}
source tests/gpu_runs/wheels.sh
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name --format=csv,noheader
pf() {  # TAG DIR [ARGS...]: param_forms on the returns ops from DIR's rlscan_jax and benchmarks
  local tag=$1 dir=$2
  shift 2
  (cd "$dir" && PYTHONPATH=/tmp/site:$PWD timeout "${PF_S:-100}" python3 -m benchmarks.param_forms \
    --ops gae,lambda_returns,discounted_returns --shapes 4096x1024 --layouts time_major,batch_major \
    --modes fwd+bwd --forms scalar,row,time --dtypes float32,bfloat16 "$@" --out "$OUT/pf_$tag.json") 2>&1 |
    grep -E "wrote|rror" | tail -3
}
case "$what" in
  check)
    SELECT="gpu and (gradients or vmap or deterministic)" LIMIT=${T_S:-240} bash tests/gpu_runs/run.sh /tmp/r
    cp /tmp/r/summary.json "$OUT/run_s40_grads.json"; grep -E "FAILED|ERROR" /tmp/r/pytest.log | head -20
    TOOLS=memcheck JOBS=8 PLAIN_TIMEOUT=100 TOTAL_TIMEOUT=${MC_S:-200} \
      DRIVER_ARGS="--only ${IDS:?set IDS}" bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -12
    cp /tmp/s/sanitize_summary.json "$OUT/sanitize_s40.json";;
  final)
    TOOLS=racecheck JOBS=8 PLAIN_TIMEOUT=100 TOTAL_TIMEOUT=${RC_S:-150} \
      DRIVER_ARGS="--only ${RC_IDS:-572,574,576,578,580,582,588,624,625,626,627,628,629,632}" \
      bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -10
    cp /tmp/s/sanitize_summary.json "$OUT/sanitize_s40_racecheck.json"
    SELECT="gpu and (bfloat16_parameter_gradients or gradients_with_shared_parameters)" LIMIT=${T_S:-120} \
      bash tests/gpu_runs/run.sh /tmp/r
    cp /tmp/r/summary.json "$OUT/run_s40_final.json"; grep -E "FAILED|ERROR" /tmp/r/pytest.log | head -20;;
  again)
    [ -d .old/rlscan_jax ] || { echo "no .old/rlscan_jax"; exit 1; }
    SELECT="gpu and (gradients or vmap or deterministic)" LIMIT=${T_S:-420} bash tests/gpu_runs/run.sh /tmp/r
    cp /tmp/r/summary.json "$OUT/run_s40_grads_2.json"; grep -E "FAILED|ERROR" /tmp/r/pytest.log | head -20
    grep -E "passed|failed" /tmp/r/pytest.log | tail -2
    for i in 1 2; do
      for v in new old; do
        dir=.; [[ $v == old ]] && dir=.old
        pf "ls_${v}_$i" $dir --param-grads --ops linear_scan --forms scalar,row,time
        pf "tmtime_${v}_$i" $dir --param-grads --layouts time_major --forms time
      done
    done;;
  time)
    [ -d .old/rlscan_jax ] || { echo "no .old/rlscan_jax"; exit 1; }
    for i in 1 2; do
      pf "used_new_$i" . --param-grads
      pf "used_old_$i" .old --param-grads
    done
    pf held_new .
    pf held_old .old;;
esac
date -u
