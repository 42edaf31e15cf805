"""Generalized advantage estimation."""

from __future__ import annotations

from typing import NamedTuple

import jax
from jax.typing import ArrayLike

from rlscan_jax._src import checks, core, dispatch, episodes


class GAEOutput(NamedTuple):
    """The result of `gae`: advantages and value targets, both [T, *B]."""

    advantages: jax.Array
    returns: jax.Array


def gae(
    rewards: ArrayLike,
    values: ArrayLike,
    *,
    terminated: ArrayLike | None = None,
    truncated: ArrayLike | None = None,
    next_values: ArrayLike | None = None,
    bootstrap_value: ArrayLike | None = None,
    gamma: ArrayLike = 0.99,
    lambda_: ArrayLike = 0.95,
    time_axis: int = 0,
    implementation: str | None = None,
) -> GAEOutput:
    r"""Generalized advantage estimates and their value targets.

        δ_t = r_t + γ (1 - term_t) v'_t - V_t
        A_t = δ_t + γ λ (1 - done_t) A_{t+1},    A_T = 0,    returns_t = A_t + V_t

    where done = terminated | truncated, and v'_t, the value of the state reached after step t,
    is `next_values[t]` when given, else `values[t+1]`, and `bootstrap_value` at t = T-1.
    A terminated step bootstraps nothing; a truncated step bootstraps from v'_t (the value of
    the final observation) and, like a terminated one, passes no credit back from t+1.

    Args:
      rewards: [T, *B] floating, r_t received after the action at step t.
      values: [T, *B] floating, V(s_t).
      terminated: [T, *B] bool or numeric, optional: the episode ended in a terminal state after t.
      truncated: [T, *B] bool or numeric, optional: the episode was cut after t (needs next_values).
      next_values: [T, *B] floating, optional: V of the state reached after t (the final
        observation's value where the episode ended at t).
      bootstrap_value: [*B] floating, optional: V of the state after the last step T-1. One of
        next_values and bootstrap_value is required.
      gamma: discount γ: a float, a traced scalar or an array broadcastable to [T, *B].
      lambda_: GAE λ, same forms as gamma.
      time_axis: the time axis of the per-step arrays (0: time-major [T, *B]; -1: batch-major).
      implementation: None (the fastest for the backend), "triton", "associative" or "sequential".

    Returns:
      GAEOutput(advantages, returns), each [T, *B] in the inputs' floating dtype (16-bit inputs
      are computed in float32).

    Raises:
      ValueError: mismatched shapes, an out-of-range time axis, an empty time axis, truncated
        without next_values, neither or both of bootstrap_value and next_values, an unknown or
        unavailable implementation.
      TypeError: non-floating rewards or values, flags of an unsupported dtype.

    Example:
      >>> import jax.numpy as jnp, rlscan_jax
      >>> out = rlscan_jax.gae(jnp.ones(3), jnp.zeros(3), bootstrap_value=jnp.array(0.0),
      ...                      gamma=1.0, lambda_=1.0)
      >>> out.advantages.tolist()
      [3.0, 2.0, 1.0]

    References:
      Schulman et al., High-Dimensional Continuous Control Using Generalized Advantage
      Estimation, ICLR 2016.
    """
    ep = episodes.validate(
        "gae",
        rewards=rewards,
        values=values,
        time_axis=time_axis,
        terminated=terminated,
        truncated=truncated,
        next_values=next_values,
        bootstrap_value=bootstrap_value,
        bootstrap=episodes.REQUIRED,
    )
    p = episodes.params(ep.step_shape, gamma=gamma, lambda_=lambda_)
    impl = dispatch.resolve(implementation)
    adv, ret = core.evaluate(
        "gae",
        ep.x,
        p,
        axis=ep.axis,
        reverse=True,
        implementation=impl,
        out_dtype=ep.out_dtype,
        param_grads=checks.traced(gamma, lambda_),
    )
    return GAEOutput(adv, ret)
