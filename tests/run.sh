#!/usr/bin/env bash
# The test command (README.md): the CPU suite, then the Triton kernels through the interpreter.
# pytest exits non-zero on failures and on "no tests ran" (5); both stop this script.
set -euo pipefail
cd "$(dirname "$0")/.."
workers=${PYTEST_WORKERS:-2}
python -m pytest -q -n "$workers" -m "not gpu and not triton_interpret" tests
TRITON_INTERPRET=1 python -m pytest -q -n "$workers" -m triton_interpret tests
