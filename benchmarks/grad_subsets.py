"""Device time of a gradient taken with respect to some of an op's inputs, or of some outputs.

    python -m benchmarks.grad_subsets --out benchmarks/results/grad_subsets_h200.json

The suite's fwd+bwd differentiates every floating input and every output. A trainer seldom does:
a rollout's rewards are data, a critic's targets differentiate the value inputs alone, a
meta-gradient (γ and λ learned) differentiates the parameters alone, and a loss may use one output
of two (GAE's advantages without its returns). The fused backward writes only the gradients the
differentiation asks for (rlscan_jax._src.triton.ops.SELECTIVE), and those ops and eligibility
traces sum γ's and λ's gradients in it. Each case here is `jax.vjp` of the op with respect to a
subset, with a cotangent of ones for each output used:

    all      every floating input, every output (the suite's fwd+bwd)
    critic   the value inputs alone (values, next_values; Retrace's q_values, next_values; not for
             eligibility traces, which have none)
    params   γ and λ alone, one value each, passed as traced arguments (a meta-gradient)
    first    every floating input, the first output alone (GAE, V-trace: ops of two outputs)

A gate compares each case's outputs and gradients with the associative implementation's in
float32 (`run.TOLERANCE`) before it is timed; a case that fails it is recorded with
"correct": false and no time. Timed as the suite times a case (benchmarks.devicetime, L2 flushed
before each window). Without a GPU the wall clock stands in, which only keeps the script working.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

import rlscan_jax
from benchmarks import devicetime, run, shapes

OPS = ("gae", "vtrace", "retrace", "lambda_returns", "discounted_returns", "eligibility_traces")
SUBSETS = ("all", "critic", "params", "first")
CRITIC = ("values", "next_values", "q_values")


def subset_of(op: str, subset: str) -> tuple[tuple[str, ...], bool] | None:
    """(the differentiated arguments, whether the first output alone is used), or None where the
    subset does not apply to `op` ("first" for an op of one output, "critic" for one of no value
    inputs)."""
    spec = shapes.SPECS[op]
    if subset == "all":
        return spec.floats, False
    if subset == "critic":
        critic = tuple(k for k in spec.floats if k in CRITIC)
        return (critic, False) if critic else None
    if subset == "params":
        return tuple(spec.params), False
    if subset == "first":
        return (spec.floats, True) if len(spec.outputs) > 1 else None
    raise ValueError(f"subset={subset!r} must be one of {SUBSETS}")


def make_call(op: str, n: int, t: int, layout: str, dtype: str, subset: str, implementation: str | None):
    """(fn, args): fn(args) is (outputs, gradients) of `op` on an N×T problem, differentiated as
    `subset` says; γ and λ are float32 arguments of the jitted call, as a trainer's would be."""
    spec = shapes.SPECS[op]
    wrt, first = subset_of(op, subset)
    params = {k: jnp.float32(v) for k, v in spec.params.items()}
    x = {**shapes.make_inputs(op, n, t, layout, dtype), **params}

    def outputs(d: dict, rest: dict) -> tuple:
        out = getattr(rlscan_jax, op)(**rest, **d, time_axis=shapes.TIME_AXIS[layout], implementation=implementation)
        out = tuple(out) if isinstance(out, tuple) else (out,)
        return out[:1] if first else out

    def fn(x: dict) -> tuple:
        diff = {k: x[k] for k in wrt}
        rest = {k: v for k, v in x.items() if k not in diff}
        out, vjp = jax.vjp(lambda d: outputs(d, rest), diff)
        (grads,) = vjp(tuple(jnp.ones(o.shape, o.dtype) for o in out))
        return out, grads

    return fn, x


def gate(fn, ref, x: dict, dtype: str) -> tuple[bool, float]:
    """(correct, max_err): `fn`'s outputs and gradients against the reference's on float32 inputs,
    the error relative to each array's largest magnitude."""
    got = jax.jit(fn)(x)
    x32 = {k: v.astype(jnp.float32) if jnp.issubdtype(v.dtype, jnp.floating) else v for k, v in x.items()}
    want = jax.jit(ref)(x32)
    err = 0.0
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        err = max(err, float(np.max(np.abs(g - w)) / max(1.0, float(np.max(np.abs(w))))))
    return err <= run.TOLERANCE[dtype], err


def measure(
    ops: Sequence[str],
    grid: Sequence[tuple[int, int]],
    layouts: Sequence[str],
    dtypes: Sequence[str],
    subsets: Sequence[str],
    windows: int,
    flush_bytes: int,
    implementation: str | None,
    on_record: Callable[[list[dict]], None] | None = None,
) -> list[dict]:
    """One record per (op, N×T, layout, dtype, subset): median µs over `windows` calls. Each case is
    gated, compiled and timed before the next is built, and `on_record` is called with the records
    so far after each, so that a run cut short by a time limit keeps the cases it finished."""
    records = []
    for op, (n, t), layout, dtype, subset in itertools.product(ops, grid, layouts, dtypes, subsets):
        if subset_of(op, subset) is None:
            continue
        wrt, first = subset_of(op, subset)
        key = {"op": op, "N": n, "T": t, "layout": layout, "dtype": dtype, "subset": subset, "wrt": list(wrt)}
        key["outputs"] = "first" if first else "all"
        fn, x = make_call(op, n, t, layout, dtype, subset, implementation)
        ref, _ = make_call(op, n, t, layout, "float32", subset, "associative")
        correct, err = gate(fn, ref, x, dtype)
        if not correct:
            records.append({**key, "correct": False, "max_err": err})
        else:
            compiled = jax.jit(fn).lower(x).compile()
            jax.block_until_ready(compiled(x))
            samples, gpu = devicetime.time_calls({"case": lambda c=compiled, a=x: c(a)}, windows, flush_bytes)
            if samples.get("case"):
                field = "device_us" if gpu else "wall_us"
                median = round(float(np.median(samples["case"])), 3)
                records.append({**key, "correct": True, "max_err": err, field: median, "samples": len(samples["case"])})
        if on_record is not None:
            on_record(records)
    return records


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.grad_subsets", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="results JSON")
    p.add_argument("--ops", type=lambda s: run._names(s, OPS, "op"), default=OPS)
    p.add_argument("--shapes", type=run._grid, default=((4096, 1024),), help="NxT,... (4096x1024)")
    p.add_argument("--layouts", type=lambda s: run._names(s, shapes.LAYOUTS, "layout"), default=shapes.LAYOUTS)
    p.add_argument("--dtypes", type=lambda s: run._names(s, shapes.DTYPES, "dtype"), default=("float32",))
    p.add_argument("--subsets", type=lambda s: run._names(s, SUBSETS, "subset"), default=SUBSETS)
    p.add_argument("--windows", type=int, default=10, help="timed calls per case (default 10)")
    p.add_argument("--l2-flush-mib", type=int, default=256, help="flushed before each window (default 256)")
    p.add_argument("--implementation", default=None, help="None (the default), triton, associative, sequential")
    a = p.parse_args(argv)
    flush = a.l2_flush_mib * 2**20
    head = {**run.environment(), "l2_flush_bytes": flush, "argv": sys.argv[1:]}

    def write(records: list[dict]) -> None:
        with open(a.out, "w") as f:
            json.dump({**head, "records": records}, f, indent=1)

    records = measure(a.ops, a.shapes, a.layouts, a.dtypes, a.subsets, a.windows, flush, a.implementation, write)
    for r in records:
        t = r.get("device_us", r.get("wall_us"))
        case = f"{r['op']} {r['N']}x{r['T']} {r['layout']} {r['dtype']} {r['subset']}"
        print(f"{case:>60s} " + (f"{t:10.2f} µs" if t is not None else f"FAILED (max_err {r['max_err']:.2e})"))
    print(f"wrote {len(records)} records to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
