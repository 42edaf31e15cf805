#!/usr/bin/env bash
# The forty-fifth session's owed device call (tests/gpu_runs/README.md): memcheck and the plain
# driver on the calls that launch linear_kernel with DECAY_GRAD as shipped (eligibility traces'
# batch-major rows without an initial trace; ids from `select_calls.py "linear_kernel,DECAY_GRAD=1"
# "linear_kernel,DECAY_GRAD=2"` on 91b7e68, recompute after any change to triton_variants), MC_S
# seconds, then test_gpu.py -k eligibility, T_S seconds.
# `s45.sh caps`: the lead for time-major rows, eligibility traces' γ/λ sums (off there: 0.91x) with
# their adjoint PHASE 2 ([4, 256] blocks, 4 warps; 46 registers with DECAY_GRAD, 32 without) capped
# by SPLIT_REGISTERS. grad_subsets "params" at 4096x1024 time-major float32, one process each
# (GS_S seconds): sums off; on uncapped; on at 40 (8 B of spill, sm_90 here); on at 32 (84 B).
# Ran in the forty-sixth session (H100): off 63.5/64.2 us, uncapped 69.9/69.6, 40: 75.7, 32: 78.8; closed
# (tune_h200.md, run 30).
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name --format=csv,noheader
source tests/gpu_runs/wheels.sh
if [[ ${1:-} == caps ]]; then
  for v in off on:0 on:40 on:32 off2 on2:0; do
    timeout "${GS_S:-100}" python3 -c "import sys
from rlscan_jax._src.triton import launch
v = sys.argv[1]
if v.startswith('on'):
    launch.FUSED_TRACE_PARAM_GRADS = (0, 1, 2)
    cap = int(v.split(':')[1])
    if cap:
        launch.SPLIT_REGISTERS = {**launch.SPLIT_REGISTERS, 'linear_kernel': {(2, 4, 256, 4): cap}}
from benchmarks import grad_subsets
sys.exit(grad_subsets.main(['--ops', 'eligibility_traces', '--layouts', 'time_major', '--subsets', 'params',
                            '--windows', '7', '--out', sys.argv[2]]))" "$v" "$OUT/gsc_${v/:/_}.json" 2>&1 | tail -3
  done
  exit
fi
TOOLS=memcheck JOBS=3 PLAIN_TIMEOUT=80 TOTAL_TIMEOUT=${MC_S:-150} DRIVER_ARGS="--only ${IDS:-768,770,771,777,778}" \
  bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -8
cp /tmp/s/sanitize_summary.json "$OUT/sanitize_s45_decay.json"
timeout "${T_S:-200}" python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu tests/test_gpu.py -k eligibility \
  > "$OUT/et_pytest.log" 2>&1
grep -E "passed|failed|^FAILED|^E " "$OUT/et_pytest.log" | tail -8
date -u
