#!/usr/bin/env bash
# The thirty-ninth session's device calls (tests/gpu_runs/README.md). Argument:
#   check (any GPU): s38.sh grads on the 12 linear_scan bfloat16 cases of
#          test_bfloat16_parameter_gradients (ba5505e's tolerance, not yet run on a GPU), then
#          s38.sh memcheck (the 13 calls owed since 465b5fb and 9 that run the float32 rerun);
#   time (any GPU; an H200 for the tables): the float32 rerun's cost where a parameter's gradient is
#          used (param_forms --dtypes float32,bfloat16, with and without --param-grads, GAE and
#          linear_scan at 4096x1024 and 1024x4096 time-major, γ one value and one a row), then on
#          an H200 s38.sh s37 (traces timing, Retrace one a row);
#   ep_cvec (an H200): s38.sh ep_cvec, each of its four runs cut at EP_S seconds;
#   adj (any GPU; an H200 for the tables): launch.ADJOINT_COLUMN_VEC_16BIT, 2 columns a thread in
#          the adjoint of bfloat16 episodic sums: test_gpu.py's episodic sums, benchmarks.run fwd+bwd at
#          the four T >= 512 time-major shapes in the order shipped, without, shipped, without
#          (ADJOINT_COLUMN_VEC_16BIT={}), memcheck and the plain driver on the calls that launch the
#          new variants (ADJ_IDS), then on an H200 s38.sh s37;
#   h200 (an H200; the next session's, tests/gpu_runs/README.md "Left ... thirty-ninth session"):
#          s38.sh s37, then bfloat16 episodic sums at the four T >= 512 time-major shapes, fwd and
#          fwd+bwd, as shipped against ADJOINT_COLUMN_VEC_16BIT={} (shipped, off, shipped, off). The
#          shipped runs' fwd+bwd rows are the ones to merge into h200.json:
#          python -m benchmarks.report benchmarks/results/h200.json NEW.json --merged-out ...
what=${1:?usage: s39.sh check, time, ep_cvec, adj or h200}
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name --format=csv,noheader
adj_ab() {  # MODES PREFIX SECONDS: bfloat16 episodic sums as shipped against ADJOINT_COLUMN_VEC_16BIT={}
  source tests/gpu_runs/wheels.sh
  for i in 1 2; do
    for v in shipped off; do
      launch=(); [[ $v == off ]] && launch=(--launch "ADJOINT_COLUMN_VEC_16BIT={}")
      timeout "$3" python3 -m benchmarks.run --ops episodic_cumsum --impls triton --dtypes bfloat16 \
        --layouts time_major --modes "$1" --shapes 4096x1024,16384x512,1024x4096,512x4096 \
        "${launch[@]}" --out "$OUT/${2}_${v}_$i.json" 2>&1 | grep -E "rror" | tail -4
    done
  done
}
case "$what" in
  check)
    GRADS_SELECT="bfloat16_parameter_gradients and linear_scan" GRADS_S=${GRADS_S:-150} bash tests/gpu_runs/s38.sh grads
    MC_S=${MC_S:-270} bash tests/gpu_runs/s38.sh memcheck;;
  time)
    source tests/gpu_runs/wheels.sh
    for grads in held used; do
      flag=(); [[ $grads == used ]] && flag=(--param-grads)
      timeout ${RERUN_S:-90} python3 -m benchmarks.param_forms --ops gae,linear_scan --shapes 4096x1024,1024x4096 \
        --layouts time_major --modes fwd+bwd --forms scalar,row --dtypes float32,bfloat16 "${flag[@]}" \
        --out "$OUT/pf_rerun_$grads.json" 2>&1 | grep -E "µs|wrote|rror"
    done
    case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in
      *H200*) bash tests/gpu_runs/s38.sh s37;;
    esac;;
  ep_cvec) EP_S=${EP_S:-120} bash tests/gpu_runs/s38.sh ep_cvec;;
  adj)
    SELECT="gpu and episodic_cumsum" LIMIT=${ADJ_TEST_S:-120} bash tests/gpu_runs/run.sh /tmp/r
    cp /tmp/r/summary.json "$OUT/run_s39_episodic.json"; grep -E "FAILED|ERROR" /tmp/r/pytest.log | head
    adj_ab fwd+bwd adj "${EP_S:-80}"
    TOOLS=memcheck JOBS=8 PLAIN_TIMEOUT=100 TOTAL_TIMEOUT=${MC_S:-200} \
      DRIVER_ARGS="--only ${ADJ_IDS:?set ADJ_IDS}" bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -12
    cp /tmp/s/sanitize_summary.json "$OUT/sanitize_s39_adj.json"
    case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H200*) bash tests/gpu_runs/s38.sh s37;; esac;;
  h200)
    case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H200*) ;; *) echo "not an H200"; exit 1;; esac
    bash tests/gpu_runs/s38.sh s37
    adj_ab fwd,fwd+bwd h200_adj "${EP_S:-90}";;
esac
date -u
