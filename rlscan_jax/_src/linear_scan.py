"""The raw first-order linear recurrence, for custom estimators."""

from __future__ import annotations

import jax
import numpy as np
from jax.typing import ArrayLike

from rlscan_jax._src import checks, core, dispatch


def linear_scan(
    a: ArrayLike,
    b: ArrayLike,
    *,
    initial: ArrayLike | None = None,
    reverse: bool = False,
    time_axis: int = 0,
    implementation: str | None = None,
) -> jax.Array:
    r"""Solves h_t = a_t + b_t h_{t-1} (or h_{t+1} with reverse=True) as a parallel scan.

        forward:  h_t = a_t + b_t h_{t-1},   h_{-1} = initial (zero by default)
        reverse:  h_t = a_t + b_t h_{t+1},   h_T = initial

    Args:
      a: [T, *B] floating.
      b: floating, broadcastable to a's shape. One value, one a step or one a row is read by the
        Triton kernels as given (not broadcast in memory).
      initial: [*B] floating, optional: the carry entering the window.
      reverse: False for a forward-in-time recurrence, True for a backward one.
      time_axis: the time axis of a.
      implementation: None, "triton", "associative" or "sequential".

    Returns:
      h, a's shape, in the floating dtype of a, b and initial.

    Raises:
      ValueError: b not broadcastable to a, bad time axis, empty time axis, bad initial shape.
      TypeError: non-floating a, b or initial; a non-bool reverse.

    Example:
      >>> import jax.numpy as jnp, rlscan_jax
      >>> rlscan_jax.linear_scan(jnp.ones(3), jnp.full(3, 0.5)).tolist()
      [1.0, 1.5, 1.75]
    """
    if not isinstance(reverse, bool):
        raise TypeError(f"reverse={reverse!r} must be a Python bool")
    a = checks.float_array(a, "a")
    b = checks.float_array(b, "b")
    if a.ndim == 0:
        raise ValueError("a.shape=() must have a time axis")
    try:
        ok = np.broadcast_shapes(b.shape, a.shape) == a.shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"b.shape={b.shape} must be broadcastable to a.shape={a.shape}")
    axis = checks.time_axis(time_axis, a.ndim)
    checks.non_empty_time(a.shape, axis, "a")
    if initial is not None:
        initial = checks.boundary(initial, "initial", checks.batch_shape(a.shape, axis))
    out_dtype = checks.result_dtype([a, b, initial])
    if b.shape == a.shape:
        x, p = {"a": a, "b": b, "initial": initial}, {}
    else:
        # A b of a smaller shape (one value, one a step, one a row) is a parameter of the kernels,
        # read where it lies rather than broadcast to a's shape in memory.
        x, p = {"a": a, "b": None, "initial": initial}, {"decay": b}
    impl = dispatch.resolve(implementation)
    return core.evaluate(
        "linear_scan",
        x,
        p,
        axis=axis,
        reverse=reverse,
        implementation=impl,
        out_dtype=out_dtype,
        param_grads=bool(p) and checks.traced(b),
    )
