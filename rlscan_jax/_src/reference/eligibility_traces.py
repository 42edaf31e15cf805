"""Eligibility traces: e_t = x_t + γλ(1-done_{t-1}) e_{t-1}, e_{-1} = initial."""

from __future__ import annotations

import jax.numpy as jnp

from rlscan_jax._src.reference import common


def expand_features(x, ndim):
    """Appends trailing unit axes so a per-step array broadcasts over feature axes."""
    return jnp.reshape(x, x.shape + (1,) * (ndim - x.ndim))


def coefficients(x, p, *, axis, reverse):
    del reverse
    inputs = x["inputs"]
    step_shape = inputs.shape if x["done"] is None else x["done"].shape
    b_step = common.full(decay(p), step_shape)
    b = jnp.broadcast_to(expand_features(b_step, inputs.ndim), inputs.shape).astype(inputs.dtype)
    a = inputs
    if x["initial"] is not None:
        a = common.add_at_edge(a, axis, common.take_time(b, axis, 0) * x["initial"], last=False)
    reset = None
    if x["done"] is not None:
        reset = common.shift_prev(common.flag(x["done"]), axis, False)
        reset = jnp.broadcast_to(expand_features(reset, inputs.ndim), inputs.shape)
    return a, b, reset


def decay(p):
    """b_t as `coefficients` broadcasts it: one value for every step and row where it is 0-d (the
    backward pass then takes it as the adjoint scan's parameter instead of an array of b)."""
    return p["gamma"] * p["lambda_"]


def finalize(h, x, p, *, axis, reverse):
    del x, p, axis, reverse
    return h
