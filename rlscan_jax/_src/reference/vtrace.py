"""V-trace: (vs - V)_t = ρ̄_t (r_t + γ(1-term_t) v'_t - V_t) + γ(1-done_t) c_t (vs - V)_{t+1}."""

from __future__ import annotations

import jax.numpy as jnp

from rlscan_jax._src.reference import common


def _targets(x, p, axis):
    term = common.flag(x["terminated"])
    done = common.logical_or(term, common.flag(x["truncated"]))
    rho = jnp.exp(x["log_rhos"])
    return term, done, rho, common.next_state_value(x, axis)


def coefficients(x, p, *, axis, reverse):
    del reverse
    term, done, rho, v_next = _targets(x, p, axis)
    rho_bar = jnp.minimum(p["rho_clip"], rho)
    c = p["lambda_"] * jnp.minimum(p["c_clip"], rho)
    a = rho_bar * (x["rewards"] + common.discount_unless(term, p["gamma"], v_next) - x["values"])
    b = common.full(p["gamma"] * c, a.shape).astype(a.dtype)
    return a, b, done


def finalize(h, x, p, *, axis, reverse):
    del reverse
    term, done, rho, v_next = _targets(x, p, axis)
    vs = x["values"] + h
    cont = jnp.logical_not(common.logical_or(done, common.is_last(h.shape, axis)))
    w = jnp.where(cont, common.shift_next(vs, axis, 0.0), v_next)
    pg_rho = jnp.minimum(p["pg_rho_clip"], rho)
    pg = pg_rho * (x["rewards"] + common.discount_unless(term, p["gamma"], w) - x["values"])
    return vs, pg
