"""GAE: δ_t = r_t + γ(1-term_t) v'_t - V_t;  A_t = δ_t + γλ(1-done_t) A_{t+1}."""

from __future__ import annotations

from rlscan_jax._src.reference import common


def coefficients(x, p, *, axis, reverse):
    del reverse
    rewards, values = x["rewards"], x["values"]
    term = common.flag(x["terminated"])
    done = common.logical_or(term, common.flag(x["truncated"]))
    v_next = common.next_state_value(x, axis)
    a = rewards + common.discount_unless(term, p["gamma"], v_next) - values
    b = common.full(decay(p), a.shape).astype(a.dtype)
    return a, b, done


def decay(p):
    """b_t as `coefficients` broadcasts it: one value for every step and row where it is 0-d (the
    backward pass then takes it as the adjoint scan's parameter instead of an array of b)."""
    return p["gamma"] * p["lambda_"]


def finalize(h, x, p, *, axis, reverse):
    del p, axis, reverse
    return h, h + x["values"]
