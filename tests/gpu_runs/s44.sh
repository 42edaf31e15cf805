#!/usr/bin/env bash
# The forty-fourth session's device call (tests/gpu_runs/README.md):
#   1. memcheck and the plain driver on V-trace's two GAMMA_GRAD calls that differed from the
#      reference in s43.sh memcheck (657 and 846, vtrace-nv-131072x7-ax0-float32: log ρ = -8.0e-8
#      at the clip's kink), now with triton_variants' log_rhos clear of the kinks, MC_S seconds;
#   2. s41.sh grads: test_gpu.py's gradient, vmap and determinism tests, T_S seconds.
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name --format=csv,noheader
source tests/gpu_runs/wheels.sh
TOOLS=memcheck JOBS=2 PLAIN_TIMEOUT=90 TOTAL_TIMEOUT=${MC_S:-120} DRIVER_ARGS="--only ${IDS:-657,846}" \
  bash tests/gpu_runs/sanitize.sh /tmp/s 2>&1 | tail -12
cp /tmp/s/sanitize_summary.json "$OUT/sanitize_s44_kink.json"
T_S=${T_S:-330} bash tests/gpu_runs/s41.sh grads 2>&1 | tail -8
date -u
