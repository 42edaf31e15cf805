#!/usr/bin/env bash
# Issue #7 on a machine with two or more GPUs (the lent nvidia-h200-x2): the scaling measurement
# (benchmarks/multi_gpu.py: 1 device vs all, batch-sharded, Auto and Explicit meshes) and then
# the sharding scenarios with the real Triton kernels (tests/test_sharding.py::test_sharding_gpu).
# Usage, from the repository root on the GPU machine: bash tests/gpu_runs/multi_gpu.sh OUTDIR
# Writes OUTDIR/{multi_gpu.json,multi_gpu.md,multi_gpu.log,sharding_junit.xml,sharding.log}.
set -u
out=${1:?usage: multi_gpu.sh OUTDIR}
mkdir -p "$out"
# NVLink multicast stays off on the shared hosts (see the device notes); nothing here uses NCCL
# collectives by design, but a stray one must not turn it on.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
source tests/gpu_runs/wheels.sh
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi -L
timeout "${BENCH_LIMIT:-240}" python3 -m benchmarks.multi_gpu --out "$out/multi_gpu.json" 2>&1 | tee "$out/multi_gpu.log"
timeout -s INT "${TEST_LIMIT:-300}" python3 -m pytest -q -p no:cacheprovider -m gpu \
  tests/test_sharding.py::test_sharding_gpu --junitxml="$out/sharding_junit.xml" 2>&1 | tee "$out/sharding.log" | tail -40
