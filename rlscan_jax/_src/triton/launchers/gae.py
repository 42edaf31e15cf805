import jax.numpy as jnp

from rlscan_jax._src.triton import launch
from rlscan_jax._src.triton.kernels.gae import gae_kernel


def forward(x, p, *, axis, reverse, out_dtype, store_h):
    del reverse, store_h  # advantages are the scan state
    r = x["rewards"]
    shape = r.shape
    gamma, gamma_form = launch.param(p["gamma"], shape, axis)
    lam, lam_form = launch.param(p["lambda_"], shape, axis)
    adv, ret = launch.scan_call(
        gae_kernel,
        op="gae",
        g=launch.geometry(shape, axis),
        inputs=[
            r,
            x["values"],
            launch.or_(x["next_values"], r),
            launch.or_(x["bootstrap_value"], r),
            launch.or_(x["terminated"], r),
            launch.or_(x["truncated"], r),
            gamma,
            lam,
        ],
        outputs=[launch.out(shape, out_dtype)] * 2,
        reverse=True,
        f64=out_dtype == jnp.float64,
        HAS_TERM=x["terminated"] is not None,
        HAS_TRUNC=x["truncated"] is not None,
        HAS_NEXT=x["next_values"] is not None,
        GAMMA_FULL=gamma_form,
        LAMBDA_FULL=lam_form,
    )
    return (adv, ret), None
