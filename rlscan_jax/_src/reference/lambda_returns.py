"""λ-returns: G_t = r_t + γ(1-term_t)[(1-λ) v'_t + λ G_{t+1}], G_t = r_t + γ(1-term_t) v'_t at ends."""

from __future__ import annotations

import jax.numpy as jnp

from rlscan_jax._src.reference import common


def coefficients(x, p, *, axis, reverse):
    del reverse
    rewards = x["rewards"]
    term = common.flag(x["terminated"])
    done = common.logical_or(term, common.flag(x["truncated"]))
    v_next = common.next_state_value(x, axis)
    cont = jnp.logical_not(common.logical_or(done, common.is_last(rewards.shape, axis)))
    lam = p["lambda_"]
    boot = jnp.where(cont, (1.0 - lam) * v_next, v_next)
    a = rewards + common.discount_unless(term, p["gamma"], boot)
    b = common.full(decay(p), a.shape).astype(a.dtype)
    return a, b, done


def decay(p):
    """b_t as `coefficients` broadcasts it: one value for every step and row where it is 0-d (the
    backward pass then takes it as the adjoint scan's parameter instead of an array of b)."""
    return p["gamma"] * p["lambda_"]


def finalize(h, x, p, *, axis, reverse):
    del x, p, axis, reverse
    return h
