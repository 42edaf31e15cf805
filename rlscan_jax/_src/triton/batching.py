"""`custom_vmap` on the launchers: vmapped axes fold into the kernel's rows, one launch per call.

A vmapped argument arrives with its batch axis first, so a per-step array (*outer, T, *inner)
becomes (V, *outer, T, *inner): the same kernel with OUTER·V rows and the time axis one
further in, with no copy. Unbatched arrays beside batched ones are broadcast; a batched
scalar parameter (γ, λ or a clip) becomes a per-step array.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp


def _launcher(op: str):
    """The op's forward launcher, or with a ":bwd" suffix its fused backward (launchers/adjoint.py)."""
    from rlscan_jax._src.triton.launchers import adjoint, gae, linear, retrace, returns, vtrace

    if op.endswith(":bwd"):
        return getattr(adjoint, op.removesuffix(":bwd"))
    return {
        "gae": gae.forward,
        "vtrace": vtrace.forward,
        "retrace": retrace.forward,
        "lambda_returns": returns.lambda_returns,
        "discounted_returns": returns.discounted_returns,
        "eligibility_traces": linear.eligibility_traces,
        "episodic_cumsum": linear.episodic_cumsum,
        "linear_scan": linear.linear_scan,
    }[op]


def _step_rank(x: dict, batched: dict) -> int:
    """The unbatched rank of the per-step shape (done's or reset's where inputs carry feature axes)."""
    for key in ("done", "reset", "rewards", "a", "inputs", "g", "g2"):
        if x.get(key) is not None:
            return x[key].ndim - int(batched[key])
    raise ValueError("no per-step input")


def _batch_param(v: jax.Array, batched: bool, size: int, step_rank: int) -> jax.Array:
    if not batched:
        return v
    # (V, *s) with s broadcastable to the per-step shape: align s to its trailing axes.
    return v.reshape((size,) + (1,) * (step_rank - (v.ndim - 1)) + v.shape[1:])


@functools.cache
def launcher(op: str, axis: int, reverse: bool, out_dtype, store_h: bool):
    """The op's launch as a function of (x, p) that vmap folds into one launch.

    For an op's fused backward (`op` + ":bwd", launchers/adjoint.py) `out_dtype` is the gradients'
    ((name, dtype), ...) and `store_h` asks for the adjoint state u."""
    forward = functools.partial(_launcher(op), axis=axis, reverse=reverse, out_dtype=out_dtype, store_h=store_h)

    @jax.custom_batching.custom_vmap
    def run(x, p):
        return forward(x, p)

    @run.def_vmap
    def rule(axis_size, in_batched, x, p):
        x_batched, p_batched = in_batched
        rank = _step_rank(x, x_batched)
        xb = {}
        for k, v in x.items():
            if v is None or x_batched[k]:
                xb[k] = v
            else:
                xb[k] = jnp.broadcast_to(v, (axis_size, *v.shape))
        # A fused backward that writes parameters' gradients (ops._param_grads_fused) writes one for each
        # vmapped instance: an unbatched parameter is given to it batched, and each gradient,
        # summed to the batched parameter's shape, is reshaped to the instance's shape.
        own = {k: v.shape[1:] if p_batched[k] else v.shape for k, v in p.items()}
        p_grads = [k for k, _ in out_dtype if k in p] if op.endswith(":bwd") else []
        for k in p_grads:
            if not p_batched[k]:
                p = {**p, k: jnp.broadcast_to(p[k], (axis_size, *p[k].shape))}
                p_batched = {**p_batched, k: True}
        pb = {k: _batch_param(v, p_batched[k], axis_size, rank) for k, v in p.items()}
        out = launcher(op, axis + 1, reverse, out_dtype, store_h)(xb, pb)
        if p_grads:
            grads, u = out
            out = {k: g.reshape((axis_size, *own[k])) if k in p_grads else g for k, g in grads.items()}, u
        return out, jax.tree.map(lambda _: True, out)

    return run
