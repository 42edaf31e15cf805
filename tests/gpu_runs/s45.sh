#!/usr/bin/env bash
# The forty-fifth session's owed device call (tests/gpu_runs/README.md): memcheck and the plain
# driver on the calls that launch linear_kernel with DECAY_GRAD as shipped (eligibility traces'
# batch-major rows without an initial trace; ids from `select_calls.py "linear_kernel,DECAY_GRAD=1"
# "linear_kernel,DECAY_GRAD=2"` on 91b7e68, recompute after any change to triton_variants), MC_S
# seconds, then test_gpu.py -k eligibility, T_S seconds.
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name --format=csv,noheader
source tests/gpu_runs/wheels.sh
TOOLS=memcheck JOBS=3 PLAIN_TIMEOUT=80 TOTAL_TIMEOUT=${MC_S:-150} DRIVER_ARGS="--only ${IDS:-768,770,771,777,778}" \
  bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -8
cp /tmp/s/sanitize_summary.json "$OUT/sanitize_s45_decay.json"
timeout "${T_S:-200}" python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu tests/test_gpu.py -k eligibility \
  > "$OUT/et_pytest.log" 2>&1
grep -E "passed|failed|^FAILED|^E " "$OUT/et_pytest.log" | tail -8
date -u
