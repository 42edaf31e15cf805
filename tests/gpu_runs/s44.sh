#!/usr/bin/env bash
# The forty-fourth session's device call (tests/gpu_runs/README.md):
#   1. memcheck and the plain driver on V-trace's two GAMMA_GRAD calls that differed from the
#      reference in s43.sh memcheck (657 and 846, vtrace-nv-131072x7-ax0-float32: log ρ = -8.0e-8
#      at the clip's kink), now with triton_variants' log_rhos clear of the kinks, MC_S seconds;
#   2. s41.sh grads: test_gpu.py's gradient, vmap and determinism tests, T_S seconds.
# `s44.sh traces` (ran in the forty-fifth session; README): eligibility traces' γ and λ summed in
# their adjoint launch (linear_kernel's DECAY_GRAD, behind launch.FUSED_TRACE_PARAM_GRADS, then off):
# test_gpu.py's test_trace_parameter_gradients (which turns it on), T_S seconds, then grad_subsets
# for eligibility traces at 4096x1024, both layouts, float32 and bfloat16, off, on, off, on in one
# call (GS_S seconds each). Turn it on where it wins, then memcheck the calls that launch it
# (`select_calls.py "linear_kernel,DECAY_GRAD=1" "linear_kernel,DECAY_GRAD=2"` on that tree).
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name --format=csv,noheader
source tests/gpu_runs/wheels.sh
if [[ ${1:-} == traces ]]; then
  timeout "${T_S:-120}" python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu tests/test_gpu.py \
    -k test_trace_parameter_gradients > "$OUT/traces_pytest.log" 2>&1
  grep -E "passed|failed|^FAILED|^E " "$OUT/traces_pytest.log" | tail -12
  for v in off on off2 on2; do
    timeout "${GS_S:-80}" python3 -c "import sys
from rlscan_jax._src.triton import launch
launch.FUSED_TRACE_PARAM_GRADS = (0, 1, 2) if sys.argv[1].startswith('on') else ()
from benchmarks import grad_subsets
sys.exit(grad_subsets.main(['--ops', 'eligibility_traces', '--dtypes', 'float32,bfloat16', '--shapes', '4096x1024',
                            '--out', sys.argv[2]]))" "$v" "$OUT/gs_traces_$v.json" 2>&1 | tail -9
    done
  exit
fi
TOOLS=memcheck JOBS=2 PLAIN_TIMEOUT=90 TOTAL_TIMEOUT=${MC_S:-120} DRIVER_ARGS="--only ${IDS:-657,846}" \
  bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -12
cp /tmp/s/sanitize_summary.json "$OUT/sanitize_s44_kink.json"
T_S=${T_S:-330} bash tests/gpu_runs/s41.sh grads 2>&1 | tail -8
date -u
