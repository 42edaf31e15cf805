"""Input validation shared by every public function.

Everything here runs at trace time on shapes and dtypes only, and raises `ValueError` for
shapes and values, `TypeError` for dtypes, with the argument's name and the offending value
in the message.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

_SMALL_FLOATS = (jnp.bfloat16, jnp.float16)


def to_array(x, name: str) -> jax.Array:
    if isinstance(x, (str, bytes)) or x is None:
        raise TypeError(f"{name} must be an array, got {type(x).__name__}")
    try:
        return jnp.asarray(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{name} could not be converted to an array: {e}") from e


def float_array(x, name: str) -> jax.Array:
    """Returns `x` as a JAX array with a floating dtype, or raises `TypeError`."""
    arr = to_array(x, name)
    if not jnp.issubdtype(arr.dtype, jnp.floating):
        raise TypeError(f"{name}.dtype={arr.dtype} must be a floating dtype (float16, bfloat16, float32 or float64)")
    return arr


def flag_array(x, name: str, shape: tuple[int, ...]) -> jax.Array:
    """Returns a flag array (bool or any real numeric dtype; non-zero is true) of `shape`."""
    arr = to_array(x, name)
    if not (
        arr.dtype == jnp.bool_ or jnp.issubdtype(arr.dtype, jnp.integer) or jnp.issubdtype(arr.dtype, jnp.floating)
    ):
        raise TypeError(f"{name}.dtype={arr.dtype} must be bool, an integer or a floating dtype")
    if arr.shape != shape:
        raise ValueError(f"{name}.shape={arr.shape} must equal the per-step shape {shape}")
    return arr


def time_axis(axis, ndim: int, name: str = "time_axis") -> int:
    """Resolves a possibly negative time axis against `ndim`."""
    if isinstance(axis, bool) or not isinstance(axis, (numbers.Integral, np.integer)):
        raise TypeError(f"{name}={axis!r} must be an int")
    axis = int(axis)
    if ndim == 0:
        raise ValueError("the per-step arrays must have at least one axis (time); got a scalar")
    if not -ndim <= axis < ndim:
        raise ValueError(f"{name}={axis} is out of range for per-step arrays of rank {ndim}")
    return axis % ndim


def per_step(x, name: str, shape: tuple[int, ...]) -> jax.Array:
    """A floating per-step array that must have exactly `shape`."""
    arr = float_array(x, name)
    if arr.shape != shape:
        raise ValueError(f"{name}.shape={arr.shape} must equal the per-step shape {shape}")
    return arr


def non_empty_time(shape: tuple[int, ...], axis: int, name: str) -> None:
    if shape[axis] == 0:
        raise ValueError(f"{name}.shape={shape} has an empty time axis (axis {axis}); T must be at least 1")


def batch_shape(shape: tuple[int, ...], axis: int) -> tuple[int, ...]:
    return shape[:axis] + shape[axis + 1 :]


def boundary(x, name: str, shape: tuple[int, ...]) -> jax.Array:
    """A floating array of one time slice (the per-step shape without time), or a scalar."""
    arr = float_array(x, name)
    if arr.shape != shape:
        try:
            if np.broadcast_shapes(arr.shape, shape) != shape:
                raise ValueError
        except ValueError:
            raise ValueError(
                f"{name}.shape={arr.shape} must be broadcastable to {shape} (the per-step shape without time)"
            ) from None
        arr = jnp.broadcast_to(arr, shape)
    return arr


def param(x, name: str, shape: tuple[int, ...]) -> jax.Array:
    """gamma, lambda_ or a clip: a Python number, a traced scalar, or an array broadcastable to `shape`."""
    if isinstance(x, bool):
        raise TypeError(f"{name}={x!r} must be a number or a floating array, not a bool")
    if isinstance(x, numbers.Real):
        return jnp.asarray(float(x))  # weakly typed: float64 under jax_enable_x64
    arr = to_array(x, name)
    if not jnp.issubdtype(arr.dtype, jnp.floating):
        raise TypeError(f"{name}.dtype={arr.dtype} must be a floating dtype (pass a Python float or a float array)")
    try:
        ok = np.broadcast_shapes(arr.shape, shape) == shape
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"{name}.shape={arr.shape} must be broadcastable to the per-step shape {shape}")
    return arr


def traced(*values) -> bool:
    """Whether any of `values` (parameters as the caller passed them) is a JAX tracer: only a
    traced parameter can be differentiated (a Python or NumPy number, or a concrete array, cannot)."""
    return any(isinstance(v, jax.core.Tracer) for v in values)


def scalar_param(x, name: str) -> jax.Array:
    """A clip threshold: a Python number or a scalar array; None means no clipping (+inf)."""
    if x is None:
        return jnp.asarray(jnp.inf, jnp.float32)
    arr = param(x, name, ())
    if arr.shape != ():
        raise ValueError(f"{name}.shape={arr.shape} must be a scalar")
    return arr


def compute_dtype(dtype) -> jnp.dtype:
    """fp32 accumulation for 16-bit inputs; float64 stays float64."""
    dtype = jnp.dtype(dtype)
    if dtype in (jnp.dtype(t) for t in _SMALL_FLOATS):
        return jnp.dtype(jnp.float32)
    return dtype


def result_dtype(arrays: Sequence[jax.Array | None]) -> jnp.dtype:
    return jnp.result_type(*[a.dtype for a in arrays if a is not None])
