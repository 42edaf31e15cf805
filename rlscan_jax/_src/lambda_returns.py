"""TD(λ) returns."""

from __future__ import annotations

import jax
from jax.typing import ArrayLike

from rlscan_jax._src import checks, core, dispatch, episodes


def lambda_returns(
    rewards: ArrayLike,
    values: ArrayLike | None = None,
    *,
    terminated: ArrayLike | None = None,
    truncated: ArrayLike | None = None,
    next_values: ArrayLike | None = None,
    bootstrap_value: ArrayLike | None = None,
    gamma: ArrayLike = 0.99,
    lambda_: ArrayLike = 0.95,
    time_axis: int = 0,
    implementation: str | None = None,
) -> jax.Array:
    r"""λ-returns, the targets of TD(λ).

        G_t = r_t + γ (1 - term_t) [(1 - λ) v'_t + λ G_{t+1}]   while the episode continues
        G_t = r_t + γ (1 - term_t) v'_t                         at done steps and at t = T-1

    v'_t is `next_values[t]` when given, else `values[t+1]`, and `bootstrap_value` at t = T-1.
    At λ = 1 this is the discounted return; at λ = 0 the one-step TD target.

    Args:
      rewards: [T, *B] floating.
      values: [T, *B] floating, V(s_t); used only to form v'_t = values[t+1] when next_values is
        not given.
      terminated: [T, *B] bool or numeric, optional.
      truncated: [T, *B] bool or numeric, optional (needs next_values).
      next_values: [T, *B] floating, optional: V of the state reached after t.
      bootstrap_value: [*B] floating, optional: V after the last step. Either next_values, or
        values and bootstrap_value, are required.
      gamma: discount: a float, a traced scalar or an array broadcastable to [T, *B].
      lambda_: λ, same forms as gamma.
      time_axis: the time axis of the per-step arrays.
      implementation: None, "triton", "associative" or "sequential".

    Returns:
      returns, [T, *B] in the inputs' floating dtype.

    Raises:
      ValueError: mismatched shapes, bad time axis, truncated without next_values, a missing
        bootstrap, both bootstrap_value and next_values, values missing without next_values.
      TypeError: non-floating inputs.

    Example:
      >>> import jax.numpy as jnp, rlscan_jax
      >>> g = rlscan_jax.lambda_returns(jnp.ones(2), jnp.zeros(2), bootstrap_value=jnp.array(0.0),
      ...                               gamma=1.0, lambda_=1.0)
      >>> g.tolist()
      [2.0, 1.0]

    References:
      Sutton and Barto, Reinforcement Learning: An Introduction, 2nd ed., chapter 12.
    """
    if values is None and next_values is None:
        raise ValueError("lambda_returns: needs values (with bootstrap_value) or next_values to form v'_t")
    ep = episodes.validate(
        "lambda_returns",
        rewards=rewards,
        values=values,
        values_optional=next_values is not None,
        time_axis=time_axis,
        terminated=terminated,
        truncated=truncated,
        next_values=next_values,
        bootstrap_value=bootstrap_value,
        bootstrap=episodes.REQUIRED,
    )
    p = episodes.params(ep.step_shape, gamma=gamma, lambda_=lambda_)
    impl = dispatch.resolve(implementation)
    x = dict(ep.x)
    if next_values is not None:
        x["values"] = None  # v'_t comes from next_values alone
    return core.evaluate(
        "lambda_returns",
        x,
        p,
        axis=ep.axis,
        reverse=True,
        implementation=impl,
        out_dtype=ep.out_dtype,
        param_grads=checks.traced(gamma, lambda_),
    )
