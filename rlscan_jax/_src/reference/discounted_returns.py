"""Discounted returns: G_t = r_t + γ(1-term_t)·(v'_t if done_t or t = T-1 else G_{t+1})."""

from __future__ import annotations

import jax.numpy as jnp

from rlscan_jax._src.reference import common


def coefficients(x, p, *, axis, reverse):
    del reverse
    rewards = x["rewards"]
    term = common.flag(x["terminated"])
    done = common.logical_or(term, common.flag(x["truncated"]))
    last = common.is_last(rewards.shape, axis)
    if x["next_values"] is not None:
        ends = common.logical_or(done, last)
        boot = jnp.where(ends, x["next_values"], jnp.zeros_like(rewards))
    elif x["bootstrap_value"] is not None:
        # Without next_values only t = T-1 bootstraps (truncation needs next_values).
        boot = jnp.where(last, jnp.expand_dims(x["bootstrap_value"], axis), jnp.zeros_like(rewards))
    else:
        boot = jnp.zeros_like(rewards)
    a = rewards + common.discount_unless(term, p["gamma"], boot)
    b = common.full(decay(p), a.shape).astype(a.dtype)
    return a, b, done


def decay(p):
    """b_t as `coefficients` broadcasts it: one value for every step and row where it is 0-d (the
    backward pass then takes it as the adjoint scan's parameter instead of an array of b)."""
    return p["gamma"]


def finalize(h, x, p, *, axis, reverse):
    del x, p, axis, reverse
    return h
