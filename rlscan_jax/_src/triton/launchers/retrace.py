import jax.numpy as jnp

from rlscan_jax._src.triton import launch
from rlscan_jax._src.triton.kernels.retrace import retrace_kernel


def forward(x, p, *, axis, reverse, out_dtype, store_h):
    del reverse, store_h
    r = x["rewards"]
    shape = r.shape
    params = {k: launch.param(p[k], shape, axis) for k in ("gamma", "lambda_", "c_clip")}
    geometry = launch.geometry(shape, axis)
    (g,) = launch.scan_call(
        retrace_kernel,
        op="retrace",
        g=geometry,
        inputs=[
            r,
            x["q_values"],
            x["next_values"],
            x["log_rhos"],
            launch.or_(x["terminated"], r),
            launch.or_(x["truncated"], r),
            *[v for v, _ in params.values()],
        ],
        outputs=[launch.out(shape, out_dtype)],
        reverse=True,
        f64=out_dtype == jnp.float64,
        HAS_TERM=x["terminated"] is not None,
        HAS_TRUNC=x["truncated"] is not None,
        GAMMA_FULL=params["gamma"][1],
        LAMBDA_FULL=params["lambda_"][1],
        C_CLIP_FULL=params["c_clip"][1],
        whole_row_warps=launch.RETRACE_WHOLE_ROW_WARPS if geometry.T >= launch.RETRACE_WHOLE_ROW_MIN_T else 0,
    )
    return g, None
