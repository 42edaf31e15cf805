"""Scaling over GPUs: the estimators on a batch sharded across 1 and D devices (issue #7).

    python -m benchmarks.multi_gpu --out benchmarks/results/multi_gpu_h200x2.json     # GPUs
    XLA_FLAGS=--xla_force_host_platform_device_count=2 \\
        python -m benchmarks.multi_gpu --quick --out /tmp/multi_gpu_quick.json       # CPU smoke run

For each case (op, N×T, layout, mode) the same problem runs on one device and batch-sharded
over the first D devices (every device of the machine by default), the time axis whole on
each. The sharded inputs are `NamedSharding`s of a one-axis mesh: with `Auto` axes (`jax.jit`
partitions the program; the Triton kernels go through `custom_partitioning`) and with
`Explicit` axes (the avals carry the sharding; the op runs under `shard_map`).

How. `benchmarks.run.make_loop` runs K calls inside one jitted program (every call kept, none
hoisted); the in-jit time per call is the loop's wall time over K, median with p10/p90 of
`--repeats` loops, taken in rounds that time every variant of a case once each (the loop's
layout pinning is off: XLA gathers a sharded array to apply it). Before timing,
each sharded result is compared with the one-device result (relative error, as the suite's
gate: a wrong result is recorded with no time) and the compiled HLO is searched for
collectives: there must be none (per-step inputs only, so no shared parameter's gradient
needs a sum). Each record's `speedup` is the one-device time over its own.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import functools
import json
import os
import re
import sys
import time
from collections.abc import Sequence

import jax
import numpy as np

from benchmarks import run, shapes

COLLECTIVES = ("all-gather", "all-to-all", "reduce-scatter", "collective-permute", "all-reduce")


@dataclasses.dataclass(frozen=True)
class Settings:
    """What to run (the command line; see `parse_args`)."""

    ops: tuple[str, ...] = shapes.OPS
    grad_ops: tuple[str, ...] = ("gae", "retrace")
    sizes: tuple[tuple[int, int], ...] = ((16384, 128), (65536, 128))
    layouts: tuple[str, ...] = shapes.LAYOUTS
    axis_types: tuple[str, ...] = ("Auto", "Explicit")
    implementation: str = "triton"
    devices: int = 0  # 0: all
    repeats: int = 20
    loop_elements: int = 1 << 27
    max_calls: int = 256
    compile_workers: int = 8


def collectives(hlo: str) -> list[str]:
    """The collective instructions of a compiled HLO module."""
    return sorted(set(re.findall(r"\s(" + "|".join(COLLECTIVES) + r")(?:-start)?\(", hlo)))


def batch_spec(layout: str) -> jax.sharding.PartitionSpec:
    P = jax.sharding.PartitionSpec
    return P(None, "b") if layout == "time_major" else P("b", None)


def calls_per_loop(settings: Settings, n: int, t: int, mode: str) -> int:
    work = 3 if mode == "fwd+bwd" else 1
    return int(min(settings.max_calls, max(4, settings.loop_elements // (n * t * work))))


@dataclasses.dataclass
class Variant:
    """One way of running a case: on `devices` devices with `axis_type` axes (None: unsharded)."""

    devices: int
    axis_type: str | None
    args: tuple
    mesh: object = None


def cases(settings: Settings) -> list[tuple[str, int, int, str, str]]:
    out = []
    for n, t in settings.sizes:
        for layout in settings.layouts:
            for op in settings.ops:
                out.append((op, n, t, layout, "fwd"))
            for op in settings.grad_ops:
                out.append((op, n, t, layout, "fwd+bwd"))
    return out


def build(settings: Settings, case, ndev: int):
    """The jitted loop and its variants (the one-device one first) for one case."""
    op, n, t, layout, mode = case
    spec = shapes.SPECS[op]
    inputs = shapes.make_inputs(op, n, t, layout)
    fn = functools.partial(shapes.call, op, layout=layout, implementation=settings.implementation)
    body = run.with_mode(fn, mode, spec.floats)
    cots = None
    if mode == "fwd+bwd":
        outs = jax.eval_shape(fn, inputs)
        rng = np.random.default_rng(0)
        cots = tuple(rng.normal(size=o.shape).astype(o.dtype) for o in outs)
    k = calls_per_loop(settings, n, t, mode)
    loop = jax.jit(run.make_loop(body, k))

    def place(sharding):
        x = jax.device_put(inputs, sharding)
        if cots is None:
            return (x,)
        return (x, jax.device_put(cots, sharding))

    devices = jax.devices()
    variants = [Variant(1, None, place(devices[0]))]
    if ndev > 1:
        for axis_type in settings.axis_types:
            mesh = jax.make_mesh(
                (ndev,), ("b",), axis_types=(getattr(jax.sharding.AxisType, axis_type),), devices=devices[:ndev]
            )
            sharding = jax.sharding.NamedSharding(mesh, batch_spec(layout))
            variants.append(Variant(ndev, axis_type, place(sharding), mesh))
    return loop, k, variants


def _wall_us(compiled, args, k: int) -> float:
    t0 = time.perf_counter()
    jax.block_until_ready(compiled(*args))
    return (time.perf_counter() - t0) * 1e6 / k


def measure(settings: Settings, ndev: int, log=print) -> list[dict]:
    """Every case: compile all variants (on a thread pool), gate, then time in rounds."""
    records = []
    # No layout pinning in the loop: XLA does not partition the layout constraint (it gathers the
    # sharded arrays first), and a Triton kernel's operands have the row-major layout anyway.
    run._PIN_LAYOUTS["on"] = False
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, settings.compile_workers))
    built = []
    for case in cases(settings):
        loop, k, variants = build(settings, case, ndev)
        futures = []
        for v in variants:
            with jax.set_mesh(v.mesh) if v.axis_type == "Explicit" else contextlib.nullcontext():
                lowered = loop.lower(*v.args)
            futures.append(pool.submit(lowered.compile))
        built.append((case, k, variants, futures))
    for case, k, variants, futures in built:
        op, n, t, layout, mode = case
        base = {
            "op": op,
            "implementation": settings.implementation,
            "layout": layout,
            "dtype": "float32",
            "N": n,
            "T": t,
            "mode": mode,
            "calls_per_loop": k,
        }
        compiled = []
        for v, fut in zip(variants, futures, strict=True):
            rec = dict(base, devices=v.devices, axis_type=v.axis_type)
            try:
                c = fut.result()
                hlo = c.as_text()
                out = c(*v.args)
                rec["collectives"] = collectives(hlo)
                compiled.append((v, c, out, rec))
            except Exception as e:  # recorded, not raised: the other cases still run
                rec["error"] = f"{type(e).__name__}: {e}"[:500]
                records.append(rec)
        if not compiled or compiled[0][0].devices != 1:
            continue
        ref = jax.device_get(compiled[0][2])
        timed = []
        for v, c, out, rec in compiled:
            err = run.relative_error(jax.device_get(out), ref)
            rec["rel_err"] = err
            rec["correct"] = bool(err <= run.TOLERANCE["float32"]) and not rec["collectives"]
            if rec["correct"]:
                jax.block_until_ready(c(*v.args))  # warm
                timed.append((v, c, rec, []))
            records.append(rec)
        for _ in range(settings.repeats):
            for v, c, _rec, samples in timed:
                samples.append(_wall_us(c, v.args, k))
        one = None
        for v, _c, rec, samples in timed:
            med, p10, p90 = run._stats(samples)
            rec.update(injit_us=run._round(med), injit_p10_us=run._round(p10), injit_p90_us=run._round(p90))
            if v.devices == 1:
                one = med
            if one is not None:
                rec["speedup"] = run._round(one / med)
            log(
                f"{op:>18} {layout:>11} {mode:>7} {n}x{t} devices={v.devices} {v.axis_type or '-':>8}"
                f" {med:9.1f} us  x{one / med:.2f}  err={rec['rel_err']:.1e} collectives={rec['collectives']}"
            )
    pool.shutdown(wait=True)
    return records


def header(settings: Settings, ndev: int) -> dict:
    return {
        "record": "header",
        **run.environment(),
        "devices_sharded": ndev,
        "commit": os.environ.get("RLSCAN_COMMIT"),
        "settings": dataclasses.asdict(settings),
    }


def markdown(head: dict, records: Sequence[dict]) -> str:
    """One row per case: the one-device time and each sharded variant's time and speedup."""
    ndev = head["devices_sharded"]
    rows: dict = {}
    for r in records:
        if r.get("record") == "header":
            continue
        key = (r["op"], r["layout"], r["mode"], r["N"], r["T"])
        rows.setdefault(key, {})[(r["devices"], r["axis_type"])] = r
    types = head["settings"]["axis_types"]
    lines = [
        f"Per-call in-jit time (µs, median of {head['settings']['repeats']}), {head['device']} ×{ndev}, "
        f"implementation {head['settings']['implementation']}, jax {head['jax']}, {head['date'][:10]}.",
        "",
        "| op | layout | mode | N×T | 1 device | " + " | ".join(f"{ndev} devices, {t}" for t in types) + " |",
        "|---|---|---|---|---:|" + "---:|" * len(types),
    ]

    def cell(r):
        if r is None:
            return "–"
        if "error" in r:
            return "error"
        if not r.get("correct"):
            return f"wrong (err {r.get('rel_err', float('nan')):.1e}, {r.get('collectives')})"
        if "speedup" in r:
            return f"{r['injit_us']:.1f} (×{r['speedup']:.2f})"
        return f"{r['injit_us']:.1f}"

    for (op, layout, mode, n, t), vs in rows.items():
        cells = [cell(vs.get((1, None)))] + [cell(vs.get((ndev, ty))) for ty in types]
        lines.append(f"| {op} | {layout} | {mode} | {n}×{t} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None = None) -> tuple[Settings, argparse.Namespace]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="JSON path; a .md table is written beside it")
    ap.add_argument("--quick", action="store_true", help="small shapes, gae and linear_scan, 'sequential'")
    ap.add_argument("--ops", help="comma-separated ops (forward)")
    ap.add_argument("--grad-ops", help="comma-separated ops also measured fwd+bwd ('' for none)")
    ap.add_argument("--sizes", help="NxT,NxT")
    ap.add_argument("--implementation", help="default: triton (quick: sequential)")
    ap.add_argument("--devices", type=int, default=0, help="devices to shard over (default: all)")
    ap.add_argument("--repeats", type=int)
    args = ap.parse_args(argv)
    s = Settings()
    if args.quick:
        s = dataclasses.replace(
            s,
            ops=("gae", "linear_scan"),
            grad_ops=("gae",),
            sizes=((64, 16),),
            implementation="sequential",
            repeats=3,
            loop_elements=1 << 12,
            max_calls=4,
        )
    if args.ops:
        s = dataclasses.replace(s, ops=tuple(args.ops.split(",")))
    if args.grad_ops is not None:
        s = dataclasses.replace(s, grad_ops=tuple(o for o in args.grad_ops.split(",") if o))
    if args.sizes:
        s = dataclasses.replace(s, sizes=tuple(tuple(int(v) for v in x.split("x")) for x in args.sizes.split(",")))
    if args.implementation:
        s = dataclasses.replace(s, implementation=args.implementation)
    if args.repeats:
        s = dataclasses.replace(s, repeats=args.repeats)
    s = dataclasses.replace(s, devices=args.devices)
    for op in s.ops + s.grad_ops:
        if op not in shapes.SPECS:
            ap.error(f"unknown op {op!r}; known: {', '.join(shapes.OPS)}")
    return s, args


def main(argv: Sequence[str] | None = None) -> int:
    settings, args = parse_args(argv)
    ndev = settings.devices or jax.device_count()
    if ndev > jax.device_count():
        print(f"--devices {ndev}: only {jax.device_count()} devices", file=sys.stderr)
        return 2
    head = header(settings, ndev)
    print(f"{head['device']} x{jax.device_count()}, sharding over {ndev}", flush=True)
    records = measure(settings, ndev, log=functools.partial(print, flush=True))
    with open(args.out, "w") as f:
        json.dump([head, *records], f, indent=1)
    md = os.path.splitext(args.out)[0] + ".md"
    with open(md, "w") as f:
        f.write(markdown(head, records))
    bad = [r for r in records if "error" in r or not r.get("correct")]
    print(f"{len(records)} records, {len(bad)} wrong or failed -> {args.out}, {md}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
