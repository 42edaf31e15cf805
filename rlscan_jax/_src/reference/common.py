"""Small pure-JAX pieces shared by the estimators' reference recurrences.

All arrays are in the caller's layout: time is `axis`, per-step arrays share one shape, and
nothing is transposed. Per-step quantities at t+1 or t-1 are formed by slicing along `axis`,
which XLA fuses into the elementwise work around it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax


def flag(x: jax.Array | None) -> jax.Array | None:
    """A flag array of any dtype as bool (non-zero is true)."""
    if x is None:
        return None
    return x if x.dtype == jnp.bool_ else x != 0


def logical_or(x: jax.Array | None, y: jax.Array | None) -> jax.Array | None:
    if x is None:
        return y
    if y is None:
        return x
    return jnp.logical_or(x, y)


def _edge(fill, like: jax.Array, axis: int) -> jax.Array:
    shape = like.shape[:axis] + (1,) + like.shape[axis + 1 :]
    fill = jnp.asarray(fill, like.dtype)
    if fill.ndim == like.ndim - 1:
        fill = jnp.expand_dims(fill, axis)
    return jnp.broadcast_to(fill, shape)


def shift_next(x: jax.Array, axis: int, fill) -> jax.Array:
    """y[t] = x[t+1] for t < T-1 and y[T-1] = fill (a time slice or a scalar)."""
    body = lax.slice_in_dim(x, 1, x.shape[axis], axis=axis)
    return jnp.concatenate([body, _edge(fill, x, axis)], axis=axis)


def shift_prev(x: jax.Array, axis: int, fill) -> jax.Array:
    """y[t] = x[t-1] for t > 0 and y[0] = fill (a time slice or a scalar)."""
    body = lax.slice_in_dim(x, 0, x.shape[axis] - 1, axis=axis)
    return jnp.concatenate([_edge(fill, x, axis), body], axis=axis)


def shift_param(v: jax.Array, rank: int, axis: int, shift) -> jax.Array:
    """A parameter right-aligned to a per-step shape of `rank` axes (time on `axis`), shifted a
    step by `shift` (shift_next or shift_prev, filled with 0) along its own time axis where it
    takes more than one value there; else as given."""
    t = axis % rank - (rank - v.ndim)
    if t < 0 or v.shape[t] == 1:
        return v
    return shift(v, t, 0.0)


def is_last(shape: tuple[int, ...], axis: int) -> jax.Array:
    """bool, broadcastable to `shape`: true at t = T-1."""
    t = lax.broadcasted_iota(jnp.int32, (shape[axis],), 0)
    return jnp.expand_dims(t == shape[axis] - 1, [i for i in range(len(shape)) if i != axis])


def add_at_edge(a: jax.Array, axis: int, value: jax.Array, last: bool) -> jax.Array:
    """Adds a time slice `value` to a[T-1] (last=True) or a[0] (last=False)."""
    n = a.shape[axis]
    i = n - 1 if last else 0
    edge = lax.slice_in_dim(a, i, i + 1, axis=axis) + jnp.expand_dims(value, axis)
    if n == 1:
        return edge
    rest = lax.slice_in_dim(a, 0, n - 1, axis=axis) if last else lax.slice_in_dim(a, 1, n, axis=axis)
    return jnp.concatenate([rest, edge] if last else [edge, rest], axis=axis)


def take_time(x: jax.Array, axis: int, i: int) -> jax.Array:
    """x at time index i (negative counts from the end), without the time axis."""
    return lax.index_in_dim(x, i % x.shape[axis], axis=axis, keepdims=False)


def discount_unless(term: jax.Array | None, gamma: jax.Array, value: jax.Array) -> jax.Array:
    """γ·value, selected to zero where the episode terminated (never 0 · value: value may be NaN)."""
    out = gamma * value
    if term is None:
        return out
    return jnp.where(term, jnp.zeros_like(out), out)


def next_state_value(x: dict, axis: int) -> jax.Array:
    """v'_t: next_values[t] if given, else values[t+1], and bootstrap_value at t = T-1."""
    if x.get("next_values") is not None:
        return x["next_values"]
    return shift_next(x["values"], axis, x["bootstrap_value"])


def full(x: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    return jnp.broadcast_to(x, shape)
