"""What the benchmark's in-jit loop runs on the device, call by call (GPU only).

Usage: python tests/gpu_runs/injit_trace.py OUT.json CASE [CASE ...]
  CASE is OP:NxT:LAYOUT:DTYPE:MODE, e.g. eligibility_traces:1024x4096:batch_major:bfloat16:fwd,
  or noop:K, a loop of K calls of a one-element add: what the loop costs by itself.
  UNROLL=U (default 1): U chained calls an iteration of the loop (`make_loop`'s unroll; K is
  rounded up to 1 + a multiple of U).
  LAUNCH="NAME=VALUE ..." overrides launch constants first (as the benchmark's --launch), e.g.
  LAUNCH=FFI_CUSTOM_CALL=False for jax-triton's own (legacy) custom call under jax-triton 0.3.x.

Builds the case's loop as `benchmarks.run` does (the same inputs, `make_loop`, the same K
calls), times it with the wall clock as the suite does, then runs it once more inside a profiler
trace and lists every device event of that run in order: its kernel name, duration and the idle
time before it. Per case it writes the wall time per call, the kernel time per call (what the
suite's device time counts, here without the L2 flush between calls), the idle time per call,
and the kernels by name with their count per call (IMPL=associative for the pure-JAX one):
whether the in-jit time above the device time is other work in the loop (copies, conversions,
the loop's counter) or the device waiting.
"""

import ast
import collections
import json
import os
import sys
import time

import jax

from benchmarks import devicetime, run, shapes
from rlscan_jax._src.triton import custom_call, launch


def apply_launch_env() -> dict:
    """Sets the launch constants LAUNCH="NAME=VALUE ..." names; returns what it set."""
    overrides = {}
    for item in os.environ.get("LAUNCH", "").split():
        name, value = item.split("=", 1)
        if not hasattr(launch, name):
            raise ValueError(f"LAUNCH: {name!r} is not a launch constant")
        overrides[name] = ast.literal_eval(value)
        setattr(launch, name, overrides[name])
    return overrides


def custom_call_target() -> str:
    """The custom-call target this process's Triton launches lower to."""
    return custom_call.active_target(launch.FFI_CUSTOM_CALL)


def parse(case: str) -> dict:
    if case.startswith("noop:"):
        return dict(op="noop", K=int(case.split(":")[1]))
    op, nt, layout, dtype, mode = case.split(":")
    n, t = (int(x) for x in nt.split("x"))
    return dict(op=op, N=n, T=t, layout=layout, dtype=dtype, mode=mode)


def build(c: dict, settings: run.Settings):
    unroll = int(os.environ.get("UNROLL", "1"))
    if c["op"] == "noop":
        k = run.unrolled_calls(c["K"], unroll)
        loop = jax.jit(run.make_loop(jax.jit(lambda x: x + 1.0), k, unroll))
        args = (jax.numpy.zeros((1,), "float32"),)
        return loop.lower(*args).compile(), args, k
    spec = shapes.SPECS[c["op"]]
    x = shapes.make_inputs(c["op"], c["N"], c["T"], c["layout"], "float32", settings.seed)
    x = {k: v.astype(c["dtype"]) if k in spec.floats else v for k, v in x.items()}
    cot = tuple(
        jax.random.normal(k, (c["T"], c["N"]) if c["layout"] == "time_major" else (c["N"], c["T"])).astype(c["dtype"])
        for k in jax.random.split(jax.random.key(1), len(spec.outputs))
    )
    impl = run.library(os.environ.get("IMPL", "triton"))
    k = run.unrolled_calls(run.calls_per_loop(settings, impl, c["N"], c["T"], c["mode"]), unroll)
    call = jax.jit(run.with_mode(impl.build(c["op"], c["layout"]), c["mode"], spec.floats))
    args = (x,) if c["mode"] == "fwd" else (x, cot)
    loop = jax.jit(run.make_loop(call, k, unroll)).lower(*args).compile()
    return loop, args, k


def walls_per_call(loop, args, k: int, repeats: int = 7) -> list[float]:
    """Wall µs a call of `repeats` runs of a loop of k calls (after a warm-up), sorted."""
    jax.block_until_ready(loop(*args))
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(loop(*args))
        walls.append((time.perf_counter() - t0) / k * 1e6)
    return sorted(walls)


def trace_one(loop, args, k: int) -> dict:
    walls = walls_per_call(loop, args, k)
    session = devicetime.run([devicetime.Job("loop", lambda: loop(*args), windows=1)])
    events = session.windows["loop"][0]
    events = sorted(events)
    busy = sum(d for _, d, _ in events)
    span = events[-1][0] + events[-1][1] - events[0][0] if events else 0.0
    by_name = collections.defaultdict(lambda: [0, 0.0])
    gaps, prev_end = [], None
    listing = []
    for ts, dur, name in events:
        gap = 0.0 if prev_end is None else max(0.0, ts - prev_end)
        gaps.append(gap)
        prev_end = ts + dur if prev_end is None else max(prev_end, ts + dur)
        by_name[name][0] += 1
        by_name[name][1] += dur
        listing.append((round(gap, 2), round(dur, 2), name[:90]))
    return dict(
        calls=k,
        wall_us_per_call_median=round(walls[len(walls) // 2], 3),
        wall_us_per_call_min=round(walls[0], 3),
        device_events=len(events),
        kernel_us_per_call=round(busy / k, 3),
        span_us_per_call=round(span / k, 3),
        idle_us_per_call=round((span - busy) / k, 3),
        kernels=[
            dict(name=name[:120], per_call=round(n / k, 3), us_per_call=round(t / k, 3))
            for name, (n, t) in sorted(by_name.items(), key=lambda kv: -kv[1][1])
        ],
        first_events=listing[:40],
    )


def main(out: str, cases: list[str]) -> None:
    settings = run.Settings()
    overrides = apply_launch_env()
    results = {
        "environment": run.environment("jax", "jaxlib", "triton", "jax-triton"),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "launch": overrides,
        "custom_call_target": custom_call_target(),
        "cases": [],
    }
    for case in cases:
        c = {**parse(case), "impl": os.environ.get("IMPL", "triton"), "unroll": int(os.environ.get("UNROLL", "1"))}
        try:
            loop, args, k = build(c, settings)
            r = {**c, **trace_one(loop, args, k)}
        except Exception as e:  # one case failing does not lose the others
            r = {**c, "error": f"{type(e).__name__}: {e}"[:400]}
        results["cases"].append(r)
        print(
            json.dumps(
                {
                    key: r.get(key)
                    for key in list(c)
                    + ["calls", "wall_us_per_call_median", "kernel_us_per_call", "idle_us_per_call", "error"]
                }
            ),
            flush=True,
        )
        for kern in r.get("kernels", [])[:6]:
            print("   ", kern, flush=True)
        with open(out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
