"""Validation shared by the forward-in-time ops (eligibility traces, episodic sums)."""

from __future__ import annotations

from rlscan_jax._src import checks
from rlscan_jax._src.episodes import Episodes


def validate(inputs, done, initial, time_axis) -> Episodes:
    """`inputs` is [T, *B, *F]; `done` is [T, *B] (its shape is the per-step shape) or None."""
    inputs = checks.float_array(inputs, "inputs")
    if inputs.ndim == 0:
        raise ValueError("inputs.shape=() must have a time axis")
    if done is not None:
        done_arr = checks.to_array(done, "done")
        step_shape = tuple(done_arr.shape)
        if done_arr.ndim == 0 or tuple(inputs.shape[: done_arr.ndim]) != step_shape:
            raise ValueError(
                f"done.shape={step_shape} must equal the leading axes of inputs.shape={inputs.shape} "
                "(inputs may only add trailing feature axes)"
            )
        done = checks.flag_array(done_arr, "done", step_shape)
    else:
        step_shape = tuple(inputs.shape)
    axis = checks.time_axis(time_axis, len(step_shape))
    checks.non_empty_time(tuple(inputs.shape), axis, "inputs")
    edge_shape = checks.batch_shape(tuple(inputs.shape), axis)
    if initial is not None:
        initial = checks.boundary(initial, "initial", edge_shape)
    x = {"inputs": inputs, "done": done, "initial": initial}
    return Episodes(x=x, axis=axis, step_shape=step_shape, out_dtype=checks.result_dtype([inputs, initial]))
