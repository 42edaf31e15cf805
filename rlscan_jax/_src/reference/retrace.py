"""Retrace(λ): G_t = r_t + γ(1-term_t) v'_t + γ(1-done_t) c_{t+1} (G_{t+1} - q_{t+1})."""

from __future__ import annotations

import jax.numpy as jnp

from rlscan_jax._src.reference import common


def coefficients(x, p, *, axis, reverse):
    del reverse
    rewards, q = x["rewards"], x["q_values"]
    term = common.flag(x["terminated"])
    done = common.logical_or(term, common.flag(x["truncated"]))
    c = common.full(p["lambda_"] * jnp.minimum(p["c_clip"], jnp.exp(x["log_rhos"])), q.shape)
    c_next = common.shift_next(c, axis, 0.0)
    q_next = common.shift_next(q, axis, 0.0)
    cont = jnp.logical_not(common.logical_or(done, common.is_last(q.shape, axis)))
    gamma = common.full(p["gamma"], q.shape)
    trace = jnp.where(cont, gamma * c_next * q_next, jnp.zeros_like(q))
    a = rewards + common.discount_unless(term, gamma, x["next_values"]) - trace
    b = (gamma * c_next).astype(a.dtype)
    return a, b, done


def finalize(h, x, p, *, axis, reverse):
    del x, p, axis, reverse
    return h
