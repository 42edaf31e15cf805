#!/usr/bin/env bash
# Times the same benchmark rows under two tritons in one process tree on the GPU machine: the
# triton carried by triton37_carry.sh (unpacked in SITE, default /tmp/site37, with jax-triton
# 0.4.1) and the image's (with the jax-triton of .whl/, as run.sh uses it), one after the other.
# Usage, from the repository root: bash tests/gpu_runs/triton_ab.sh OUT TAG ARGS...
#   writes OUT.carried_TAG.json and OUT.image_TAG.json (benchmarks.run --out) with ARGS passed
#   to benchmarks.run (e.g. --impls triton --ops gae --modes fwd), carried first.
# The records' header says which triton and jax-triton ran them. Triton 3.9 on a machine whose
# CUDA toolkit is older than its ptxas: see triton37_carry.sh (TRITON_PTXAS_BLACKWELL_PATH).
set -euo pipefail
out=${1:?usage: triton_ab.sh OUT TAG ARGS...}
tag=${2:?usage: triton_ab.sh OUT TAG ARGS...}
shift 2
site=${SITE:-/tmp/site37}
[ -d "$site/triton" ] || { echo "no triton in $site (see triton37_carry.sh)"; exit 1; }
# TRITON_DEFAULT_FP_FUSION: triton 3.9 warns when it is unset (and fuses, as 3.6 does).
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false TRITON_DEFAULT_FP_FUSION=${TRITON_DEFAULT_FP_FUSION:-1}
base=$PWD
PYTHONPATH=$site:$base python3 -m benchmarks.run --out "$out.carried_$tag.json" "$@"
(source tests/gpu_runs/wheels.sh && python3 -m benchmarks.run --out "$out.image_$tag.json" "$@")
