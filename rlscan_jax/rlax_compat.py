"""A drop-in for rlax's multistep returns and V-trace, backed by rlscan_jax's scans.

Switching is one line::

    from rlscan_jax import rlax_compat as rlax

Every function keeps rlax's name, positional signature, defaults and semantics (single [T]
trajectories, a per-step `discount_t` where 0 ends the episode, scalar or per-step λ,
`stop_target_gradients` applied where rlax applies it), and adds one keyword-only argument,
`implementation` (None, "triton", "associative" or "sequential"). `jax.vmap` over any of them
runs one batched scan (one kernel launch on GPU), not a loop over the batch.

Only the functions listed in `__all__` are provided; the rest of rlax is not mirrored.
"""

from rlscan_jax._src.rlax_compat_impl import (
    VTraceOutput,
    discounted_returns,
    general_off_policy_returns_from_q_and_v,
    lambda_returns,
    n_step_bootstrapped_returns,
    td_lambda,
    truncated_generalized_advantage_estimation,
    vtrace,
    vtrace_td_error_and_advantage,
)

__all__ = (
    "VTraceOutput",
    "discounted_returns",
    "general_off_policy_returns_from_q_and_v",
    "lambda_returns",
    "n_step_bootstrapped_returns",
    "td_lambda",
    "truncated_generalized_advantage_estimation",
    "vtrace",
    "vtrace_td_error_and_advantage",
)
