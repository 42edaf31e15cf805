"""Validation of the episode inputs shared by GAE, V-trace, Retrace and the returns.

The rules of DESIGN.md §2: every per-step array has the shape of `rewards`; flags are bool or
numeric (non-zero is true); the next-state value v'_t is `next_values[t]` when given, else
`values[t+1]`, and `bootstrap_value` at t = T-1; `truncated` needs `next_values`.
"""

from __future__ import annotations

import dataclasses

import jax

from rlscan_jax._src import checks

# How an op treats a missing bootstrap.
REQUIRED = "required"  # bootstrap_value or next_values must be given
ZERO = "zero"  # absent means a zero bootstrap (reward-to-go)
NEXT_VALUES = "next_values"  # next_values is a required argument; bootstrap_value does not exist


@dataclasses.dataclass(frozen=True)
class Episodes:
    """Validated inputs: the arrays by name, the time axis, the per-step shape, the output dtype."""

    x: dict
    axis: int
    step_shape: tuple[int, ...]
    out_dtype: object


def validate(
    fn: str,
    *,
    rewards,
    time_axis,
    terminated,
    truncated,
    next_values,
    bootstrap_value=None,
    bootstrap: str,
    values=None,
    values_optional: bool = False,
    extra: dict | None = None,
) -> Episodes:
    """Checks and converts the episode inputs of public function `fn`.

    `values` is required unless `values_optional`. `extra` holds further required floating
    per-step inputs by name (log_rhos, q_values).
    """
    rewards = checks.float_array(rewards, "rewards")
    step_shape = tuple(rewards.shape)
    if rewards.ndim == 0:
        raise ValueError(f"rewards.shape={step_shape} must have a time axis ([T] or [T, *B])")
    axis = checks.time_axis(time_axis, rewards.ndim)
    checks.non_empty_time(step_shape, axis, "rewards")
    x = {"rewards": rewards}
    if values is None and values_optional:
        x["values"] = None
    else:
        x["values"] = checks.per_step(values, "values", step_shape)
    for name, v in (extra or {}).items():
        x[name] = checks.per_step(v, name, step_shape)
    x["terminated"] = None if terminated is None else checks.flag_array(terminated, "terminated", step_shape)
    x["truncated"] = None if truncated is None else checks.flag_array(truncated, "truncated", step_shape)
    x["next_values"] = None if next_values is None else checks.per_step(next_values, "next_values", step_shape)
    if truncated is not None and next_values is None:
        raise ValueError(
            f"{fn}: truncated was given without next_values; a truncated step bootstraps from the value of "
            "the state actually reached (the final observation), so pass next_values"
        )
    batch = checks.batch_shape(step_shape, axis)
    if bootstrap_value is not None:
        if next_values is not None:
            raise ValueError(
                f"{fn}: pass either next_values or bootstrap_value, not both "
                "(next_values[T-1] already is the value after the last step)"
            )
        bootstrap_value = checks.boundary(bootstrap_value, "bootstrap_value", batch)
    elif bootstrap == REQUIRED and next_values is None:
        raise ValueError(
            f"{fn}: needs bootstrap_value (shape {batch}, the value after the last step) or next_values "
            f"(shape {step_shape}); there is no silent zero bootstrap"
        )
    if bootstrap != NEXT_VALUES:
        x["bootstrap_value"] = bootstrap_value
    floats = [v for k, v in x.items() if v is not None and k not in ("terminated", "truncated")]
    return Episodes(x=x, axis=axis, step_shape=step_shape, out_dtype=checks.result_dtype(floats))


def params(step_shape: tuple[int, ...], **kwargs) -> dict[str, jax.Array]:
    """gamma and lambda_ (broadcastable to the per-step shape) as arrays."""
    return {name: checks.param(v, name, step_shape) for name, v in kwargs.items()}
