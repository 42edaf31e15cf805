"""The raw recurrence: h_t = a_t + b_t h_{t-1} (forward) or h_t = a_t + b_t h_{t+1} (reverse)."""

from __future__ import annotations

import jax.numpy as jnp

from rlscan_jax._src.reference import common


def coefficients(x, p, *, axis, reverse):
    a, b = x["a"], x["b"]
    if b is None:
        b = jnp.broadcast_to(decay(p), a.shape)
    if x["initial"] is not None:
        i = -1 if reverse else 0
        a = common.add_at_edge(a, axis, common.take_time(b, axis, i) * x["initial"], last=reverse)
    return a, b, None


def decay(p):
    """b where it was given at a smaller shape than a (one value, one a step, one a row), as given
    (None where b is a's own shape): the kernels read it so, never broadcast in memory."""
    return p.get("decay")


def finalize(h, x, p, *, axis, reverse):
    del x, p, axis, reverse
    return h
