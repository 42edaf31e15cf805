#!/usr/bin/env bash
# The forty-third session's device call (tests/gpu_runs/README.md): Retrace's γ and λ gradients
# summed in its fused backward (retrace_adjoint_kernel's GAMMA_GRAD, LAMBDA_GRAD). Each step writes
# to $OUT as it goes, so a call cut short keeps what it finished:
#   1. test_gpu.py's Retrace tests that differentiate γ and λ (shared parameters in four forms,
#      some inputs alone with γ and λ alone, bfloat16 parameters), T_S seconds;
#   2. benchmarks.grad_subsets for Retrace at 4096x1024 float32, both layouts, this checkout
#      ("new") then 4529933's rlscan_jax in .old/ ("old": `git archive 4529933 rlscan_jax | tar -x
#      -C .old`, carried), GS_S seconds each (s42.sh's `time`);
#   3. memcheck on the calls that launch retrace_adjoint_kernel with GAMMA_GRAD or LAMBDA_GRAD
#      (`select_calls.py`), MC_S seconds.
# `s43.sh memcheck` (the second call, after sanitize_driver's reference cache was keyed by
# Inputs.wrt and .used: 4 of step 3's calls failed on it): memcheck on the same 68 calls, then on
# the 68 that launch vtrace_adjoint_kernel with GAMMA_GRAD (the forty-second session's change).
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name --format=csv,noheader
source tests/gpu_runs/wheels.sh
# The ids, from `PYTHONPATH=tests python tests/gpu_runs/select_calls.py "retrace_adjoint_kernel,GAMMA_GRAD=1"
# "retrace_adjoint_kernel,GAMMA_GRAD=2" "retrace_adjoint_kernel,LAMBDA_GRAD=2"` on this tree (68 calls).
ids=676-701,858,860-862,864-868,870,872,874-876,878-882,1014,1016-1018,1020-1024,1026,1028,1030-1032,1034-1038
ids=$ids,1151,1153,1155,1157
vids=650-675,832,834-836,838-842,844,846,848-850,852-856,988,990-992,994-998,1000,1002,1004-1006,1008-1012
vids=$vids,1135,1139,1143,1147  # vtrace_adjoint_kernel with GAMMA_GRAD=1 or 2, likewise
memcheck() {
  TOOLS=memcheck JOBS=8 PLAIN_TIMEOUT=90 TOTAL_TIMEOUT=${MC_S:-180} DRIVER_ARGS="--only $1" \
    bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -12
  cp /tmp/s/sanitize_summary.json "$OUT/$2"
}
if [[ ${1:-} == memcheck ]]; then
  memcheck "$ids" sanitize_s43_memcheck_retrace.json
  memcheck "$vids" sanitize_s43_memcheck_vtrace.json
  date -u
  exit
fi
timeout "${T_S:-150}" python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu tests/test_gpu.py \
  -k "retrace and (shared_parameters or some_inputs or bfloat16_parameter)" > "$OUT/retrace_pytest.log" 2>&1
grep -E "passed|failed|^FAILED|^E " "$OUT/retrace_pytest.log" | tail -25
OPS=retrace GS_S=${GS_S:-75} bash tests/gpu_runs/s42.sh time 2>&1 | grep -v "^NVIDIA\|UTC"
memcheck "$ids" sanitize_s43_memcheck.json
date -u
