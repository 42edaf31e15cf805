"""Device time of the ops with γ and λ (linear_scan: b) in each form the kernels can read them.

    python -m benchmarks.param_forms --out benchmarks/results/param_forms_h200.json

A parameter of a smaller shape than the steps' reaches the kernels where it lies (launch.param):
one value ("scalar"), one a row ("row": a discount per environment), one a time step ("time").
"full" gives the same values as an array of the per-step shape; "row-broadcast" broadcasts the
row form to the per-step shape inside the jitted call, as the Triton path did before the kernels
read the smaller forms (a broadcast pass, then the full array read). Timed the way the suite
times a case (benchmarks.devicetime, L2 flushed before each window), forward ("fwd") and the
inputs' gradients ("fwd+bwd", the parameters held constant; with --param-grads the parameters'
gradients too). --dtypes sets the per-step inputs' dtype; the parameters stay float32, as a
trainer's γ and λ would. With 16-bit inputs, a parameter's gradient reruns the forward kernel with
a float32 output (ops.param_residual): --dtypes bfloat16 --param-grads times that rerun. Without a
GPU the wall clock stands in, which only keeps the script working.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

import rlscan_jax
from benchmarks import devicetime, run, shapes

FORMS = ("scalar", "row", "time", "full", "row-broadcast")
OPS = ("gae", "vtrace", "retrace", "lambda_returns", "discounted_returns", "eligibility_traces", "linear_scan")
B_VALUE = 0.95  # linear_scan's b in every form


def form_value(form: str, value: float, n: int, t: int, layout: str) -> jax.Array:
    """`value` (a parameter the same at every step and row) in `form`, for an N×T problem."""
    time_major = layout == "time_major"
    if form == "scalar":
        return jnp.float32(value)
    if form in ("row", "row-broadcast"):
        return jnp.full((n,) if time_major else (n, 1), value, jnp.float32)
    if form == "time":
        return jnp.full((t, 1) if time_major else (t,), value, jnp.float32)
    if form == "full":
        return jnp.full(shapes.shape(n, t, layout), value, jnp.float32)
    raise ValueError(f"form={form!r} must be one of {FORMS}")


def call_with(op: str, form: str, n: int, t: int, layout: str, implementation: str):
    """(call, given): `call(inputs)` runs `op` with its parameters (γ and λ; linear_scan's b) in
    `form`, read from `inputs`; `given`: those parameters' values, by name. They are arguments of
    the jitted call, as a trainer's would be. Closed over as constants they let XLA fold the
    broadcast of "row-broadcast" at compile time: the H200 run of 2026-12-05, which did so, timed
    "row-broadcast" as "full" to within 3 %."""
    spec = shapes.SPECS[op]
    params = {"b": B_VALUE} if op == "linear_scan" else dict(spec.params)
    given = {k: form_value(form, v, n, t, layout) for k, v in params.items()}
    step = shapes.shape(n, t, layout)

    def call(x: dict) -> tuple:
        kw = {k: x[k] for k in given}
        if form == "row-broadcast":
            kw = {k: jnp.broadcast_to(v, step) for k, v in kw.items()}
        rest = {k: v for k, v in x.items() if k not in given}
        out = getattr(rlscan_jax, op)(**rest, **kw, time_axis=shapes.TIME_AXIS[layout], implementation=implementation)
        return tuple(out) if isinstance(out, tuple) else (out,)

    return call, given


def make_call(
    op: str,
    form: str,
    n: int,
    t: int,
    layout: str,
    mode: str,
    implementation: str,
    dtype: str = "float32",
    param_grads: bool = False,
):
    """`op` on an N×T problem with its parameters in `form` (a function to jit), and its arguments:
    the parameters are among them, held constant in "fwd+bwd" unless `param_grads`. The per-step
    floating inputs are of `dtype`, the parameters float32."""
    spec = shapes.SPECS[op]
    call, given = call_with(op, form, n, t, layout, implementation)
    inputs = {k: v for k, v in shapes.make_inputs(op, n, t, layout, dtype).items() if k not in given}
    diff = [k for k in spec.floats if k in inputs] + (list(given) if param_grads else [])
    fn = run.with_mode(call, mode, diff)
    args = ({**inputs, **given},)
    if mode == "fwd+bwd":
        args += (tuple(jnp.ones(o.shape, o.dtype) for o in jax.eval_shape(call, args[0])),)
    return fn, args


def measure(
    ops: Sequence[str],
    grid: Sequence[tuple[int, int]],
    layouts: Sequence[str],
    modes: Sequence[str],
    windows: int,
    flush_bytes: int,
    implementation: str,
    forms: Sequence[str] = FORMS,
    dtypes: Sequence[str] = ("float32",),
    param_grads: bool = False,
) -> list[dict]:
    """One record per (op, N×T, layout, mode, form, dtype): median µs over `windows` calls."""
    calls, keys = {}, {}
    for op, (n, t), layout, mode, form, dtype in itertools.product(ops, grid, layouts, modes, forms, dtypes):
        fn, args = make_call(op, form, n, t, layout, mode, implementation, dtype, param_grads)
        compiled = jax.jit(fn).lower(*args).compile()
        jax.block_until_ready(compiled(*args))
        name = f"{op}/{n}x{t}/{layout}/{mode}/{form}/{dtype}"
        calls[name] = lambda c=compiled, a=args: c(*a)
        keys[name] = {"op": op, "N": n, "T": t, "layout": layout, "mode": mode, "form": form, "dtype": dtype}
        if mode == "fwd+bwd":
            keys[name]["param_grads"] = param_grads
    samples, gpu = devicetime.time_calls(calls, windows, flush_bytes)
    field = "device_us" if gpu else "wall_us"
    return [
        {**key, field: round(float(np.median(samples[name])), 3), "samples": len(samples[name])}
        for name, key in keys.items()
        if samples.get(name)
    ]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.param_forms", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="results JSON")
    p.add_argument("--ops", type=lambda s: run._names(s, OPS, "op"), default=OPS)
    p.add_argument("--shapes", type=run._grid, default=((4096, 1024), (65536, 16)), help="NxT,... (4096x1024,65536x16)")
    p.add_argument("--layouts", type=lambda s: run._names(s, shapes.LAYOUTS, "layout"), default=shapes.LAYOUTS)
    p.add_argument("--modes", type=lambda s: run._names(s, shapes.MODES, "mode"), default=shapes.MODES)
    p.add_argument("--forms", type=lambda s: run._names(s, FORMS, "form"), default=FORMS)
    p.add_argument("--dtypes", type=lambda s: run._names(s, shapes.DTYPES, "dtype"), default=("float32",))
    p.add_argument("--param-grads", action="store_true", help="fwd+bwd also takes the parameters' gradients")
    p.add_argument("--windows", type=int, default=10, help="timed calls per case (default 10)")
    p.add_argument("--l2-flush-mib", type=int, default=256, help="flushed before each window (default 256)")
    p.add_argument("--implementation", default=None, help="None (the default), triton, associative, sequential")
    run.add_launch_option(p, "recorded in the results' header (e.g. STEP_VECTOR_KERNELS=() for form 2 everywhere)")
    a = p.parse_args(argv)
    overrides = [run._launch_override(item, p) for item in a.launch]
    run.set_launch(overrides)
    flush = a.l2_flush_mib * 2**20
    records = measure(
        a.ops, a.shapes, a.layouts, a.modes, a.windows, flush, a.implementation, a.forms, a.dtypes, a.param_grads
    )
    head = {**run.environment(), "l2_flush_bytes": flush, "argv": sys.argv[1:]}
    if overrides:
        head["launch"] = run.launch_record(overrides)
    with open(a.out, "w") as f:
        json.dump({**head, "records": records}, f, indent=1)
    for r in records:
        t = r.get("device_us", r.get("wall_us"))
        case = f"{r['op']} {r['N']}x{r['T']} {r['layout']} {r['mode']} {r['dtype']}"
        print(f"{case:>50s} {r['form']:>13s} {t:10.2f} µs")
    print(f"wrote {len(records)} records to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
