#!/usr/bin/env bash
# The GPU test run on the lent H200 (see ../../README.md, "Testing on a GPU").
# Usage, from the repository root on the GPU machine: bash tests/gpu_runs/run.sh OUTDIR [pytest args...]
# Installs carried wheels (jax-triton) from .whl/ if present, runs the gpu-marked tests and the
# CPU suite's tests of "triton" (conftest adds it on a GPU), and writes OUTDIR/summary.json.
set -u
out=${1:?usage: run.sh OUTDIR [pytest args]}
shift
mkdir -p "$out"
source tests/gpu_runs/wheels.sh
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi -L
# The kernels' tests: test_gpu.py and every test of the CPU grid parametrized with "triton"
# (the CPU suite's other implementations are CI's). SIGINT at the limit still writes the XML.
# Left to CPU CI: compiling for sm_90 without a GPU, the notebooks, and the sharding scenario
# that runs the kernels through the interpreter on 8 CPU devices (the triton 3.6 interpreter
# fails with numpy >= 2.4, which that machine has).
timeout -s INT "${LIMIT:-540}" python3 -m pytest -q -p no:cacheprovider -n "${WORKERS:-8}" \
  -m "gpu or not (triton_interpret or slow)" -k "${SELECT:-gpu or triton}" \
  --ignore=tests/test_triton_compile.py --ignore=tests/test_notebooks.py \
  --deselect "tests/test_sharding.py::test_sharding[triton]" \
  --junitxml="$out/junit.xml" "$@" tests 2>&1 | tee "$out/pytest.log" | grep -E "passed|failed|error|FAILED|ERROR" | tail -40
python3 tests/gpu_runs/summarize.py "$out/junit.xml" "$out/summary.json"
