"""rlax-compatible multistep returns and V-trace, computed by this library's scans.

Each function keeps rlax's name, positional signature, defaults, shapes and per-step discount
convention, and adds one keyword-only `implementation` argument. rlax describes episode ends
with a discount per step, `discount_t[t]`, which multiplies both the bootstrap value and the
trace flowing back from t+1 (0 ends the episode, values strictly between 0 and 1 discount).
That is exactly this library's per-step `gamma` array with no `terminated`/`truncated` flags, so:

    truncated_generalized_advantage_estimation -> gae(gamma=discount_t, next_values=values[1:])
    lambda_returns, td_lambda                  -> lambda_returns(gamma=discount_t, next_values=v_t)
    discounted_returns                         -> discounted_returns(gamma=discount_t, bootstrap_value=v_t[-1])
    vtrace, vtrace_td_error_and_advantage      -> linear_scan (rlax takes ratios ρ, not log ρ, and a sample mask)
    general_off_policy_returns_from_q_and_v    -> linear_scan (rlax's c_t are arbitrary weights)
    n_step_bootstrapped_returns                -> plain JAX (a sliding window, not a first-order scan)

Every function takes a single trajectory ([T] arrays, as rlax does); `jax.vmap` over them
batches the underlying scan (one batched scan or one kernel launch, not a loop over the batch).
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.typing import ArrayLike

from rlscan_jax._src import checks, dispatch
from rlscan_jax._src.discounted_returns import discounted_returns as _discounted_returns
from rlscan_jax._src.gae import gae as _gae
from rlscan_jax._src.lambda_returns import lambda_returns as _lambda_returns
from rlscan_jax._src.linear_scan import linear_scan as _linear_scan


class VTraceOutput(NamedTuple):
    """The result of `vtrace_td_error_and_advantage`, with rlax's field names, each [T]."""

    errors: jax.Array
    pg_advantage: jax.Array
    q_estimate: jax.Array


# ---------------------------------------------------------------------------------------------
# Validation and small helpers.


def _trajectory(x, name: str, length: int | None = None) -> jax.Array:
    """A rank-1 floating array, optionally of a given length."""
    arr = checks.float_array(x, name)
    if arr.ndim != 1:
        raise ValueError(
            f"{name}.shape={arr.shape} must be rank 1 (one trajectory, as in rlax); use jax.vmap for a batch"
        )
    if length is not None and arr.shape[0] != length:
        raise ValueError(f"{name}.shape={arr.shape} must be ({length},)")
    if arr.shape[0] == 0:
        raise ValueError(f"{name}.shape={arr.shape} has an empty time axis; T must be at least 1")
    return arr


def _mixing(x, name: str, length: int) -> ArrayLike:
    """λ: a Python number (kept as is), or a floating scalar or [T] array broadcast to [T]."""
    if isinstance(x, bool):
        raise TypeError(f"{name}={x!r} must be a number or a floating array, not a bool")
    if isinstance(x, numbers.Real):
        return x
    arr = checks.float_array(x, name)
    if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] not in (1, length)):
        raise ValueError(f"{name}.shape={arr.shape} must be () or ({length},)")
    return jnp.broadcast_to(arr, (length,))


def _select(stop_target_gradients, stopped: jax.Array, plain: jax.Array) -> jax.Array:
    """`stopped` if stop_target_gradients else `plain`; a traced flag selects like lax.select."""
    if isinstance(stop_target_gradients, (bool, np.bool_, numbers.Integral)):
        return stopped if stop_target_gradients else plain
    flag = jnp.asarray(stop_target_gradients)
    if flag.shape != ():
        raise ValueError(f"stop_target_gradients.shape={flag.shape} must be a scalar")
    return lax.select(flag.astype(jnp.bool_), stopped, plain)


# ---------------------------------------------------------------------------------------------
# Multistep returns.


def truncated_generalized_advantage_estimation(
    r_t: ArrayLike,
    discount_t: ArrayLike,
    lambda_: ArrayLike,
    values: ArrayLike,
    stop_target_gradients: bool = False,
    *,
    implementation: str | None = None,
) -> jax.Array:
    r"""Truncated generalized advantage estimates of one trajectory (rlax convention).

        δ_t = r_t + discount_t · values[t+1] - values[t]
        A_t = δ_t + discount_t · λ_t · A_{t+1},    A_T = 0

    Computed by `rlscan_jax.gae` with `gamma=discount_t` and `next_values=values[1:]`.

    Args:
      r_t: [T] floating, the reward received after acting at step t.
      discount_t: [T] floating, the discount applied to values[t+1] and to A_{t+1}; 0 ends the
        episode after step t.
      lambda_: λ, a float, a floating scalar, or [T] floating (λ_t at step t).
      values: [T+1] floating, V(s_0), ..., V(s_T).
      stop_target_gradients: if true, the advantages carry no gradient at all (as in rlax).
      implementation: None, "triton", "associative" or "sequential" (see `rlscan_jax.gae`).

    Returns:
      advantages, [T], in the inputs' floating dtype.

    Raises:
      ValueError: inputs not rank 1, mismatched lengths, values not of length T+1.
      TypeError: non-floating inputs.

    Example:
      >>> import jax.numpy as jnp
      >>> from rlscan_jax import rlax_compat
      >>> rlax_compat.truncated_generalized_advantage_estimation(
      ...     jnp.ones(3), jnp.array([1.0, 0.0, 1.0]), 1.0, jnp.zeros(4)).tolist()
      [2.0, 1.0, 1.0]

    References:
      Schulman et al., High-Dimensional Continuous Control Using Generalized Advantage
      Estimation, ICLR 2016.
    """
    r_t = _trajectory(r_t, "r_t")
    n = r_t.shape[0]
    discount_t = _trajectory(discount_t, "discount_t", n)
    values = _trajectory(values, "values", n + 1)
    lambda_ = _mixing(lambda_, "lambda_", n)
    out = _gae(
        r_t,
        values[:-1],
        next_values=values[1:],
        gamma=discount_t,
        lambda_=lambda_,
        implementation=implementation,
    )
    return _select(stop_target_gradients, lax.stop_gradient(out.advantages), out.advantages)


def _lambda_return_targets(r_t, discount_t, v_t, lambda_, implementation) -> jax.Array:
    r_t = _trajectory(r_t, "r_t")
    n = r_t.shape[0]
    discount_t = _trajectory(discount_t, "discount_t", n)
    v_t = _trajectory(v_t, "v_t", n)
    lambda_ = _mixing(lambda_, "lambda_", n)
    return _lambda_returns(r_t, next_values=v_t, gamma=discount_t, lambda_=lambda_, implementation=implementation)


def lambda_returns(
    r_t: ArrayLike,
    discount_t: ArrayLike,
    v_t: ArrayLike,
    lambda_: ArrayLike = 1.0,
    stop_target_gradients: bool = False,
    *,
    implementation: str | None = None,
) -> jax.Array:
    r"""Truncated λ-returns of one trajectory (rlax convention).

        G_t = r_t + discount_t [(1 - λ_t) v_t + λ_t G_{t+1}],    G_{T-1} = r_{T-1} + discount_{T-1} v_{T-1}

    Here v_t is the value of the state reached after step t. Computed by
    `rlscan_jax.lambda_returns` with `gamma=discount_t` and `next_values=v_t`.

    Args:
      r_t: [T] floating, the reward received after acting at step t.
      discount_t: [T] floating, the discount applied after step t; 0 ends the episode.
      v_t: [T] floating, the value of the state reached after step t.
      lambda_: λ, a float, a floating scalar, or [T] floating.
      stop_target_gradients: if true, the returns carry no gradient.
      implementation: None, "triton", "associative" or "sequential".

    Returns:
      returns, [T], in the inputs' floating dtype.

    Raises:
      ValueError: inputs not rank 1 or of mismatched lengths.
      TypeError: non-floating inputs.

    Example:
      >>> import jax.numpy as jnp
      >>> from rlscan_jax import rlax_compat
      >>> rlax_compat.lambda_returns(jnp.ones(3), jnp.full(3, 0.5), jnp.zeros(3)).tolist()
      [1.75, 1.5, 1.0]

    References:
      Sutton and Barto, Reinforcement Learning: An Introduction, 2nd ed., chapter 12.
    """
    g = _lambda_return_targets(r_t, discount_t, v_t, lambda_, implementation)
    return _select(stop_target_gradients, lax.stop_gradient(g), g)


def discounted_returns(
    r_t: ArrayLike,
    discount_t: ArrayLike,
    v_t: ArrayLike,
    stop_target_gradients: bool = False,
    *,
    implementation: str | None = None,
) -> jax.Array:
    r"""Discounted returns of one trajectory, bootstrapped from the last value (rlax convention).

        G_t = r_t + discount_t G_{t+1},    G_{T-1} = r_{T-1} + discount_{T-1} v_{T-1}

    Only the last entry of v_t is used (v_t may be a scalar). Computed by
    `rlscan_jax.discounted_returns` with `gamma=discount_t` and `bootstrap_value=v_t[-1]`.

    Args:
      r_t: [T] floating.
      discount_t: [T] floating; 0 ends the episode after step t.
      v_t: [T] or scalar floating: the bootstrap value after the last step.
      stop_target_gradients: if true, the returns carry no gradient.
      implementation: None, "triton", "associative" or "sequential".

    Returns:
      returns, [T], in the inputs' floating dtype.

    Raises:
      ValueError: r_t or discount_t not rank 1 or of mismatched lengths; v_t neither a scalar
        nor of length T.
      TypeError: non-floating inputs.

    Example:
      >>> import jax.numpy as jnp
      >>> from rlscan_jax import rlax_compat
      >>> rlax_compat.discounted_returns(jnp.ones(3), jnp.full(3, 0.5), jnp.array(2.0)).tolist()
      [2.0, 2.0, 2.0]

    References:
      Sutton and Barto, Reinforcement Learning: An Introduction, 2nd ed., chapter 3.
    """
    r_t = _trajectory(r_t, "r_t")
    n = r_t.shape[0]
    discount_t = _trajectory(discount_t, "discount_t", n)
    v_t = checks.float_array(v_t, "v_t")
    if v_t.ndim > 1 or (v_t.ndim == 1 and v_t.shape[0] not in (1, n)):
        raise ValueError(f"v_t.shape={v_t.shape} must be () or ({n},)")
    bootstrap = v_t if v_t.ndim == 0 else v_t[-1]
    g = _discounted_returns(r_t, bootstrap_value=bootstrap, gamma=discount_t, implementation=implementation)
    return _select(stop_target_gradients, lax.stop_gradient(g), g)


def n_step_bootstrapped_returns(
    r_t: ArrayLike,
    discount_t: ArrayLike,
    v_t: ArrayLike,
    n: int,
    lambda_t: ArrayLike = 1.0,
    stop_target_gradients: bool = False,
    *,
    implementation: str | None = None,
) -> jax.Array:
    r"""n-step bootstrapped (λ-)returns of one trajectory (rlax convention).

        G_t = x_t^{(t)},   x_k^{(t)} = r_k + discount_k [(1 - λ_k) v_k + λ_k x_{k+1}^{(t)}]  for t ≤ k ≤ e_t
        x_{e_t+1}^{(t)} = v_{e_t},   e_t = min(t + n - 1, T - 1)

    Each G_t looks at most n steps ahead and then bootstraps; near the end of the trajectory the
    window is cut at T-1. With λ = 1 this is r_t + discount_t r_{t+1} + … + (∏ discount) v_{t+n-1}.

    Not a first-order scan: every output has its own window of n steps, so no recurrence
    h_t = a_t + b_t h_{t+1} links consecutive outputs. It is computed in plain JAX as
    min(n, T) elementwise passes over the trajectory (one `lax.scan` over the window
    offset, carrying all T windows at once), O(n T) work and O(T) memory.

    Args:
      r_t: [T] floating.
      discount_t: [T] floating; 0 ends the episode after step t.
      v_t: [T] floating, the value of the state reached after step t.
      n: the number of steps, a Python int ≥ 1.
      lambda_t: λ, a float, a floating scalar, or [T] floating.
      stop_target_gradients: if true, the returns carry no gradient.
      implementation: None, "associative" or "sequential" (all run the same plain JAX: n-step
        returns are not a first-order scan). "triton" raises: there is no kernel for it, and
        nothing falls back silently.

    Returns:
      returns, [T], in the inputs' floating dtype.

    Raises:
      ValueError: inputs not rank 1 or of mismatched lengths; n not ≥ 1; an unknown
        implementation, or "triton".
      TypeError: non-floating inputs; n not an int.

    Example:
      >>> import jax.numpy as jnp
      >>> from rlscan_jax import rlax_compat
      >>> rlax_compat.n_step_bootstrapped_returns(jnp.ones(4), jnp.ones(4), jnp.full(4, 10.0), 2).tolist()
      [12.0, 12.0, 12.0, 11.0]

    References:
      Sutton and Barto, Reinforcement Learning: An Introduction, 2nd ed., chapter 7.
    """
    if isinstance(n, bool) or not isinstance(n, (numbers.Integral, np.integer)):
        raise TypeError(f"n={n!r} must be a Python int")
    n = int(n)
    if n < 1:
        raise ValueError(f"n={n} must be at least 1")
    if implementation == "triton":
        raise ValueError('implementation="triton": n_step_bootstrapped_returns has no Triton kernel (not a scan)')
    dispatch.resolve(implementation)
    r_t = _trajectory(r_t, "r_t")
    length = r_t.shape[0]
    discount_t = _trajectory(discount_t, "discount_t", length)
    v_t = _trajectory(v_t, "v_t", length)
    dtype = checks.result_dtype([r_t, discount_t, v_t])
    lam = jnp.broadcast_to(jnp.asarray(_mixing(lambda_t, "lambda_t", length), dtype), (length,))
    steps = min(n, length)  # offsets j ≥ T fall outside every window
    t = jnp.arange(length)
    x = v_t[jnp.minimum(t + n - 1, length - 1)].astype(dtype)  # the bootstrap of each window
    padded = [jnp.pad(a.astype(dtype), (0, steps - 1)) for a in (r_t, discount_t, lam, v_t)]

    def window_step(x, j):
        # Every window t takes its step k = t + j (if k < T) in one elementwise pass.
        r, d, lj, v = (lax.dynamic_slice_in_dim(a, j, length) for a in padded)
        inside = t + j < length
        return jnp.where(inside, r + d * ((1 - lj) * v + lj * x), x), None

    x, _ = lax.scan(window_step, x, jnp.arange(steps - 1, -1, -1))
    return _select(stop_target_gradients, lax.stop_gradient(x), x)


def td_lambda(
    v_tm1: ArrayLike,
    r_t: ArrayLike,
    discount_t: ArrayLike,
    v_t: ArrayLike,
    lambda_: ArrayLike,
    stop_target_gradients: bool = True,
    *,
    implementation: str | None = None,
) -> jax.Array:
    r"""TD(λ) errors of one trajectory (rlax convention).

        error_t = G_t - v_tm1[t],    G_t = r_t + discount_t [(1 - λ_t) v_t + λ_t G_{t+1}]

    G is `lambda_returns(r_t, discount_t, v_t, lambda_)`; with stop_target_gradients the
    gradient flows only through -v_tm1.

    Args:
      v_tm1: [T] floating, V(s_t), the values being corrected.
      r_t: [T] floating.
      discount_t: [T] floating; 0 ends the episode after step t.
      v_t: [T] floating, the value of the state reached after step t.
      lambda_: λ, a float, a floating scalar, or [T] floating.
      stop_target_gradients: if true (the default), no gradient flows through the λ-returns.
      implementation: None, "triton", "associative" or "sequential".

    Returns:
      errors, [T], in the inputs' floating dtype.

    Raises:
      ValueError: inputs not rank 1 or of mismatched lengths.
      TypeError: non-floating inputs.

    Example:
      >>> import jax.numpy as jnp
      >>> from rlscan_jax import rlax_compat
      >>> rlax_compat.td_lambda(jnp.ones(2), jnp.ones(2), jnp.ones(2), jnp.zeros(2), 1.0).tolist()
      [1.0, 0.0]

    References:
      Sutton and Barto, Reinforcement Learning: An Introduction, 2nd ed., chapter 12.
    """
    g = _lambda_return_targets(r_t, discount_t, v_t, lambda_, implementation)
    v_tm1 = _trajectory(v_tm1, "v_tm1", g.shape[0])
    return _select(stop_target_gradients, lax.stop_gradient(g), g) - v_tm1


def general_off_policy_returns_from_q_and_v(
    q_t: ArrayLike,
    v_t: ArrayLike,
    r_t: ArrayLike,
    discount_t: ArrayLike,
    c_t: ArrayLike,
    stop_target_gradients: bool = False,
    *,
    implementation: str | None = None,
) -> jax.Array:
    r"""General off-policy returns (Retrace, Tree-Backup, Q(λ), IS) of one trajectory (rlax convention).

        G_t = r_t + discount_t (v_t - c_t q_t + c_t G_{t+1})   for t < K
        G_K = r_K + discount_K v_K

    as the backward scan h_t = a_t + b_t h_{t+1} with a_t = r_t + discount_t (v_t - c_t q_t)
    and b_t = discount_t c_t (c_K = q_K = 0), solved by `rlscan_jax.linear_scan`.

    Args:
      q_t: [K] floating, Q under π of the action taken in the state reached after step t.
      v_t: [K+1] floating, the value under π of the state reached after step t.
      r_t: [K+1] floating.
      discount_t: [K+1] floating; 0 ends the episode after step t.
      c_t: [K] floating, the trace weights (any non-negative weights: λ, π, ρ, λ min(1, ρ), …).
      stop_target_gradients: if true, the returns carry no gradient.
      implementation: None, "triton", "associative" or "sequential".

    Returns:
      returns, [K+1], in the inputs' floating dtype.

    Raises:
      ValueError: inputs not rank 1 or of mismatched lengths.
      TypeError: non-floating inputs.

    Example:
      >>> import jax.numpy as jnp
      >>> from rlscan_jax import rlax_compat
      >>> rlax_compat.general_off_policy_returns_from_q_and_v(
      ...     jnp.zeros(1), jnp.ones(2), jnp.ones(2), jnp.ones(2), jnp.ones(1)).tolist()
      [4.0, 2.0]

    References:
      Munos et al., Safe and Efficient Off-Policy Reinforcement Learning, NeurIPS 2016.
    """
    r_t = _trajectory(r_t, "r_t")
    length = r_t.shape[0]
    v_t = _trajectory(v_t, "v_t", length)
    discount_t = _trajectory(discount_t, "discount_t", length)
    q_t = checks.float_array(q_t, "q_t")
    c_t = checks.float_array(c_t, "c_t")
    for name, arr in (("q_t", q_t), ("c_t", c_t)):
        if arr.shape != (length - 1,):
            raise ValueError(
                f"{name}.shape={arr.shape} must be ({length - 1},), one shorter than r_t.shape={(length,)}"
            )
    zero = jnp.zeros((1,), c_t.dtype)
    c = jnp.concatenate([c_t, zero])
    q = jnp.concatenate([q_t, zero.astype(q_t.dtype)])
    a = r_t + discount_t * (v_t - c * q)
    b = discount_t * c
    g = _linear_scan(a, b, reverse=True, implementation=implementation)
    return _select(stop_target_gradients, lax.stop_gradient(g), g)


# ---------------------------------------------------------------------------------------------
# V-trace.


def _vtrace_inputs(v_tm1, v_t, r_t, discount_t, rho_tm1, sample_mask):
    r_t = _trajectory(r_t, "r_t")
    length = r_t.shape[0]
    v_tm1 = _trajectory(v_tm1, "v_tm1", length)
    v_t = _trajectory(v_t, "v_t", length)
    discount_t = _trajectory(discount_t, "discount_t", length)
    rho_tm1 = _trajectory(rho_tm1, "rho_tm1", length)
    if sample_mask is not None:
        sample_mask = checks.flag_array(sample_mask, "sample_mask", (length,))
        sample_mask = sample_mask if sample_mask.dtype == jnp.bool_ else sample_mask != 0
    return v_tm1, v_t, r_t, discount_t, rho_tm1, sample_mask


def _vtrace_errors(v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_, clip_rho_threshold, sample_mask, implementation):
    """vs - v_tm1 before any stop-gradient, as one backward linear scan."""
    c = jnp.minimum(1.0, rho_tm1) * lambda_
    td = jnp.minimum(clip_rho_threshold, rho_tm1) * (r_t + discount_t * v_t - v_tm1)
    a = td
    b = discount_t * c
    if sample_mask is not None:
        # A step that is not learnable passes the error of step t+1 through unchanged.
        learnable = sample_mask.astype(td.dtype)
        a = learnable * td
        b = learnable * b + (1.0 - learnable)
    return _linear_scan(a, b, reverse=True, implementation=implementation)


def vtrace(
    v_tm1: ArrayLike,
    v_t: ArrayLike,
    r_t: ArrayLike,
    discount_t: ArrayLike,
    rho_tm1: ArrayLike,
    lambda_: ArrayLike = 1.0,
    clip_rho_threshold: float = 1.0,
    stop_target_gradients: bool = True,
    sample_mask: ArrayLike | None = None,
    *,
    implementation: str | None = None,
) -> jax.Array:
    r"""V-trace errors vs_t - V(s_t) of one trajectory (rlax convention).

        c_t = λ_t min(1, ρ_t),   δ_t = min(clip_rho_threshold, ρ_t) (r_t + discount_t v_t - v_tm1[t])
        e_t = m_t (δ_t + discount_t c_t e_{t+1}) + (1 - m_t) e_{t+1},   e_T = 0

    with m the sample mask (1 where absent), solved as the backward linear scan with
    a_t = m_t δ_t, b_t = m_t discount_t c_t + (1 - m_t) by `rlscan_jax.linear_scan`. rlax takes
    the ratios ρ themselves (not log ρ) and a sample mask, which `rlscan_jax.vtrace` does not,
    so the scan coefficients are built here from rlax's formulas.

    Args:
      v_tm1: [T] floating, V(s_t).
      v_t: [T] floating, the value of the state reached after step t.
      r_t: [T] floating.
      discount_t: [T] floating; 0 ends the episode after step t.
      rho_tm1: [T] floating, the importance ratios π(a_t|s_t) / μ(a_t|s_t).
      lambda_: λ, a float, a floating scalar, or [T] floating.
      clip_rho_threshold: the ρ̄ clip of the TD errors (the trace clip c̄ is 1, as in rlax).
      stop_target_gradients: if true (the default), the errors are stop_gradient(vs) - v_tm1.
      sample_mask: [T] bool, optional: the steps that are learnable.
      implementation: None, "triton", "associative" or "sequential".

    Returns:
      errors, [T], in the inputs' floating dtype.

    Raises:
      ValueError: inputs not rank 1 or of mismatched lengths.
      TypeError: non-floating inputs, a sample mask of an unsupported dtype.

    Example:
      >>> import jax.numpy as jnp
      >>> from rlscan_jax import rlax_compat
      >>> rlax_compat.vtrace(jnp.zeros(2), jnp.zeros(2), jnp.ones(2), jnp.ones(2), jnp.ones(2)).tolist()
      [2.0, 1.0]

    References:
      Espeholt et al., IMPALA: Scalable Distributed Deep-RL with Importance Weighted
      Actor-Learner Architectures, ICML 2018.
    """
    v_tm1, v_t, r_t, discount_t, rho_tm1, sample_mask = _vtrace_inputs(
        v_tm1, v_t, r_t, discount_t, rho_tm1, sample_mask
    )
    lambda_ = _mixing(lambda_, "lambda_", r_t.shape[0])
    errors = _vtrace_errors(
        v_tm1, v_t, r_t, discount_t, rho_tm1, lambda_, clip_rho_threshold, sample_mask, implementation
    )
    return _select(stop_target_gradients, lax.stop_gradient(errors + v_tm1) - v_tm1, errors)


def vtrace_td_error_and_advantage(
    v_tm1: ArrayLike,
    v_t: ArrayLike,
    r_t: ArrayLike,
    discount_t: ArrayLike,
    rho_tm1: ArrayLike,
    lambda_: ArrayLike = 1.0,
    clip_rho_threshold: float = 1.0,
    clip_pg_rho_threshold: float = 1.0,
    stop_target_gradients: bool = True,
    sample_mask: ArrayLike | None = None,
    *,
    implementation: str | None = None,
) -> VTraceOutput:
    r"""V-trace errors, policy-gradient advantages and Q estimates of one trajectory (rlax convention).

        errors_t = vtrace(...)_t,   vs_t = errors_t + v_tm1[t]
        q_t = r_t + discount_t (λ_t vs_{t+1} + (1 - λ_t) v_tm1[t+1])   for t < T-1
        q_{T-1} = r_{T-1} + discount_{T-1} v_t[T-1]
        pg_advantage_t = min(clip_pg_rho_threshold, ρ_t) (q_t - v_tm1[t])

    The stop-gradient applies to the errors only (as in rlax): q_estimate and pg_advantage
    still depend differentiably on the rewards, discounts, λ and values.

    Args:
      v_tm1: [T] floating, V(s_t).
      v_t: [T] floating, the value of the state reached after step t.
      r_t: [T] floating.
      discount_t: [T] floating; 0 ends the episode after step t.
      rho_tm1: [T] floating, the importance ratios π(a_t|s_t) / μ(a_t|s_t).
      lambda_: λ, a float, a floating scalar, or [T] floating.
      clip_rho_threshold: the ρ̄ clip of the TD errors.
      clip_pg_rho_threshold: the ρ clip of the policy-gradient advantages.
      stop_target_gradients: if true (the default), the errors are stop_gradient(vs) - v_tm1.
      sample_mask: [T] bool, optional: the steps that are learnable (errors only).
      implementation: None, "triton", "associative" or "sequential".

    Returns:
      VTraceOutput(errors, pg_advantage, q_estimate), each [T] in the inputs' floating dtype.

    Raises:
      ValueError: inputs not rank 1 or of mismatched lengths.
      TypeError: non-floating inputs, a sample mask of an unsupported dtype.

    Example:
      >>> import jax.numpy as jnp
      >>> from rlscan_jax import rlax_compat
      >>> out = rlax_compat.vtrace_td_error_and_advantage(
      ...     jnp.zeros(2), jnp.zeros(2), jnp.ones(2), jnp.ones(2), jnp.ones(2))
      >>> out.q_estimate.tolist()
      [2.0, 1.0]

    References:
      Espeholt et al., IMPALA: Scalable Distributed Deep-RL with Importance Weighted
      Actor-Learner Architectures, ICML 2018.
    """
    v_tm1, v_t, r_t, discount_t, rho_tm1, sample_mask = _vtrace_inputs(
        v_tm1, v_t, r_t, discount_t, rho_tm1, sample_mask
    )
    lam = jnp.ones_like(discount_t) * _mixing(lambda_, "lambda_", r_t.shape[0])
    errors = vtrace(
        v_tm1,
        v_t,
        r_t,
        discount_t,
        rho_tm1,
        lam,
        clip_rho_threshold,
        stop_target_gradients,
        sample_mask,
        implementation=implementation,
    )
    targets = errors + v_tm1
    # Step t < T-1 bootstraps from the λ-mixture of vs and V at s_{t+1}; T-1 from v_t[T-1].
    mixed = lam[:-1] * targets[1:] + (1 - lam[:-1]) * v_tm1[1:]
    bootstrap = jnp.concatenate([mixed, v_t[-1:]])
    q_estimate = r_t + discount_t * bootstrap
    pg_advantage = jnp.minimum(clip_pg_rho_threshold, rho_tm1) * (q_estimate - v_tm1)
    return VTraceOutput(errors=errors, pg_advantage=pg_advantage, q_estimate=q_estimate)
