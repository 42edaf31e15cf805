"""Prefix (or suffix) sums that restart at episode ends."""

from __future__ import annotations

import jax
from jax.typing import ArrayLike

from rlscan_jax._src import core, dispatch, traces


def episodic_cumsum(
    inputs: ArrayLike,
    done: ArrayLike | None = None,
    *,
    initial: ArrayLike | None = None,
    reverse: bool = False,
    time_axis: int = 0,
    implementation: str | None = None,
) -> jax.Array:
    r"""Cumulative sums within episodes.

        forward:  c_t = x_t + (1 - done_{t-1}) c_{t-1},   c_{-1} = initial
        reverse:  c_t = x_t + (1 - done_t) c_{t+1},       c_T = initial

    Each sum is computed natively in its direction, never as a total minus a prefix.

    Args:
      inputs: [T, *B, *F] floating; trailing feature axes beyond done's shape are summed alike.
      done: [T, *B] bool or numeric, optional: the episode ended after step t.
      initial: [*B, *F] floating, optional: the carry entering the window (zero by default).
      reverse: False for prefix sums (forward in time), True for suffix sums.
      time_axis: the time axis of done (and of inputs).
      implementation: None, "triton", "associative" or "sequential".

    Returns:
      sums, the shape of inputs, in its floating dtype.

    Raises:
      ValueError: done's shape not a leading part of inputs' shape, bad time axis, initial of
        the wrong shape.
      TypeError: non-floating inputs, a non-bool reverse.

    Example:
      >>> import jax.numpy as jnp, rlscan_jax
      >>> rlscan_jax.episodic_cumsum(jnp.ones(4), jnp.array([0, 1, 0, 0])).tolist()
      [1.0, 2.0, 1.0, 2.0]
    """
    if not isinstance(reverse, bool):
        raise TypeError(f"reverse={reverse!r} must be a Python bool")
    tr = traces.validate(inputs, done, initial, time_axis)
    impl = dispatch.resolve(implementation)
    return core.evaluate(
        "episodic_cumsum",
        tr.x,
        {},
        axis=tr.axis,
        reverse=reverse,
        implementation=impl,
        out_dtype=tr.out_dtype,
        param_grads=False,
    )
