"""Accumulating eligibility traces."""

from __future__ import annotations

import jax
from jax.typing import ArrayLike

from rlscan_jax._src import checks, core, dispatch, episodes, traces


def eligibility_traces(
    inputs: ArrayLike,
    done: ArrayLike | None = None,
    *,
    gamma: ArrayLike,
    lambda_: ArrayLike,
    initial: ArrayLike | None = None,
    time_axis: int = 0,
    implementation: str | None = None,
) -> jax.Array:
    r"""Accumulating eligibility traces, forward in time, reset after episode ends.

        e_t = x_t + γ λ (1 - done_{t-1}) e_{t-1},    e_{-1} = initial (zero by default)

    Args:
      inputs: [T, *B, *F] floating: x_t, e.g. a per-step gradient or feature vector; the
        trailing feature axes F (beyond done's shape) share one decay per step.
      done: [T, *B] bool or numeric, optional: the episode ended after step t, so the trace
        restarts at t+1.
      gamma: discount: a float, a traced scalar or an array broadcastable to [T, *B].
      lambda_: trace decay λ, same forms as gamma.
      initial: [*B, *F] floating, optional: the trace before step 0 (carried from the last window).
      time_axis: the time axis of done (and of inputs, whose feature axes trail).
      implementation: None, "triton", "associative" or "sequential".

    Returns:
      traces, the shape of inputs, in its floating dtype.

    Raises:
      ValueError: done's shape not a leading part of inputs' shape, bad time axis, initial of
        the wrong shape, gamma or lambda_ not broadcastable.
      TypeError: non-floating inputs or initial.

    Example:
      >>> import jax.numpy as jnp, rlscan_jax
      >>> rlscan_jax.eligibility_traces(jnp.ones(3), jnp.array([0, 1, 0]), gamma=1.0,
      ...                               lambda_=0.5).tolist()
      [1.0, 1.5, 1.0]

    References:
      Sutton and Barto, Reinforcement Learning: An Introduction, 2nd ed., chapter 12.
    """
    tr = traces.validate(inputs, done, initial, time_axis)
    p = episodes.params(tr.step_shape, gamma=gamma, lambda_=lambda_)
    impl = dispatch.resolve(implementation)
    return core.evaluate(
        "eligibility_traces",
        tr.x,
        p,
        axis=tr.axis,
        reverse=False,
        implementation=impl,
        out_dtype=tr.out_dtype,
        param_grads=checks.traced(gamma, lambda_),
    )
