"""One op on one benchmark shape, run a few times: the program that `ncu.sh` profiles.

Usage: python tests/gpu_runs/ncu_case.py OP NxT LAYOUT [DTYPE]
  OP as in benchmarks/shapes.py; LAYOUT time_major or batch_major; DTYPE float32 (default) or
  bfloat16. Prints the launch plan the library chose, so the profile can be read against it.
  LAUNCH="NAME=VALUE ..." in the environment overrides launch constants first (as the benchmark's
  --launch), to profile a plan that is not shipped. MODE=fwd+bwd runs the value and the input
  gradients for random cotangents (the benchmark's fwd+bwd), so the backward's kernels are profiled
  too.
"""

import os
import sys

import injit_trace
import jax

from benchmarks import run, shapes
from rlscan_jax._src.triton import launch

# The forward kernel of the ops that share one (launch.BLOCK_ELEMS_16BIT is by kernel).
KERNEL = {
    "discounted_returns": "returns_kernel",
    "lambda_returns": "returns_kernel",
    "eligibility_traces": "linear_kernel",
    "episodic_cumsum": "linear_kernel",
    "linear_scan": "linear_kernel",
}


def main(op: str, nt: str, layout: str, dtype: str = "float32") -> None:
    injit_trace.apply_launch_env()
    n, t = (int(x) for x in nt.split("x"))
    inputs = shapes.make_inputs(op, n, t, layout, dtype)
    shape = shapes.shape(n, t, layout)
    g = launch.geometry(shape, shapes.TIME_AXIS[layout] % 2)
    narrow = dtype != "float32"
    wide = launch.wide_blocks(KERNEL.get(op, ""), g, narrow)
    print("plan:", launch.plan(g, narrow=narrow, op=op, block_elems=wide), flush=True)
    f = jax.jit(lambda x: shapes.call(op, x, layout=layout, implementation="triton"))
    args = (inputs,)
    if os.environ.get("MODE", "fwd") == "fwd+bwd":
        spec = shapes.SPECS[op]
        keys = jax.random.split(jax.random.key(1), len(spec.outputs))
        args = (inputs, tuple(jax.random.normal(k, shape).astype(dtype) for k in keys))
        f = jax.jit(run.with_mode(run.library("triton").build(op, layout), "fwd+bwd", spec.floats))
    for _ in range(3):
        jax.block_until_ready(f(*args))


if __name__ == "__main__":
    main(*sys.argv[1:])
