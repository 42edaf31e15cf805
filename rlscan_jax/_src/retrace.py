"""Retrace(λ) targets for Q(s_t, a_t)."""

from __future__ import annotations

import jax
from jax.typing import ArrayLike

from rlscan_jax._src import checks, core, dispatch, episodes


def retrace(
    rewards: ArrayLike,
    q_values: ArrayLike,
    next_values: ArrayLike,
    log_rhos: ArrayLike,
    *,
    terminated: ArrayLike | None = None,
    truncated: ArrayLike | None = None,
    gamma: ArrayLike = 0.99,
    lambda_: ArrayLike = 1.0,
    c_clip: ArrayLike | None = 1.0,
    time_axis: int = 0,
    implementation: str | None = None,
) -> jax.Array:
    r"""Retrace(λ) targets for the taken actions, with explicit episode boundaries.

        c_t = λ min(c_clip, exp(log_rhos_t))
        G_t = r_t + γ (1 - term_t) next_values_t + γ (1 - done_t) c_{t+1} (G_{t+1} - q_{t+1})

    with the trace term zero at t = T-1 (the window edge) and wherever the episode ended.

    Args:
      rewards: [T, *B] floating.
      q_values: [T, *B] floating, Q(s_t, a_t) of the action taken at t.
      next_values: [T, *B] floating, E_{a~π} Q(s', a) at the state s' reached after t (the final
        observation where the episode ended at t).
      log_rhos: [T, *B] floating, log π(a_t|s_t) - log μ(a_t|s_t).
      terminated: [T, *B] bool or numeric, optional.
      truncated: [T, *B] bool or numeric, optional.
      gamma: discount: a float, a traced scalar or an array broadcastable to [T, *B].
      lambda_: trace λ, same forms as gamma (c_{t+1} uses λ_{t+1}).
      c_clip: c̄ threshold (a float or a traced scalar; None for no clipping).
      time_axis: the time axis of the per-step arrays.
      implementation: None, "triton", "associative" or "sequential".

    Returns:
      q_targets, [T, *B] in the inputs' floating dtype.

    Raises:
      ValueError: mismatched shapes, bad time axis, a non-scalar clip, an unknown implementation.
      TypeError: non-floating rewards, q_values, next_values or log_rhos.

    Example:
      >>> import jax.numpy as jnp, rlscan_jax
      >>> g = rlscan_jax.retrace(jnp.ones(2), jnp.zeros(2), jnp.zeros(2), jnp.zeros(2), gamma=1.0)
      >>> g.tolist()
      [2.0, 1.0]

    References:
      Munos et al., Safe and Efficient Off-Policy Reinforcement Learning, NeurIPS 2016.
    """
    ep = episodes.validate(
        "retrace",
        rewards=rewards,
        values_optional=True,
        time_axis=time_axis,
        terminated=terminated,
        truncated=truncated,
        next_values=checks.float_array(next_values, "next_values"),
        bootstrap=episodes.NEXT_VALUES,
        extra={"q_values": q_values, "log_rhos": log_rhos},
    )
    p = episodes.params(ep.step_shape, gamma=gamma, lambda_=lambda_)
    p["c_clip"] = checks.scalar_param(c_clip, "c_clip")
    impl = dispatch.resolve(implementation)
    return core.evaluate(
        "retrace",
        ep.x,
        p,
        axis=ep.axis,
        reverse=True,
        implementation=impl,
        out_dtype=ep.out_dtype,
        param_grads=checks.traced(gamma, lambda_, c_clip),
    )
