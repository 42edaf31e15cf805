"""linear_scan, episodic_cumsum and eligibility_traces share one kernel."""

import math

import jax.numpy as jnp

from rlscan_jax._src.triton import launch
from rlscan_jax._src.triton.kernels.linear import linear_kernel


def _forward(
    op,
    inputs,
    *,
    b=None,
    reset=None,
    reset_prev=False,
    gamma=None,
    lam=None,
    initial,
    axis,
    reverse,
    out_dtype,
    column_vec=0,
    e=None,
    decay_grad=0,
):
    """(h, D): `op`: the op launching (launch.scan_call). reset (per-step, possibly without inputs'
    trailing feature axes) applies at t, or t-1 (reset_prev). `column_vec`: launch.scan_call's.
    `decay_grad` (eligibility traces' adjoint; `e` the forward pass's float32 traces): how D, the
    gradient of γλ (kernels/linear.py), is written, the kernel's DECAY_GRAD (1 of h's shape, 2 one
    value a row for each segment: launch.sum_segments); else D is None."""
    shape = inputs.shape
    step = shape if reset is None else reset.shape
    feat = math.prod(shape[len(step) :])
    decay = gamma is not None
    gamma, gamma_form = launch.param(gamma, step, axis) if decay else (inputs, 0)
    lam, lam_form = launch.param(lam, step, axis) if decay else (inputs, 0)
    acc = jnp.float64 if out_dtype == jnp.float64 else jnp.float32
    h, d = launch.scan_call(
        linear_kernel,
        op=op,
        g=launch.geometry(shape, axis),
        inputs=[
            inputs,
            launch.or_(b, inputs),
            launch.or_(reset, inputs),
            gamma,
            lam,
            launch.or_(initial, inputs),
            launch.or_(e, inputs),
        ],
        scalars=[feat],
        outputs=[launch.out(shape, out_dtype), launch.param_slot(decay_grad, shape, acc)],
        reverse=reverse,
        f64=out_dtype == jnp.float64,
        initial=initial,
        column_vec=column_vec,
        REVERSE=reverse,
        HAS_B=b is not None,
        HAS_RESET=reset is not None,
        RESET_PREV=reset_prev,
        HAS_DECAY=decay,
        GAMMA_FULL=gamma_form,
        LAMBDA_FULL=lam_form,
        HAS_INITIAL=initial is not None,
        HAS_FEAT=feat > 1,
        DECAY_GRAD=decay_grad,
    )
    return h, (d if decay_grad else None)


def linear_scan(x, p, *, axis, reverse, out_dtype, store_h):
    """x: a, b (a's shape), optional reset (a's shape; the adjoint pass), optional initial.
    p: empty, or (the adjoint pass of an op whose b is one value, ops._adjoint) {"decay": b's
    value} with x's b None."""
    del store_h
    decay = p.get("decay")
    return _forward(
        "linear_scan",
        x["a"],
        b=x["b"],
        reset=x.get("reset"),
        gamma=decay,
        lam=None if decay is None else jnp.ones((), decay.dtype),
        initial=x["initial"],
        axis=axis,
        reverse=reverse,
        out_dtype=out_dtype,
    )


def episodic_cumsum(x, p, *, axis, reverse, out_dtype, store_h):
    del p, store_h
    return _forward(
        "episodic_cumsum",
        x["inputs"],
        reset=x["done"],
        reset_prev=not reverse,
        initial=x["initial"],
        axis=axis,
        reverse=reverse,
        out_dtype=out_dtype,
    )


def eligibility_traces(x, p, *, axis, reverse, out_dtype, store_h):
    del reverse, store_h
    return _forward(
        "eligibility_traces",
        x["inputs"],
        reset=x["done"],
        reset_prev=True,
        gamma=p["gamma"],
        lam=p["lambda_"],
        initial=x["initial"],
        axis=axis,
        reverse=False,
        out_dtype=out_dtype,
    )
