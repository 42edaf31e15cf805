"""rlax's own estimators as a baseline, vmapped over the batch like a user would call them.

rlax takes one trajectory [T] at a time and a single discount per step, `discount_t`, that both
bootstraps and cuts the trace. It has no separate truncation, so each rlax call gets
`discount_t = γ·(1 - done_t)` with `done = terminated | truncated`: a truncated step is treated
as terminal. For GAE, rlax also takes the values as one [T+1] array, so v'_t = values[t+1]
(and next_values[T-1] after the last step) rather than next_values[t].

16-bit inputs are upcast to float32 before the rlax call and its outputs cast back, the same
contract as the library (16-bit storage, float32 accumulation): rlax run in bfloat16 itself
accumulates its scan carry in bfloat16, which is off by several percent at T = 300 already.

The rlax results are therefore gated against the reference on the problem rlax can express:
`rlax_problem` rewrites the inputs of the library function to that problem (terminated = done,
no truncation, GAE's next_values shifted from values) and `rlax_gradients` maps the reference's
gradients with respect to the rewritten inputs back to the inputs the rlax call received.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

import jax
import jax.numpy as jnp

from benchmarks import shapes

OPS = tuple(op for op, spec in shapes.SPECS.items() if spec.rlax)
_SMALL_FLOATS = (jnp.dtype(jnp.bfloat16), jnp.dtype(jnp.float16))


def unavailable() -> str | None:
    """None if rlax imports here, else why not (it needs distrax, tfp and dm-tree)."""
    try:
        importlib.import_module("rlax")
    except ImportError as e:
        return f"rlax could not be imported ({e})"
    return None


def _rlax():
    return importlib.import_module("rlax")


def _discount(x: dict, like: jax.Array, gamma: float) -> jax.Array:
    done = jnp.logical_or(x["terminated"], x["truncated"])
    return jnp.where(done, jnp.zeros_like(like), jnp.full_like(like, gamma))


def _gae(x: dict, p: dict) -> tuple:
    r, v = x["rewards"], x["values"]
    values = jnp.concatenate([v, x["next_values"][-1:]])
    adv = _rlax().truncated_generalized_advantage_estimation(r, _discount(x, r, p["gamma"]), p["lambda_"], values)
    return adv, adv + v


def _vtrace(x: dict, p: dict) -> tuple:
    r, v = x["rewards"], x["values"]
    out = _rlax().vtrace_td_error_and_advantage(
        v,
        x["next_values"],
        r,
        _discount(x, r, p["gamma"]),
        jnp.exp(x["log_rhos"]),
        lambda_=p["lambda_"],
        clip_rho_threshold=1.0,
        clip_pg_rho_threshold=1.0,
        stop_target_gradients=False,
    )
    return out.errors + v, out.pg_advantage


def _retrace(x: dict, p: dict) -> tuple:
    r, q = x["rewards"], x["q_values"]
    c = p["lambda_"] * jnp.minimum(jnp.ones_like(q), jnp.exp(x["log_rhos"]))
    g = _rlax().general_off_policy_returns_from_q_and_v(q[1:], x["next_values"], r, _discount(x, r, p["gamma"]), c[1:])
    return (g,)


def _lambda_returns(x: dict, p: dict) -> tuple:
    r = x["rewards"]
    return (_rlax().lambda_returns(r, _discount(x, r, p["gamma"]), x["next_values"], p["lambda_"]),)


def _discounted_returns(x: dict, p: dict) -> tuple:
    r = x["rewards"]
    return (_rlax().discounted_returns(r, _discount(x, r, p["gamma"]), x["next_values"]),)


_PER_TRAJECTORY = {
    "gae": _gae,
    "vtrace": _vtrace,
    "retrace": _retrace,
    "lambda_returns": _lambda_returns,
    "discounted_returns": _discounted_returns,
}


def rlax_op(op: str, layout: str) -> Callable[[dict], tuple]:
    """The rlax computation of `op` on `shapes.make_inputs` inputs, vmapped over the batch axis."""
    one = _PER_TRAJECTORY[op]
    params = shapes.SPECS[op].params
    batch_axis = 1 - shapes.TIME_AXIS[layout]

    def fn(inputs: dict) -> tuple:
        dtype = inputs["rewards"].dtype
        x = {k: v.astype(jnp.float32) if v.dtype in _SMALL_FLOATS else v for k, v in inputs.items()}
        out = jax.vmap(lambda x: one(x, params), in_axes=(batch_axis,), out_axes=batch_axis)(x)
        return tuple(o.astype(dtype) for o in out)

    return fn


def _shift_next(x: jax.Array, last: jax.Array, axis: int) -> jax.Array:
    """y[t] = x[t+1] for t < T-1 and y[T-1] = last[T-1], along `axis`."""
    body = jax.lax.slice_in_dim(x, 1, x.shape[axis], axis=axis)
    tail = jax.lax.slice_in_dim(last, x.shape[axis] - 1, x.shape[axis], axis=axis)
    return jnp.concatenate([body, tail], axis=axis)


def rlax_problem(op: str, inputs: dict, layout: str) -> dict:
    """The library inputs that pose the problem the rlax call solves (see the module docstring)."""
    x = dict(inputs)
    x["terminated"] = jnp.logical_or(inputs["terminated"], inputs["truncated"])
    x["truncated"] = jnp.zeros_like(inputs["truncated"])
    if op == "gae":
        axis = shapes.TIME_AXIS[layout]
        x["next_values"] = _shift_next(inputs["values"], inputs["next_values"], axis)
    return x


def rlax_gradients(op: str, grads: dict, layout: str) -> dict:
    """Maps gradients w.r.t. `rlax_problem`'s inputs to gradients w.r.t. the rlax call's inputs."""
    if op != "gae":
        return grads
    axis = shapes.TIME_AXIS[layout]
    g_next = grads["next_values"]
    t = g_next.shape[axis]
    zero = jnp.zeros_like(jax.lax.slice_in_dim(g_next, 0, 1, axis=axis))
    # values[t] is also v'_{t-1}; next_values enters only at T-1.
    shifted = jnp.concatenate([zero, jax.lax.slice_in_dim(g_next, 0, t - 1, axis=axis)], axis=axis)
    is_last = jax.lax.broadcasted_iota(jnp.int32, g_next.shape, axis) == t - 1
    last_only = jnp.where(is_last, g_next, jnp.zeros_like(g_next))
    out = dict(grads)
    out["values"] = grads["values"] + shifted
    out["next_values"] = last_only
    return out
