"""What one Triton call costs the host, and how big the payload is that it is looked up by (GPU only).

Usage: python tests/gpu_runs/launch_cost.py OUT.json [OP ...]   (default: every op)

For each op at a tiny problem (64 × 16 batch-major, float32, forward: one kernel of well under
a microsecond's work) it records
- the size of each Triton custom call's payload in the lowered program: jax-triton's
  zlib-compressed kernel call (the kernel's PTX and Triton IR, grid, parameters). jaxlib finds
  the launcher of a call by hashing and comparing this string on every launch;
- the wall time per call of a loop of 257 calls, 8 to an iteration (`make_loop`, unroll 8), which
  at this size is what the host spends to launch one call;
and the same loop for XLA's own one-fusion `x + 1`, for comparison. Run it twice, with and
without TRITON_DISABLE_LINE_INFO=1 (no `.loc` lines in the PTX), to see what the payload's size
does to the launch. LAUNCH=FFI_CUSTOM_CALL=False (as injit_trace.py): jax-triton 0.3.x's own
legacy custom call instead of the typed-FFI one.
"""

import json
import os
import re
import sys

import injit_trace
import jax
import jax.numpy as jnp

from benchmarks import run, shapes

N, T, K, UNROLL = 64, 16, 257, 8


def payload_sizes(lowered) -> list[int]:
    """Byte length of every Triton custom call's payload in the lowered module.

    The legacy call carries it as `backend_config = "..."`, the FFI call as `{opaque = "..."}`.
    """
    text = lowered.as_text()
    sizes = []
    for m in re.finditer(r'(?:(?<!\.)backend_config|opaque) = "((?:[^"\\]|\\.)+)"', text):
        sizes.append(len(re.sub(r"\\[0-9A-Fa-f]{2}|\\.", "x", m.group(1))))
    return sizes


def per_call_us(loop, args) -> float:
    walls = injit_trace.walls_per_call(loop, args, K, repeats=9)
    return walls[len(walls) // 2]


def main(out: str, ops: list[str]) -> None:
    impl = run.library(os.environ.get("IMPL", "triton"))
    overrides = injit_trace.apply_launch_env()
    results = {
        "environment": run.environment("jax", "jaxlib", "triton", "jax-triton"),
        "launch": overrides,
        "custom_call_target": injit_trace.custom_call_target(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "TRITON_DISABLE_LINE_INFO": os.environ.get("TRITON_DISABLE_LINE_INFO", ""),
        "shape": [N, T],
        "calls": K,
        "unroll": UNROLL,
        "cases": [],
    }
    x = jnp.zeros((N, T), jnp.float32)
    add = jax.jit(run.make_loop(jax.jit(lambda v: v + 1.0), K, UNROLL))
    results["xla_add_us_per_call"] = round(per_call_us(add, (x,)), 3)
    print("xla x + 1:", results["xla_add_us_per_call"], "us a call", flush=True)
    for op in ops:
        inputs = shapes.make_inputs(op, N, T, "batch_major", "float32", 0)
        call = jax.jit(impl.build(op, "batch_major"))
        sizes = payload_sizes(call.lower(inputs))
        loop = jax.jit(run.make_loop(call, K, UNROLL))
        r = {"op": op, "payload_bytes": sizes, "us_per_call": round(per_call_us(loop, (inputs,)), 3)}
        results["cases"].append(r)
        print(json.dumps(r), flush=True)
        with open(out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:] or list(shapes.OPS))
