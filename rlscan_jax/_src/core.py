"""The one evaluation path every public function goes through after validation.

    public op -> evaluate -> {reference coefficients + lax scan + finalize,  Triton op}

`evaluate` is jitted with the configuration static and every array (gamma, lambda_ and the
clips included) traced, so a new γ never recompiles.
"""

from __future__ import annotations

import functools
import importlib

import jax
import jax.numpy as jnp

from rlscan_jax._src import checks, sharding
from rlscan_jax._src.reference import scan

OPS = (
    "gae",
    "vtrace",
    "retrace",
    "lambda_returns",
    "discounted_returns",
    "eligibility_traces",
    "episodic_cumsum",
    "linear_scan",
)


def reference_module(op: str):
    return importlib.import_module(f"rlscan_jax._src.reference.{op}")


def cast_inputs(x: dict, p: dict, dtype) -> tuple[dict, dict]:
    """Floating inputs and parameters to the compute dtype; flags stay as they are."""

    def cast(v):
        if v is None or not jnp.issubdtype(v.dtype, jnp.floating):
            return v
        return v.astype(dtype)

    return {k: cast(v) for k, v in x.items()}, {k: cast(v) for k, v in p.items()}


def reference(op: str, x: dict, p: dict, *, axis: int, reverse: bool, method: str):
    """The op in pure JAX, in the compute dtype: coefficients, scan, finalize."""
    mod = reference_module(op)
    a, b, reset = mod.coefficients(x, p, axis=axis, reverse=reverse)
    h = scan.linear_recurrence(a, b, reset, axis=axis, reverse=reverse, method=method)
    return mod.finalize(h, x, p, axis=axis, reverse=reverse)


@functools.partial(jax.jit, static_argnames=("op", "axis", "reverse", "implementation", "out_dtype", "param_grads"))
def evaluate(
    op: str, x: dict, p: dict, *, axis: int, reverse: bool, implementation: str, out_dtype, param_grads: bool = True
):
    """Runs `op` with the chosen implementation and returns outputs in `out_dtype`.

    `param_grads`: whether any parameter was traced where the op was called (checks.traced); the
    Triton backward skips the parameters' gradients where none was (nothing can differentiate them).
    """
    # Several devices: run the op on each device's block of the batch axes, with no collective
    # (issue #7, sharding.py). On one device this is `local(x, p, axis=axis)` itself.
    local = functools.partial(
        _evaluate_local,
        op,
        reverse=reverse,
        implementation=implementation,
        out_dtype=out_dtype,
        param_grads=param_grads,
    )
    return sharding.per_shard(local, x, p, axis=axis, implementation=implementation)


def _evaluate_local(
    op: str, x: dict, p: dict, *, axis: int, reverse: bool, implementation: str, out_dtype, param_grads: bool = True
):
    """`evaluate` on one device's arrays (or one block of them)."""
    if implementation == "triton":
        from rlscan_jax._src.triton import ops as triton_ops  # lazy: imports triton

        return triton_ops.evaluate(op, x, p, axis=axis, reverse=reverse, out_dtype=out_dtype, param_grads=param_grads)
    x, p = cast_inputs(x, p, checks.compute_dtype(out_dtype))
    out = reference(op, x, p, axis=axis, reverse=reverse, method=implementation)
    return jax.tree.map(lambda o: o.astype(out_dtype), out)
