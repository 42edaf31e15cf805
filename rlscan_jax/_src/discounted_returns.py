"""Discounted returns (reward-to-go)."""

from __future__ import annotations

import jax
from jax.typing import ArrayLike

from rlscan_jax._src import checks, core, dispatch, episodes


def discounted_returns(
    rewards: ArrayLike,
    *,
    terminated: ArrayLike | None = None,
    truncated: ArrayLike | None = None,
    next_values: ArrayLike | None = None,
    bootstrap_value: ArrayLike | None = None,
    gamma: ArrayLike = 0.99,
    time_axis: int = 0,
    implementation: str | None = None,
) -> jax.Array:
    r"""Discounted returns, reset at episode ends.

        G_t = r_t + γ (1 - term_t) · (v'_t if done_t or t = T-1 else G_{t+1})

    v'_t is `next_values[t]` when given; otherwise `bootstrap_value` at t = T-1, or zero there
    when it is not given either (the plain reward-to-go).

    Args:
      rewards: [T, *B] floating.
      terminated: [T, *B] bool or numeric, optional.
      truncated: [T, *B] bool or numeric, optional (needs next_values).
      next_values: [T, *B] floating, optional: V of the state reached after t.
      bootstrap_value: [*B] floating, optional: V after the last step (default zero).
      gamma: discount: a float, a traced scalar or an array broadcastable to [T, *B].
      time_axis: the time axis of the per-step arrays.
      implementation: None, "triton", "associative" or "sequential".

    Returns:
      returns, [T, *B] in the inputs' floating dtype.

    Raises:
      ValueError: mismatched shapes, bad time axis, truncated without next_values, both
        bootstrap_value and next_values.
      TypeError: non-floating inputs.

    Example:
      >>> import jax.numpy as jnp, rlscan_jax
      >>> rlscan_jax.discounted_returns(jnp.ones(3), terminated=jnp.array([0, 1, 0]),
      ...                               gamma=0.5).tolist()
      [1.5, 1.0, 1.0]

    References:
      Sutton and Barto, Reinforcement Learning: An Introduction, 2nd ed., chapter 3.
    """
    ep = episodes.validate(
        "discounted_returns",
        rewards=rewards,
        values_optional=True,
        time_axis=time_axis,
        terminated=terminated,
        truncated=truncated,
        next_values=next_values,
        bootstrap_value=bootstrap_value,
        bootstrap=episodes.ZERO,
    )
    p = episodes.params(ep.step_shape, gamma=gamma)
    impl = dispatch.resolve(implementation)
    return core.evaluate(
        "discounted_returns",
        ep.x,
        p,
        axis=ep.axis,
        reverse=True,
        implementation=impl,
        out_dtype=ep.out_dtype,
        param_grads=checks.traced(gamma),
    )
