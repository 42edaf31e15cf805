"""The pure-JAX first-order linear recurrence, the yardstick for the Triton kernels.

    backward in time (reverse=True):  h_t = a_t + [not reset_t] · b_t · h_{t+1}
    forward in time  (reverse=False): h_t = a_t + [not reset_t] · b_t · h_{t-1}

with no carry entering at the window edge (the element processed first is h = a).

`reset_t` marks a step across which nothing flows. It is applied by *selection*, not by
multiplying the carry with zero: 0 · NaN is NaN, so a multiplicative mask would let a NaN or
Inf of one episode reach the outputs of another. Selection also keeps b_t differentiable at
b_t = 0 (γ = 0), which a "b == 0 means boundary" encoding would not.

Elements are combined in processing order (the element met first, then the next one):

    (a1, b1, r1) then (a2, b2, r2)  ->  (a2 + [not r2] · b2 · a1,  b2 · b1,  r1 or r2)

where the composite b is meaningful only while the composite r is false.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

METHODS = ("associative", "sequential")


def _combine(first, then):
    a1, b1 = first
    a2, b2 = then
    return a2 + b2 * a1, b2 * b1


def _combine_reset(first, then):
    a1, b1, r1 = first
    a2, b2, r2 = then
    a = a2 + jnp.where(r2, jnp.zeros_like(a1), b2 * a1)
    return a, b2 * b1, jnp.logical_or(r1, r2)


def _associative(a, b, reset, axis, reverse):
    if reset is None:
        h, _ = lax.associative_scan(_combine, (a, b), reverse=reverse, axis=axis)
    else:
        h, _, _ = lax.associative_scan(_combine_reset, (a, b, reset), reverse=reverse, axis=axis)
    return h


def _sequential(a, b, reset, axis, reverse):
    a = jnp.moveaxis(a, axis, 0)
    b = jnp.moveaxis(b, axis, 0)
    if reset is not None:
        reset = jnp.moveaxis(reset, axis, 0)
    n = a.shape[0]
    first = n - 1 if reverse else 0
    # The element processed first has no carry: h = a there, whatever b holds.
    h_first = a[first]
    rest = slice(0, n - 1) if reverse else slice(1, n)
    xs = (a[rest], b[rest], None if reset is None else reset[rest])

    def step(h, x):
        a_t, b_t, r_t = x
        carried = b_t * h
        if r_t is not None:
            carried = jnp.where(r_t, jnp.zeros_like(carried), carried)
        h = a_t + carried
        return h, h

    _, h_rest = lax.scan(step, h_first, xs, reverse=reverse)
    parts = (h_rest, h_first[None]) if reverse else (h_first[None], h_rest)
    return jnp.moveaxis(jnp.concatenate(parts, axis=0), 0, axis)


def linear_recurrence(
    a: jax.Array,
    b: jax.Array,
    reset: jax.Array | None,
    *,
    axis: int,
    reverse: bool,
    method: str,
) -> jax.Array:
    """Solves the recurrence along `axis` with `lax.associative_scan` or `lax.scan`.

    Args:
      a: [..., T, ...] additive coefficients, time on `axis`.
      b: multiplicative coefficients, the shape of `a`.
      reset: bool, the shape of `a`, or None for no boundary.
      axis: the time axis (non-negative).
      reverse: True for a backward-in-time recurrence.
      method: "associative" or "sequential".

    Returns:
      h, the shape and dtype of `a`.
    """
    if method == "associative":
        return _associative(a, b, reset, axis, reverse)
    if method == "sequential":
        return _sequential(a, b, reset, axis, reverse)
    raise ValueError(f"method={method!r} must be one of {METHODS}")
