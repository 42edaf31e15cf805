"""λ-returns and discounted returns share one kernel (LAMBDA selects)."""

import jax.numpy as jnp

from rlscan_jax._src.triton import launch
from rlscan_jax._src.triton.kernels.returns import returns_kernel


def _forward(x, p, *, axis, out_dtype, with_lambda):
    r = x["rewards"]
    shape = r.shape
    gamma, gamma_form = launch.param(p["gamma"], shape, axis)
    lam, lam_form = launch.param(p["lambda_"], shape, axis) if with_lambda else (gamma, 0)
    values = x.get("values")
    (g,) = launch.scan_call(
        returns_kernel,
        op="lambda_returns" if with_lambda else "discounted_returns",
        g=launch.geometry(shape, axis),
        inputs=[
            r,
            launch.or_(values, r),
            launch.or_(x["next_values"], r),
            launch.or_(x["bootstrap_value"], r),
            launch.or_(x["terminated"], r),
            launch.or_(x["truncated"], r),
            gamma,
            lam,
        ],
        outputs=[launch.out(shape, out_dtype)],
        reverse=True,
        f64=out_dtype == jnp.float64,
        LAMBDA=with_lambda,
        HAS_TERM=x["terminated"] is not None,
        HAS_TRUNC=x["truncated"] is not None,
        HAS_NEXT=x["next_values"] is not None,
        HAS_VALUES=values is not None,
        HAS_BOOT=x["bootstrap_value"] is not None,
        GAMMA_FULL=gamma_form,
        LAMBDA_FULL=lam_form,
    )
    return g, None


def lambda_returns(x, p, *, axis, reverse, out_dtype, store_h):
    del reverse, store_h
    return _forward(x, p, axis=axis, out_dtype=out_dtype, with_lambda=True)


def discounted_returns(x, p, *, axis, reverse, out_dtype, store_h):
    del reverse, store_h
    return _forward(x, p, axis=axis, out_dtype=out_dtype, with_lambda=False)
