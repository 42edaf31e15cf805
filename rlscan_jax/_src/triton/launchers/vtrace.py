import jax.numpy as jnp

from rlscan_jax._src import checks
from rlscan_jax._src.triton import launch
from rlscan_jax._src.triton.kernels.vtrace import vtrace_kernel

# The plan's exceptions for V-trace's forward pass and its fused backward (launchers/adjoint.py):
# [1024, 8] time-major blocks spill (184 bytes at sm_90) and measured slower than [512, 8];
# vectorised long rows in blocks of 2048 (tune_h200.md, run 7: 4096 lost 7 % at 8x131072); rows of
# 4096 steps scanned whole at 16 warps (248 registers a thread: 1.31-1.39x faster), the forward
# pass there capped at 64 registers a thread (launch.ROW_REGISTERS).
PLAN = dict(few_rows_elems=launch.SPLIT_BLOCK_ELEMS, vector_split=2048, whole_row_warps=16)


def forward(x, p, *, axis, reverse, out_dtype, store_h):
    del reverse
    r = x["rewards"]
    shape = r.shape
    params = {k: launch.param(p[k], shape, axis) for k in ("gamma", "lambda_", "rho_clip", "c_clip", "pg_rho_clip")}
    outputs = [launch.out(shape, out_dtype)] * 2
    outputs.append(launch.out(shape, checks.compute_dtype(out_dtype)) if store_h else launch.placeholder())
    vs, pg, h = launch.scan_call(
        vtrace_kernel,
        op="vtrace",
        g=launch.geometry(shape, axis),
        inputs=[
            r,
            x["values"],
            x["log_rhos"],
            launch.or_(x["next_values"], r),
            launch.or_(x["bootstrap_value"], r),
            launch.or_(x["terminated"], r),
            launch.or_(x["truncated"], r),
            *[v for v, _ in params.values()],
        ],
        outputs=outputs,
        reverse=True,
        f64=out_dtype == jnp.float64,
        HAS_TERM=x["terminated"] is not None,
        HAS_TRUNC=x["truncated"] is not None,
        HAS_NEXT=x["next_values"] is not None,
        GAMMA_FULL=params["gamma"][1],
        LAMBDA_FULL=params["lambda_"][1],
        RHO_CLIP_FULL=params["rho_clip"][1],
        C_CLIP_FULL=params["c_clip"][1],
        PG_CLIP_FULL=params["pg_rho_clip"][1],
        STORE_H=store_h,
        **PLAN,
    )
    return (vs, pg), (h if store_h else None)
