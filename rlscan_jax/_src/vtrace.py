"""V-trace off-policy value targets and policy-gradient advantages."""

from __future__ import annotations

from typing import NamedTuple

import jax
from jax.typing import ArrayLike

from rlscan_jax._src import checks, core, dispatch, episodes


class VTraceOutput(NamedTuple):
    """The result of `vtrace`: value targets vs and policy-gradient advantages, both [T, *B]."""

    vs: jax.Array
    pg_advantages: jax.Array


def vtrace(
    rewards: ArrayLike,
    values: ArrayLike,
    log_rhos: ArrayLike,
    *,
    terminated: ArrayLike | None = None,
    truncated: ArrayLike | None = None,
    next_values: ArrayLike | None = None,
    bootstrap_value: ArrayLike | None = None,
    gamma: ArrayLike = 0.99,
    lambda_: ArrayLike = 1.0,
    rho_clip: ArrayLike | None = 1.0,
    c_clip: ArrayLike | None = 1.0,
    pg_rho_clip: ArrayLike | None = 1.0,
    time_axis: int = 0,
    implementation: str | None = None,
) -> VTraceOutput:
    r"""V-trace targets (IMPALA) with explicit episode boundaries.

        ρ_t = exp(log_rhos_t),  ρ̄_t = min(rho_clip, ρ_t),  c_t = λ min(c_clip, ρ_t)
        δ_t = ρ̄_t (r_t + γ (1 - term_t) v'_t - V_t)
        vs_t - V_t = δ_t + γ (1 - done_t) c_t (vs_{t+1} - V_{t+1}),   zero after T-1
        pg_t = min(pg_rho_clip, ρ_t) (r_t + γ (1 - term_t) w_t - V_t)

    with w_t = vs_{t+1} while the episode continues inside the window, else v'_t. v'_t is
    `next_values[t]` when given, else `values[t+1]`, and `bootstrap_value` at t = T-1.

    Args:
      rewards: [T, *B] floating.
      values: [T, *B] floating, V(s_t) under the learner's value function.
      log_rhos: [T, *B] floating, log π(a_t|s_t) - log μ(a_t|s_t).
      terminated: [T, *B] bool or numeric, optional.
      truncated: [T, *B] bool or numeric, optional (needs next_values).
      next_values: [T, *B] floating, optional: V of the state reached after t.
      bootstrap_value: [*B] floating, optional: V after the last step. One of next_values and
        bootstrap_value is required.
      gamma: discount: a float, a traced scalar or an array broadcastable to [T, *B].
      lambda_: the trace parameter λ multiplying c_t, same forms as gamma.
      rho_clip: ρ̄ threshold (a float or a traced scalar; None for no clipping).
      c_clip: c̄ threshold, likewise.
      pg_rho_clip: the policy-gradient ρ threshold, likewise.
      time_axis: the time axis of the per-step arrays.
      implementation: None, "triton", "associative" or "sequential".

    Returns:
      VTraceOutput(vs, pg_advantages), each [T, *B] in the inputs' floating dtype.

    Raises:
      ValueError: mismatched shapes, bad time axis, truncated without next_values, neither or
        both of bootstrap_value and next_values, a non-scalar clip, an unknown implementation.
      TypeError: non-floating rewards, values or log_rhos.

    Example:
      >>> import jax.numpy as jnp, rlscan_jax
      >>> out = rlscan_jax.vtrace(jnp.ones(2), jnp.zeros(2), jnp.zeros(2),
      ...                         bootstrap_value=jnp.array(0.0), gamma=1.0)
      >>> out.vs.tolist()
      [2.0, 1.0]

    References:
      Espeholt et al., IMPALA: Scalable Distributed Deep-RL with Importance Weighted
      Actor-Learner Architectures, ICML 2018.
    """
    ep = episodes.validate(
        "vtrace",
        rewards=rewards,
        values=values,
        time_axis=time_axis,
        terminated=terminated,
        truncated=truncated,
        next_values=next_values,
        bootstrap_value=bootstrap_value,
        bootstrap=episodes.REQUIRED,
        extra={"log_rhos": log_rhos},
    )
    p = episodes.params(ep.step_shape, gamma=gamma, lambda_=lambda_)
    p["rho_clip"] = checks.scalar_param(rho_clip, "rho_clip")
    p["c_clip"] = checks.scalar_param(c_clip, "c_clip")
    p["pg_rho_clip"] = checks.scalar_param(pg_rho_clip, "pg_rho_clip")
    impl = dispatch.resolve(implementation)
    vs, pg = core.evaluate(
        "vtrace",
        ep.x,
        p,
        axis=ep.axis,
        reverse=True,
        implementation=impl,
        out_dtype=ep.out_dtype,
        param_grads=checks.traced(gamma, lambda_, rho_clip, c_clip, pg_rho_clip),
    )
    return VTraceOutput(vs, pg)
