"""The raw recurrence: h_t = a_t + b_t h_{t-1} (forward) or h_t = a_t + b_t h_{t+1} (reverse)."""

from __future__ import annotations

from rlscan_jax._src.reference import common


def coefficients(x, p, *, axis, reverse):
    del p
    a, b = x["a"], x["b"]
    if x["initial"] is not None:
        i = -1 if reverse else 0
        a = common.add_at_edge(a, axis, common.take_time(b, axis, i) * x["initial"], last=reverse)
    return a, b, None


def finalize(h, x, p, *, axis, reverse):
    del x, p, axis, reverse
    return h
