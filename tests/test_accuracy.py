"""The accuracy documented in README.md holds: error against the float64 oracle at T = 4096.

Bounds (relative to the largest output): float32 inputs 1e-5, bfloat16 inputs 1e-2 (bf16
outputs carry 8 bits of mantissa; accumulation is float32). The measured figures are in
benchmarks/results/accuracy_*.json (python -m benchmarks.accuracy).
"""

from __future__ import annotations

import pytest
from conftest import IMPLEMENTATIONS

from benchmarks import accuracy

BOUNDS = {"float32": 1e-5, "bfloat16": 1e-2}


@pytest.mark.parametrize("dtype", list(BOUNDS))
@pytest.mark.parametrize("setting", list(accuracy.SETTINGS))
@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("op", accuracy.cases.OP_NAMES)
def test_accuracy_at_T4096(op, impl, setting, dtype):
    err = accuracy.measure(op, impl, setting, dtype, T=4096, rows=2)
    assert err < BOUNDS[dtype], f"{op} {impl} {setting} {dtype}: relative error {err:.2e}"
