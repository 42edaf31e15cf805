"""The benchmark harness: correctness gate, device time, in-jit time, JSON results.

    python -m benchmarks.run --out benchmarks/results/h200.json             # the whole suite
    python -m benchmarks.run --part 1/3 --out benchmarks/results/h200.part1.json
    python -m benchmarks.run --quick                                         # CPU smoke subset

What one measurement is. Every case (op, implementation, layout, dtype, N×T, mode) has up to
two compiled programs, both compiled before anything runs: the loop (`make_loop`), K calls of
the op on the same inputs in one jitted program, none of which XLA can hoist or merge; and, on
a GPU, the single call, one call as a jitted program.

1. Gate. The loop runs once (this is also the warm-up); its outputs are one call's. They (and,
   in fwd+bwd, the input gradients) are compared with the reference, the "associative"
   implementation in float32 on the same device, on the same inputs (16-bit inputs upcast). A
   case whose max |x - ref| / max |ref| over any output or gradient exceeds
   `TOLERANCE[dtype]` is recorded with "correct": false and no timings.
2. In-jit time. The loop is timed with a wall clock, `block_until_ready` included, several
   times; each repeat gives one sample of (wall time) / K per call.
3. Device time (GPU). After the in-jit timing, the single call is dispatched ten times inside
   one profiler session per unit; `benchmarks.devicetime` sums the durations of the device
   kernels of each dispatch. Before each dispatch a pass over --l2-flush-mib (256 MiB on a GPU)
   evicts the L2 cache, so that inputs smaller than the cache (50 MB on an H200) come from
   device memory, not from where the previous dispatch left them (results before 2026-12-01
   were taken without it). The in-jit loop repeats calls on the same inputs and keeps that
   cache effect.

fwd+bwd is `jax.vjp` of the op w.r.t. every floating input with a fixed random cotangent per
output (the gradient of the scalar loss Σ outputs·cotangent), returning outputs and gradients.

K is chosen per case from its size (`calls_per_loop`): large enough that one loop outlasts the
host dispatch by far, so (wall time) / K is the per-call time inside a jitted program. With
K = 1 the loop is the single call.

Implementations that run one or more kernels per time step ("sequential", "rlax": `lax.scan`)
take seconds per call at long T. They are profiled only up to T = --slow-profile-max-t (512),
run in float32 only, timed once (the gate's run), at T > --slow-reduced-t (16384, i.e. at
8×131072), and are skipped at T > --slow-max-t (131072, i.e. at 1×1048576).
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import dataclasses
import datetime
import importlib.metadata
import itertools
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

import rlscan_jax

try:
    from jax.experimental.layout import Layout, with_layout_constraint
except ImportError:  # older jax: loops are not layout-pinned
    Layout = with_layout_constraint = None

from benchmarks import baselines, devicetime, shapes

REFERENCE = "associative"
TOLERANCE = {"float32": 1e-4, "bfloat16": 2e-2, "float16": 2e-2}
RESULT_FIELDS = (
    "op",
    "implementation",
    "layout",
    "dtype",
    "N",
    "T",
    "mode",
    "status",
    "correct",
    "max_err",
    "device_us",
    "device_us_p10",
    "device_us_p90",
    "injit_us",
    "injit_us_p10",
    "injit_us_p90",
    "bytes_min",
    "copy_bw_gbps",
    "calls_per_loop",
)
HEADER_FIELDS = ("device", "platform", "jax", "jaxlib", "triton", "jax_triton", "python", "date", "copy_bw_gbps")


# --------------------------------------------------------------------------- implementations


@dataclasses.dataclass(frozen=True)
class Implementation:
    """One way of computing the ops.

    Attributes:
      name: the implementation's name in the results.
      build: (op, layout) -> fn(inputs: dict) -> tuple of outputs, inputs as `shapes.make_inputs`.
      ops: the ops it has.
      slow: one or more kernels per time step (capped at long T, see the module docstring).
      semantics: "library", or "rlax" (gated on the problem rlax can express, see `baselines`).
      unavailable: () -> None if it can run here, else the reason.
    """

    name: str
    build: Callable[[str, str], Callable[[dict], tuple]]
    ops: tuple[str, ...] = shapes.OPS
    slow: bool = False
    semantics: str = "library"
    unavailable: Callable[[], str | None] = lambda: None


def library(name: str, *, slow: bool = False) -> Implementation:
    """The public rlscan_jax functions with `implementation=name`."""

    def build(op: str, layout: str):
        def fn(inputs: dict) -> tuple:
            return shapes.call(op, inputs, layout=layout, implementation=name)

        return fn

    def unavailable() -> str | None:
        try:
            jax.eval_shape(lambda: rlscan_jax.linear_scan(jnp.ones(2), jnp.ones(2), implementation=name))
        except ValueError as e:  # the library's "cannot run here"
            return str(e)
        except Exception as e:  # anything else is the implementation's own bug: measure it, record errors
            print(f"warning: implementation {name!r} failed a tiny trial call: {_short(e)}", flush=True)
        return None

    return Implementation(name, build, slow=slow, unavailable=unavailable)


IMPLEMENTATIONS: dict[str, Implementation] = {
    "triton": library("triton"),
    "associative": library("associative"),
    "sequential": library("sequential", slow=True),
    "rlax": Implementation(
        "rlax", baselines.rlax_op, ops=baselines.OPS, slow=True, semantics="rlax", unavailable=baselines.unavailable
    ),
}


# --------------------------------------------------------------------------- settings and plan


@dataclasses.dataclass
class Settings:
    """What to run and how (the command line's options; see `parse_args`)."""

    ops: tuple[str, ...] = shapes.OPS
    impls: tuple[str, ...] = tuple(IMPLEMENTATIONS)
    grid: tuple[tuple[int, int], ...] = shapes.GRID
    layouts: tuple[str, ...] = shapes.LAYOUTS
    dtypes: tuple[str, ...] = shapes.DTYPES
    modes: tuple[str, ...] = shapes.MODES
    seed: int = 0
    slow_max_t: int = 131072
    slow_reduced_t: int = 16384
    slow_profile_max_t: int = 512
    profile: bool = False
    compile_workers: int = 4
    loop_elements: int = 2**28
    slow_loop_steps: int = 2048
    max_calls_per_loop: int = 256
    injit_unroll: int = 1  # calls an iteration of the in-jit loop (`make_loop`'s unroll; not for slow impls)
    injit_budget_s: float = 0.25
    slow_budget_s: float = 0.3
    device_windows: int = 10
    max_seconds: float | None = None
    part: tuple[int, int] = (1, 1)
    copy_bytes: int = 2 * 2**30
    trace_dir: str | None = None
    l2_flush_bytes: int = 0  # device time: this many bytes read and written before each window
    launch: tuple = ()  # (name, value) overrides of rlscan_jax's launch constants (--launch), for tuning runs


@dataclasses.dataclass(frozen=True)
class Case:
    op: str
    impl: str
    layout: str
    dtype: str
    mode: str
    n: int
    t: int

    @property
    def key(self) -> tuple:
        return (self.op, self.impl, self.layout, self.dtype, self.n, self.t, self.mode)


@dataclasses.dataclass
class Unit:
    """All cases of one (op, N, T): they share inputs, references, one compile batch, one profile."""

    op: str
    n: int
    t: int
    cases: list[Case]
    skipped: list[tuple[Case, str]]

    def estimate_s(self, impls: dict[str, Implementation], reduced_t: int = 16384) -> float:
        """A rough model of the unit's seconds on a GPU host (lowering on one thread, XLA
        compiling on several, then the runs); `run_suite` replaces it with measured rates."""
        total = 0.0
        for c in self.cases:
            work = 2.0 if c.mode == "fwd+bwd" else 1.0
            if impls[c.impl].slow:
                calls = 2 if c.t > reduced_t else 8
                total += 0.25 * work + c.t * 5e-6 * (2 * work - 1) * calls
            elif c.impl == REFERENCE:  # two programs (loop, single call), growing with log T
                total += 1.6 * (0.2 + 0.03 * math.log2(c.t)) * work + 0.2
            else:
                total += 1.6 * 0.4 * work + 0.1
        return total


def key_of(record: dict) -> tuple:
    return (
        record["op"],
        record["implementation"],
        record["layout"],
        record["dtype"],
        record["N"],
        record["T"],
        record["mode"],
    )


def plan(settings: Settings, impls: dict[str, Implementation], done: set | None = None) -> list[Unit]:
    """The units to run, in order: this part's share of the whole plan, less the cases in `done`.

    Parts are assigned on the whole plan, so `--part k/n` names the same units with or without
    `--resume`.
    """
    units = []
    for op in settings.ops:
        for n, t in settings.grid:
            cases, skipped = [], []
            combos = itertools.product(settings.layouts, settings.dtypes, settings.modes, settings.impls)
            for layout, dtype, mode, name in combos:
                impl = impls[name]
                case = Case(op, name, layout, dtype, mode, n, t)
                if op not in impl.ops:
                    continue
                if impl.slow and t > settings.slow_max_t:
                    skipped.append((case, f"T > --slow-max-t={settings.slow_max_t} for a per-step scan"))
                elif impl.slow and t > settings.slow_reduced_t and dtype != "float32":
                    skipped.append((case, f"float32 only at T > --slow-reduced-t={settings.slow_reduced_t}"))
                else:
                    cases.append(case)
            if cases or skipped:
                units.append(Unit(op, n, t, cases, skipped))
    k, parts = settings.part
    if parts > 1:
        # Longest-processing-time-first onto the least loaded part: deterministic, balanced.
        load = [0.0] * parts
        owner = {}
        cost = [u.estimate_s(impls, settings.slow_reduced_t) for u in units]
        for i in sorted(range(len(units)), key=lambda i: (-cost[i], i)):
            p = min(range(parts), key=lambda p: (load[p], p))
            owner[i] = p
            load[p] += cost[i]
        units = [u for i, u in enumerate(units) if owner[i] == k - 1]
    if done:
        for u in units:
            u.cases = [c for c in u.cases if c.key not in done]
            u.skipped = [x for x in u.skipped if x[0].key not in done]
        units = [u for u in units if u.cases or u.skipped]
    return units


def loop_unroll(settings: Settings, impl: Implementation) -> int:
    """Calls an iteration of the in-jit loop: --injit-unroll, 1 for the per-step scans."""
    return 1 if impl.slow else settings.injit_unroll


def calls_per_loop(settings: Settings, impl: Implementation, n: int, t: int, mode: str) -> int:
    """K: enough calls that one loop outlasts the host dispatch (fewer for bigger problems).

    Per-step scans cost about a kernel launch per step, so their K counts steps: K = 1 from
    T = 2048 on (fwd; 683 in fwd+bwd).
    """
    work = 3 if mode == "fwd+bwd" else 1
    if impl.slow:
        k = settings.slow_loop_steps // (t * work)
    else:
        k = max(4, settings.loop_elements // (n * t * work))
    return int(min(settings.max_calls_per_loop, max(1, k)))


# --------------------------------------------------------------------------- building blocks


def with_mode(fn: Callable[[dict], tuple], mode: str, floats: Sequence[str]) -> Callable:
    """fwd: inputs -> outputs.  fwd+bwd: (inputs, cotangents) -> (outputs, input gradients)."""
    if mode == "fwd":
        return fn

    def fwd_bwd(inputs: dict, cotangents: tuple):
        diff = {k: inputs[k] for k in floats}
        rest = {k: v for k, v in inputs.items() if k not in diff}
        outputs, vjp = jax.vjp(lambda d: fn({**d, **rest}), diff)
        (grads,) = vjp(tuple(cotangents))
        return outputs, grads

    return fwd_bwd


def make_loop(call: Callable, k: int, unroll: int = 1) -> Callable:
    """loop(*args): `call(*args)` k times on the same arguments, no call removable.

    The first call runs before a `lax.fori_loop` of k-1 more. Each iteration passes its
    arguments and its call's outputs together through `lax.optimization_barrier`, and the
    barrier's outputs are the next iteration's carry. XLA cannot see through the barrier, so
    the arguments of every call look loop-variant: no call (nor any part of one) is hoisted out
    of the loop or merged with another. (A barrier whose outputs are partly unused is no use:
    XLA drops the unused part and then hoists.) Arguments and outputs are pinned to the
    row-major layout, as at a jit boundary. The barrier emits no device work; the loop's own
    bookkeeping is its counter. The outputs are those of one call.

    With `unroll` = U > 1 each iteration makes U such calls, so that what the loop itself costs
    between iterations is paid once every U calls; k - 1 must be a multiple of U
    (`unrolled_calls`). Two things keep all U: the carry holds U references to the arguments,
    one for each call (XLA merges calls on the same value even across a barrier, which it
    removes late; the U references are one buffer, nothing is copied), and every call's outputs
    reach the program's result (a call whose outputs nothing reads is removed). The loop returns
    the last U calls' outputs, a tuple in call order; making its U - 1 extra output buffers
    copies one call's outputs U - 1 times, once a run of the loop.
    """
    if unroll < 1 or (k - 1) % unroll:
        raise ValueError(f"k - 1 = {k - 1} must be a multiple of unroll = {unroll} (>= 1)")

    def loop(*args):
        out = call(*args)
        if k == 1:
            return out if unroll == 1 else (out,) * unroll

        def body(_, carry):
            pairs = []
            for args_ in carry[0]:
                args_ = _default_layout(args_)
                pairs.append(lax.optimization_barrier((args_, _default_layout(call(*args_)))))
            return tuple(a for a, _ in pairs), tuple(o for _, o in pairs)

        outs = lax.fori_loop(0, (k - 1) // unroll, body, ((args,) * unroll, (out,) * unroll))[1]
        return outs[0] if unroll == 1 else outs

    return loop


def unrolled_calls(k: int, unroll: int) -> int:
    """The call count nearest above k that `make_loop` takes with this `unroll`."""
    return 1 + unroll * -(-(k - 1) // unroll) if k > 1 else 1


def _default_layout(tree):
    """Pins arrays to the row-major layout, as at a jit boundary.

    Inside a loop XLA may otherwise keep a carried array transposed and convert it once,
    outside: the calls would skip the layout conversions that a call at a jit boundary pays
    (seen for `lax.scan` in the batch-major layout).
    """
    if not _PIN_LAYOUTS["on"]:
        return tree
    return jax.tree.map(lambda v: with_layout_constraint(v, Layout(tuple(range(v.ndim)))), tree)


_PIN_LAYOUTS = {"on": with_layout_constraint is not None}


def check_layout_pinning() -> str | None:
    """Turns layout pinning off (and says why) if this jax / backend cannot compile it."""
    if not _PIN_LAYOUTS["on"]:
        return "jax.experimental.layout is not available"
    try:
        loop = jax.jit(make_loop(jax.jit(lambda x: (2 * x, x.T)), 2))
        jax.block_until_ready(loop(jnp.ones((8, 4))))
    except Exception as e:
        _PIN_LAYOUTS["on"] = False
        return _short(e)
    return None


@jax.jit
def _relative_error(x: jax.Array, ref: jax.Array) -> jax.Array:
    """max |x - ref| / max |ref| (NaN if x has a NaN)."""
    diff = jnp.max(jnp.abs(x.astype(jnp.float32) - ref.astype(jnp.float32)))
    scale = jnp.max(jnp.abs(ref.astype(jnp.float32)))
    return jnp.where(scale > 0, diff / jnp.where(scale > 0, scale, 1.0), diff)


def relative_error(out, ref) -> float:
    """The largest `_relative_error` over matching leaves of two pytrees."""
    xs, ts = jax.tree.flatten(out)
    rs, tr = jax.tree.flatten(ref)
    if ts != tr:
        raise ValueError(f"output structure {ts} differs from the reference's {tr}")
    errs = [float(_relative_error(x, r)) for x, r in zip(xs, rs, strict=True)]
    return max(errs) if errs else 0.0


def _stats(samples: Sequence[float]) -> tuple:
    """(median, p10, p90); spread is None with fewer than 3 samples."""
    if not samples:
        return None, None, None
    a = np.asarray(samples, dtype=np.float64)
    med = float(np.median(a))
    if len(a) < 3:
        return med, None, None
    return med, float(np.percentile(a, 10)), float(np.percentile(a, 90))


def _round(x, digits=3):
    return None if x is None else float(f"{x:.{digits + 3}g}")


def _avals(tree):
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), tree)


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


# --------------------------------------------------------------------------- global measurements


def copy_bandwidth(settings: Settings) -> dict:
    """Device-to-device copy bandwidth: a jitted `x + c` over `copy_bytes` of float32 (read + write)."""
    n = settings.copy_bytes // 4
    x = jnp.zeros((n,), jnp.float32)
    c = jnp.float32(0.0)  # an argument, so `x + c` cannot be folded into a copy-free no-op
    f = jax.jit(lambda x, c: x + c)
    for _ in range(3):
        jax.block_until_ready(f(x, c))
    moved = 2 * n * 4
    out = {"copy_bytes": moved, "copy_method": "wall clock"}
    seconds = None
    if settings.profile:
        try:
            session = devicetime.run([devicetime.Job("copy", lambda: f(x, c), windows=10)])
            samples, _ = devicetime.per_call_us(session.windows.get("copy", []), 1)
            if samples:
                seconds = float(np.median(samples)) * 1e-6
                out["copy_method"] = "device time (profiler)"
        except Exception as e:  # recorded, and the wall clock stands in
            out["copy_profile_error"] = repr(e)
    if seconds is None:
        times = []
        for _ in range(10):
            t0 = time.perf_counter()
            jax.block_until_ready(f(x, c))
            times.append(time.perf_counter() - t0)
        seconds = float(np.median(times))
    out["copy_bw_gbps"] = moved / seconds / 1e9
    return out


def dispatch_us() -> float:
    """Wall time of one tiny jitted call (host dispatch + sync), the floor of any single call."""
    f = jax.jit(lambda x: x + 1)
    x = jnp.float32(0.0)
    for _ in range(5):
        jax.block_until_ready(f(x))
    times = []
    for _ in range(50):
        t0 = time.perf_counter()
        jax.block_until_ready(f(x))
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e6


def environment(*packages: str) -> dict:
    """Where a result was measured: the device, the versions (jax, jaxlib, triton, jax-triton,
    rlscan_jax, numpy, Python, and `packages`), the date and the host, for a results header."""
    dev = jax.devices()[0]
    return {
        "device": dev.device_kind,
        "platform": dev.platform,
        "device_count": jax.device_count(),
        "jax": jax.__version__,
        "jaxlib": _version("jaxlib"),
        "triton": _version("triton"),
        "jax_triton": _version("jax-triton") or _version("jax_triton"),
        **{name: _version(name) for name in packages},
        "rlscan_jax": rlscan_jax.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
    }


def header(settings: Settings, impls: dict, unavailable: dict, copy: dict) -> dict:
    return {
        "record": "header",
        **environment("rlax"),
        **copy,
        "copy_bw_gbps": _round(copy["copy_bw_gbps"]),
        "dispatch_us": _round(dispatch_us()),
        "implementations": sorted(impls),
        "unavailable": unavailable,
        "part": f"{settings.part[0]}/{settings.part[1]}",
        "argv": sys.argv[1:],
        "settings": {
            "seed": settings.seed,
            "tolerance": TOLERANCE,
            "reference": f"{REFERENCE} float32",
            "slow_max_t": settings.slow_max_t,
            "slow_reduced_t": settings.slow_reduced_t,
            "slow_profile_max_t": settings.slow_profile_max_t,
            "loop_elements": settings.loop_elements,
            "slow_loop_steps": settings.slow_loop_steps,
            "max_calls_per_loop": settings.max_calls_per_loop,
            "injit_unroll": settings.injit_unroll,
            "injit_budget_s": settings.injit_budget_s,
            "device_windows": settings.device_windows,
            "profile": settings.profile,
            "l2_flush_bytes": settings.l2_flush_bytes,
            "launch": launch_record(settings.launch),
        },
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "triton_custom_call": triton_custom_call() if "triton" in impls else None,
    }


# Header fields that describe how a run was set up, copied into its entry of "runs" so that a
# merged file still says which records ran how.
RUN_SETUP_KEYS = ("xla_flags", "triton_custom_call")


def triton_custom_call() -> str | None:
    """The XLA custom-call target the Triton implementation's launches lower to here."""
    try:
        from rlscan_jax._src.triton import custom_call, launch

        return custom_call.active_target(launch.FFI_CUSTOM_CALL)
    except ImportError:  # no jax-triton (the interpreter runs the kernels)
        return None


# --------------------------------------------------------------------------- one unit


class _Compiler:
    """Lowers on the calling thread (tracing holds the GIL anyway, and lowering a Triton call
    compiles its kernel in Python) and compiles on a thread pool (XLA releases the GIL)."""

    def __init__(self, workers: int):
        self.pool = concurrent.futures.ThreadPoolExecutor(max_workers=max(1, workers))
        self.futures: dict = {}

    def submit(self, key, jitted, args: tuple) -> None:
        if key in self.futures:
            return
        t0 = time.perf_counter()
        try:
            lowered = jitted.lower(*args)
        except Exception as e:  # becomes an "error" record
            fut: concurrent.futures.Future = concurrent.futures.Future()
            fut.set_exception(e)
            self.futures[key] = fut
            return
        lower_s = time.perf_counter() - t0

        def compile_():
            t1 = time.perf_counter()
            compiled = lowered.compile()
            return compiled, lower_s + time.perf_counter() - t1

        self.futures[key] = self.pool.submit(compile_)

    def result(self, key):
        """(compiled, seconds) or raises the lowering / compilation error."""
        return self.futures[key].result()

    def close(self):
        self.pool.shutdown(wait=True)


def _signature(tree) -> tuple:
    leaves, treedef = jax.tree.flatten(_avals(tree))
    return str(treedef), tuple((x.shape, str(x.dtype)) for x in leaves)


class UnitRunner:
    """Runs the cases of one unit: compile, gate, in-jit time, device time, records.

    Each case has up to two programs: the loop (`make_loop`: gate and in-jit time) and, when
    device time is profiled and K > 1, the single call (device time per call, with no loop
    overhead in it). Equal programs (the associative float32 loop doubles as the reference)
    compile once.
    """

    def __init__(self, settings: Settings, impls: dict[str, Implementation], copy_bw_gbps: float):
        self.s = settings
        self.impls = impls
        self.copy_bw = copy_bw_gbps
        self._flush = None  # devicetime.cache_flush(settings.l2_flush_bytes), made at first use

    def _before_window(self):
        if not self.s.l2_flush_bytes:
            return None
        if self._flush is None:
            self._flush = devicetime.cache_flush(self.s.l2_flush_bytes)
        return self._flush

    @staticmethod
    def _args(inputs: dict, cots: tuple | None, mode: str) -> tuple:
        return (inputs,) if mode == "fwd" else (inputs, cots)

    def run(self, unit: Unit) -> list[dict]:
        s, op, n, t = self.s, unit.op, unit.n, unit.t
        spec = shapes.SPECS[op]
        t_unit = time.perf_counter()
        records = [self._skipped(c, why) for c, why in unit.skipped]
        ref_impl = self.impls.get(REFERENCE) or IMPLEMENTATIONS[REFERENCE]

        # Inputs: float32 per layout; 16-bit copies are roundings of them.
        base = {layout: shapes.make_inputs(op, n, t, layout, "float32", s.seed) for layout in s.layouts}
        cot_key = jax.random.fold_in(jax.random.key(s.seed + 1), n * 7919 + t)
        cot_tm = [jax.random.normal(k, (t, n), jnp.float32) for k in jax.random.split(cot_key, len(spec.outputs))]
        base_cots = {layout: tuple(c if layout == "time_major" else c.T for c in cot_tm) for layout in s.layouts}
        converted: dict = {}

        def inputs_for(layout: str, dtype: str) -> tuple[dict, tuple]:
            if (layout, dtype) not in converted:
                x = {k: v.astype(dtype) if k in spec.floats else v for k, v in base[layout].items()}
                converted[(layout, dtype)] = x, tuple(c.astype(dtype) for c in base_cots[layout])
            return converted[(layout, dtype)]

        def upcast(tree):
            return jax.tree.map(lambda v: v.astype(jnp.float32) if jnp.issubdtype(v.dtype, jnp.floating) else v, tree)

        # Lower every program here, compile them in parallel.
        compiler = _Compiler(s.compile_workers)

        calls: dict = {}

        def submit(impl: Implementation, layout: str, dtype: str, mode: str, single: bool) -> tuple:
            unroll = loop_unroll(s, impl)
            k = unrolled_calls(calls_per_loop(s, impl, n, t, mode), unroll)
            args = self._args(*inputs_for(layout, dtype), mode)
            key = (impl.name, layout, mode, k, single, _signature(args))
            if key not in compiler.futures:
                if (impl.name, layout, mode) not in calls:  # one traced function per program family
                    calls[(impl.name, layout, mode)] = jax.jit(with_mode(impl.build(op, layout), mode, spec.floats))
                call = calls[(impl.name, layout, mode)]
                if single:
                    compiler.submit(key, call, _avals(args))
                else:
                    compiler.submit(key, jax.jit(make_loop(call, k, unroll)), _avals(args))
            return key, k

        plans = {}
        for case in unit.cases:
            impl = self.impls[case.impl]
            loop_key, k = submit(impl, case.layout, case.dtype, case.mode, single=False)
            single_key = loop_key
            profiled = s.profile and not (impl.slow and t > min(s.slow_profile_max_t, s.slow_reduced_t))
            if profiled and k > 1:
                single_key, _ = submit(impl, case.layout, case.dtype, case.mode, single=True)
            plans[case] = (loop_key, single_key, k)
        refs = {
            (layout, mode): submit(ref_impl, layout, "float32", mode, single=False)[0]
            for layout in {c.layout for c in unit.cases}
            for mode in {c.mode for c in unit.cases}
        }
        compile_s = 0.0
        try:
            for fut in compiler.futures.values():
                try:
                    compile_s += fut.result()[1]
                except Exception:  # reported per case below
                    pass
        finally:
            compiler.close()
        t_compiled = time.perf_counter()

        # References, on demand: (layout, dtype, mode, semantics) -> outputs, or an exception.
        ref_cache: dict = {}

        def reference(layout: str, dtype: str, mode: str, semantics: str):
            rk = (layout, dtype, mode, semantics)
            if rk not in ref_cache:
                if any(key[:3] != rk[:3] for key in ref_cache):
                    ref_cache.clear()  # cases come grouped by (layout, dtype, mode): free the last group's
                try:
                    compiled, _ = compiler.result(refs[(layout, mode)])
                    x, cots = upcast(inputs_for(layout, dtype))
                    if semantics == "rlax":
                        x = baselines.rlax_problem(op, x, layout)
                    out = jax.block_until_ready(compiled(*self._args(x, cots, mode)))
                    out = out[-1] if loop_unroll(s, ref_impl) > 1 else out  # its last call's
                    if semantics == "rlax" and mode == "fwd+bwd":
                        out = (out[0], baselines.rlax_gradients(op, out[1], layout))
                    ref_cache[rk] = out
                except Exception as e:  # every case of the group reports it
                    ref_cache[rk] = e
            return ref_cache[rk]

        # Gate and in-jit time, case by case; device time afterwards, in one profiler session.
        jobs, pending = [], []
        for case in unit.cases:
            impl = self.impls[case.impl]
            loop_key, single_key, k = plans[case]
            rec = self._base_record(case, k)
            unroll = loop_unroll(s, impl)
            rec["injit_unroll"] = unroll
            try:
                loop, loop_s = compiler.result(loop_key)
                single, single_s = compiler.result(single_key)
            except Exception as e:
                records.append({**rec, "status": "error", "note": f"compile: {_short(e)}"})
                continue
            rec["compile_s"] = _round(loop_s + (single_s if single_key != loop_key else 0.0))
            ref = reference(case.layout, case.dtype, case.mode, impl.semantics)
            if isinstance(ref, Exception):
                records.append({**rec, "status": "error", "note": f"reference: {_short(ref)}"})
                continue
            args = self._args(*inputs_for(case.layout, case.dtype), case.mode)
            try:
                t0 = time.perf_counter()
                out = jax.block_until_ready(loop(*args))
                t_loop = time.perf_counter() - t0
                out = out[-1] if unroll > 1 else out  # the last call's
                err = relative_error(out, ref)
            except Exception as e:
                records.append({**rec, "status": "error", "note": f"run: {_short(e)}"})
                continue
            del out
            tol = TOLERANCE[case.dtype]
            rec.update(max_err=_round(err), tolerance=tol)
            if not err <= tol:  # also catches NaN
                records.append({**rec, "status": "failed", "correct": False})
                continue
            rec["correct"] = True
            reduced = impl.slow and t > s.slow_reduced_t
            if reduced:  # seconds per call: the gate's run is the one timed sample
                reps, samples = 0, [t_loop / k * 1e6]
            elif impl.slow:
                reps, samples = int(min(10, max(3, s.slow_budget_s / max(t_loop, 1e-9)))), []
            else:
                jax.block_until_ready(loop(*args))
                reps, samples = int(min(30, max(5, s.injit_budget_s / max(t_loop, 1e-9)))), []
            for _ in range(reps):
                t0 = time.perf_counter()
                jax.block_until_ready(loop(*args))
                samples.append((time.perf_counter() - t0) / k * 1e6)
            med, p10, p90 = _stats(samples)
            rec.update(
                injit_us=_round(med), injit_us_p10=_round(p10), injit_us_p90=_round(p90), injit_samples=len(samples)
            )
            if reduced:
                rec["note"] = f"T > --slow-reduced-t={s.slow_reduced_t}: the gate's run timed once, not profiled"
            elif impl.slow and t > s.slow_profile_max_t and s.profile:
                rec["note"] = f"T > --slow-profile-max-t={s.slow_profile_max_t}: not profiled (a kernel per step)"
            elif s.profile:
                windows = s.device_windows
                if impl.slow:  # a few kernels per step: keep the trace to ~512 steps per case
                    windows = max(1, min(windows, 512 // (t * (3 if case.mode == "fwd+bwd" else 1))))
                if single_key == loop_key:  # K = 1: the loop is one call
                    fn = _bind(loop, args)
                else:
                    jax.block_until_ready(single(*args))
                    fn = _bind(single, args)
                jobs.append(devicetime.Job(f"{len(jobs)}", fn, windows=windows))
                pending.append(len(records))
            records.append(rec)
        t_timed = time.perf_counter()

        if jobs:
            try:
                session = devicetime.run(jobs, log_dir=self._trace_dir(unit), before_window=self._before_window())
                for job, i in zip(jobs, pending, strict=True):
                    samples, per_call_events = devicetime.per_call_us(session.windows.get(job.name, []), 1)
                    med, p10, p90 = _stats(samples)
                    records[i].update(
                        device_us=_round(med),
                        device_us_p10=_round(p10),
                        device_us_p90=_round(p90),
                        device_samples=len(samples),
                        device_kernels_per_call=_round(per_call_events),
                        l2_flush_bytes=s.l2_flush_bytes,  # what each timed call read its inputs through
                    )
                    if not samples:
                        records[i]["note"] = "no device events" if session.has_device else "no device in the trace"
                    elif records[i]["injit_us"] < 0.8 * records[i]["device_us"]:
                        # A loop's calls cannot take less than the device time of one call.
                        records[i]["note"] = "in-jit < device time: XLA may have merged calls in the loop"
                        print(f"  warning: {_label(records[i])}: {records[i]['note']}", flush=True)
                if session.unattributed:
                    print(f"  note: {session.unattributed} device events fell outside every window", flush=True)
            except Exception as e:  # in-jit times stand; device times are missing
                print(f"  profile failed: {_short(e)}", flush=True)
                for i in pending:
                    records[i]["note"] = f"profile failed: {_short(e)}"
        del jobs
        t_end = time.perf_counter()
        ok = sum(r["status"] == "ok" for r in records)
        bad = [r for r in records if r["status"] in ("failed", "error")]
        print(
            f"  {op} {n}x{t}: {len(unit.cases)} cases ({ok} ok, {len(bad)} failed/error, {len(unit.skipped)} skipped)"
            f"  compile {t_compiled - t_unit:.1f}s (sum {compile_s:.1f}s)  gate+in-jit {t_timed - t_compiled:.1f}s"
            f"  profile {t_end - t_timed:.1f}s",
            flush=True,
        )
        for r in bad:
            why = r.get("note") or ""
            print(f"    {r['status'].upper()}: {_label(r)} max_err={r.get('max_err')} {why}", flush=True)
        return records

    def _trace_dir(self, unit: Unit) -> str | None:
        if self.s.trace_dir is None:
            return None
        path = os.path.join(self.s.trace_dir, f"{unit.op}_{unit.n}x{unit.t}")
        os.makedirs(path, exist_ok=True)
        return path

    def _base_record(self, case: Case, k: int) -> dict:
        launch = {"launch": launch_record(self.s.launch)} if self.s.launch else {}  # not the shipped plans
        return {
            **launch,
            "record": "result",
            "op": case.op,
            "implementation": case.impl,
            "layout": case.layout,
            "time_axis": shapes.TIME_AXIS[case.layout],
            "dtype": case.dtype,
            "N": case.n,
            "T": case.t,
            "mode": case.mode,
            "status": "ok",
            "correct": None,
            "max_err": None,
            "tolerance": TOLERANCE[case.dtype],
            "reference": "itself" if (case.impl == REFERENCE and case.dtype == "float32") else f"{REFERENCE} float32",
            "semantics": self.impls[case.impl].semantics,
            "device_us": None,
            "device_us_p10": None,
            "device_us_p90": None,
            "device_samples": 0,
            "device_kernels_per_call": None,
            "injit_us": None,
            "injit_us_p10": None,
            "injit_us_p90": None,
            "injit_samples": 0,
            "calls_per_loop": k,
            "bytes_min": shapes.bytes_min(case.op, case.n, case.t, case.dtype, case.mode),
            "copy_bw_gbps": _round(self.copy_bw),
            "compile_s": None,
            "note": None,
        }

    def _skipped(self, case: Case, why: str) -> dict:
        rec = self._base_record(case, calls_per_loop(self.s, self.impls[case.impl], case.n, case.t, case.mode))
        rec.update(status="skipped", note=why)
        return rec


def _bind(compiled, args):
    return lambda: compiled(*args)


def _short(e: BaseException, limit: int = 300) -> str:
    text = f"{type(e).__name__}: {e}".replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _label(r: dict) -> str:
    return f"{r['op']}/{r['implementation']}/{r['layout']}/{r['dtype']}/{r['N']}x{r['T']}/{r['mode']}"


# --------------------------------------------------------------------------- the suite


def load_results(path: str) -> tuple[dict | None, list[dict]]:
    with open(path) as f:
        data = json.load(f)
    heads = [r for r in data if r.get("record") == "header"]
    return (heads[0] if heads else None), [r for r in data if r.get("record") != "header"]


def write_results(path: str, head: dict, records: list[dict]) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump([head, *records], f, indent=1)
        f.write("\n")
    os.replace(tmp, path)


def run_suite(
    settings: Settings,
    implementations: dict[str, Implementation] | None = None,
    *,
    out: str | None = None,
    resume: bool = False,
) -> tuple[dict, list[dict]]:
    """Runs the planned cases and returns (header, records); writes `out` after every unit.

    Args:
      settings: what to run.
      implementations: name -> Implementation (default `IMPLEMENTATIONS`); settings.impls
        picks from it.
      out: the JSON path, rewritten after each unit (None: not written).
      resume: keep the records already in `out` and run only the missing cases.

    Returns:
      (the header record, every result record).
    """
    impls = dict(implementations or IMPLEMENTATIONS)
    t_start = time.perf_counter()
    unavailable = {}
    for name in settings.impls:
        if name not in impls:
            raise ValueError(f"unknown implementation {name!r}; known: {sorted(impls)}")
        why = impls[name].unavailable()
        if why is not None:
            unavailable[name] = why
    if unavailable:
        for name, why in unavailable.items():
            print(f"skipping implementation {name!r}: {why}", flush=True)
        settings = dataclasses.replace(settings, impls=tuple(i for i in settings.impls if i not in unavailable))

    pin_error = check_layout_pinning()
    if pin_error:
        print(f"warning: loops are not layout-pinned: {pin_error}", flush=True)
    old_head, records = (None, [])
    if resume and out and os.path.exists(out):
        old_head, records = load_results(out)
        records = [r for r in records if r.get("status") != "error"]
    done = {key_of(r) for r in records}
    units = plan(settings, impls, done)
    n_cases = sum(len(u.cases) for u in units)
    print(
        f"{len(units)} units, {n_cases} cases on {jax.devices()[0].device_kind} ({jax.default_backend()});"
        f" implementations {list(settings.impls)}; part {settings.part[0]}/{settings.part[1]}",
        flush=True,
    )
    copy = copy_bandwidth(settings)
    head = header(settings, {i: impls[i] for i in settings.impls}, unavailable, copy)
    head["settings"]["layout_pinned_loops"] = _PIN_LAYOUTS["on"]
    print(f"copy bandwidth {head['copy_bw_gbps']:.1f} GB/s ({copy['copy_method']}), dispatch {head['dispatch_us']} µs")
    runs = (old_head or {}).get("runs", [])
    runner = UnitRunner(settings, impls, copy["copy_bw_gbps"])
    remaining, unit_seconds, cases_done, units_s = [], {}, 0, 0.0
    for i, unit in enumerate(units):
        elapsed = time.perf_counter() - t_start
        # The time per case measured so far predicts the next unit (the model only at the start).
        guess = units_s / cases_done * len(unit.cases) if cases_done else unit.estimate_s(impls)
        if settings.max_seconds is not None and elapsed + guess > settings.max_seconds:
            remaining = units[i:]
            break
        print(f"[{i + 1}/{len(units)}] {unit.op} {unit.n}x{unit.t}  (elapsed {elapsed:.0f}s)", flush=True)
        t_unit = time.perf_counter()
        records.extend(runner.run(unit))
        unit_seconds[f"{unit.op} {unit.n}x{unit.t}"] = round(time.perf_counter() - t_unit, 1)
        units_s += time.perf_counter() - t_unit
        cases_done += len(unit.cases)
        if out:
            write_results(out, _finish(head, runs, t_start, units[i + 1 :], unit_seconds), records)
    if remaining:
        print(
            f"stopped at --max-seconds={settings.max_seconds}: {len(remaining)} units not run "
            f"({', '.join(f'{u.op} {u.n}x{u.t}' for u in remaining[:6])}{', ...' if len(remaining) > 6 else ''});"
            " run again with --resume to continue",
            flush=True,
        )
    head = _finish(head, runs, t_start, remaining, unit_seconds)
    if out:
        write_results(out, head, records)
    return head, records


def _finish(head: dict, runs: list, t_start: float, remaining: list[Unit], unit_seconds: dict) -> dict:
    elapsed = round(time.perf_counter() - t_start, 1)
    this = {k: head[k] for k in ("date", "part", "copy_bw_gbps", "host")}
    this.update((k, head[k]) for k in RUN_SETUP_KEYS if k in head)
    return {
        **head,
        "elapsed_s": elapsed,
        "complete": not remaining,
        "remaining_units": [f"{u.op} {u.n}x{u.t}" for u in remaining],
        "runs": [*runs, {**this, "elapsed_s": elapsed, "unit_seconds": unit_seconds}],
    }


# --------------------------------------------------------------------------- command line


def _grid(text: str) -> tuple[tuple[int, int], ...]:
    out = []
    for item in text.split(","):
        n, t = item.lower().split("x")
        out.append((int(n), int(t)))
    return tuple(out)


def _names(text: str, known: Sequence[str], what: str) -> tuple[str, ...]:
    names = tuple(x.strip() for x in text.split(",") if x.strip())
    for name in names:
        if name not in known:
            raise argparse.ArgumentTypeError(f"unknown {what} {name!r}; known: {', '.join(known)}")
    return names


def _part(text: str) -> tuple[int, int]:
    k, n = (int(x) for x in text.split("/"))
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"--part {text}: need 1 <= k <= n")
    return k, n


def parse_args(argv: Sequence[str] | None = None) -> tuple[Settings, argparse.Namespace]:
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", help="results JSON (default benchmarks/results/<device>.json, cpu_quick.json with --quick)")
    p.add_argument("--quick", action="store_true", help="the CPU smoke subset (two small shapes, fp32, no triton)")
    p.add_argument("--ops", help=f"comma list of {', '.join(shapes.OPS)}")
    p.add_argument("--impls", help=f"comma list of {', '.join(IMPLEMENTATIONS)} (default: all that can run here)")
    p.add_argument("--shapes", help="comma list of NxT (default: the grid in benchmarks/shapes.py)")
    p.add_argument("--dtypes", help="comma list of float32, bfloat16")
    p.add_argument("--layouts", help="comma list of time_major, batch_major")
    p.add_argument("--modes", help="comma list of fwd, fwd+bwd")
    p.add_argument("--part", type=_part, default=(1, 1), help="k/n: run the k-th of n balanced parts of the plan")
    p.add_argument("--resume", action="store_true", help="keep the records already in --out, run only missing ones")
    p.add_argument("--max-seconds", type=float, help="start no unit that would end after this many seconds")
    p.add_argument("--slow-max-t", type=int, default=131072, help="skip sequential/rlax above this T")
    p.add_argument("--slow-reduced-t", type=int, default=16384, help="above this T: sequential/rlax fp32, 1 repeat")
    p.add_argument("--slow-profile-max-t", type=int, default=512, help="profile sequential/rlax up to this T")
    p.add_argument("--profile", choices=("auto", "on", "off"), default="auto", help="device time (auto: on a GPU)")
    p.add_argument("--compile-workers", type=int, default=min(8, os.cpu_count() or 1))
    p.add_argument("--copy-mib", type=int, help="copy-bandwidth array size (default 2048 on GPU, 64 on CPU)")
    p.add_argument(
        "--l2-flush-mib",
        type=int,
        help="device time: read and write this many MiB before each timed call, so that its inputs come from"
        " device memory, not the L2 cache (default 256 on GPU, 0: off)",
    )
    p.add_argument(
        "--injit-unroll",
        type=int,
        default=1,
        help="in-jit time: calls an iteration of the loop (default 1); the loop's cost between iterations is then"
        " paid once every this many calls. Not for sequential/rlax",
    )
    p.add_argument(
        "--loop-elements",
        type=int,
        help="in-jit time: K = this / (N*T), fewer for fwd+bwd, 4 to --max-calls-per-loop (default 2**28 on GPU)",
    )
    p.add_argument("--max-calls-per-loop", type=int, help="in-jit time: the most calls a loop makes (default 256)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--trace-dir", help="keep the profiler traces here (default: temporary, removed)")
    p.add_argument("--plan", action="store_true", help="print the units of this part and their rough cost; run nothing")
    add_launch_option(p, "recorded in the header and in every record")
    a = p.parse_args(argv)
    launch_overrides = tuple(_launch_override(item, p) for item in a.launch)

    gpu = jax.default_backend() == "gpu"
    s = Settings(
        seed=a.seed,
        slow_max_t=a.slow_max_t,
        slow_reduced_t=a.slow_reduced_t,
        slow_profile_max_t=a.slow_profile_max_t,
        profile=a.profile == "on" or (a.profile == "auto" and gpu),
        compile_workers=a.compile_workers,
        max_seconds=a.max_seconds,
        part=a.part,
        trace_dir=a.trace_dir,
        launch=launch_overrides,
        injit_unroll=a.injit_unroll,
    )
    if a.injit_unroll < 1:
        p.error(f"--injit-unroll must be >= 1, got {a.injit_unroll}")
    if not gpu:  # CPU calls are slow: short loops, smaller copy
        s.loop_elements, s.max_calls_per_loop = 2**16, 16
    s.loop_elements = a.loop_elements or s.loop_elements
    s.max_calls_per_loop = a.max_calls_per_loop or s.max_calls_per_loop
    s.copy_bytes = (a.copy_mib or (2048 if gpu else 64)) * 2**20
    s.l2_flush_bytes = (a.l2_flush_mib if a.l2_flush_mib is not None else (256 if gpu else 0)) * 2**20
    if a.quick:
        s.grid = shapes.QUICK_GRID
        s.impls = ("associative", "sequential", "rlax")
        s.dtypes = ("float32",)
        s.ops = QUICK_OPS
        s.injit_budget_s = s.slow_budget_s = 0.02
    else:
        s.impls = tuple(IMPLEMENTATIONS)
    if a.ops:
        s.ops = _names(a.ops, shapes.OPS, "op")
    if a.impls:
        s.impls = _names(a.impls, tuple(IMPLEMENTATIONS), "implementation")
    if a.shapes:
        s.grid = _grid(a.shapes)
    if a.dtypes:
        s.dtypes = _names(a.dtypes, shapes.DTYPES, "dtype")
    if a.layouts:
        s.layouts = _names(a.layouts, shapes.LAYOUTS, "layout")
    if a.modes:
        s.modes = _names(a.modes, shapes.MODES, "mode")
    if a.out is None:
        a.out = default_out(a.quick, a.part)
    return s, a


QUICK_OPS = ("gae", "episodic_cumsum")


def add_launch_option(parser: argparse.ArgumentParser, recorded: str) -> None:
    """--launch NAME=VALUE (repeatable): parse it with _launch_override, apply it with set_launch."""
    parser.add_argument(
        "--launch",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="override a launch constant of rlscan_jax's Triton plans (e.g. VECTOR_SPLIT_ELEMS=0), for tuning "
        f"runs; {recorded}",
    )


def set_launch(overrides) -> None:
    """Sets the overridden launch constants: before anything is traced, as plans are made at trace time."""
    from rlscan_jax._src.triton import launch

    for name, value in overrides:
        setattr(launch, name, value)


def launch_record(overrides) -> dict:
    """--launch's overrides as the results record them: each value as given where JSON can hold it,
    else its Python literal (a dict with tuple keys, such as ROW_REGISTERS')."""

    def plain(v):
        try:
            json.dumps(v)
        except TypeError:
            return repr(v)
        return v

    return {name: plain(value) for name, value in overrides}


def _launch_override(item: str, parser: argparse.ArgumentParser) -> tuple[str, object]:
    """NAME=VALUE for --launch: an existing upper-case constant of launch.py, a value of its type."""
    from rlscan_jax._src.triton import launch

    name, sep, text = item.partition("=")
    current = getattr(launch, name, None) if name.isupper() else None
    if not sep or current is None or isinstance(current, type) or callable(current):
        parser.error(f"--launch {item!r}: expected NAME=VALUE with NAME a launch constant such as VECTOR_SPLIT_ELEMS")
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        parser.error(f"--launch {item!r}: {text!r} is not a Python literal")
    if type(value) is not type(current) and not (isinstance(current, float) and type(value) is int):
        parser.error(f"--launch {item!r}: {name} is {type(current).__name__}, got {type(value).__name__}")
    return name, value


def default_out(quick: bool, part: tuple[int, int] = (1, 1)) -> str:
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
    if quick:
        name = "cpu_quick"
    else:
        kind = jax.devices()[0].device_kind
        name = "h200" if "H200" in kind.upper() else "".join(c if c.isalnum() else "_" for c in kind.lower())
    if part[1] > 1:
        name += f".part{part[0]}of{part[1]}"
    return os.path.join(root, f"{name}.json")


def print_plan(settings: Settings, impls: dict[str, Implementation]) -> None:
    """The units of each part with their case counts and rough cost (a model, not a measurement)."""
    k, parts = settings.part
    for part in range(1, parts + 1) if parts > 1 else [k]:
        units = plan(dataclasses.replace(settings, part=(part, parts)), impls)
        est = sum(u.estimate_s(impls) for u in units)
        n = sum(len(u.cases) for u in units)
        print(f"part {part}/{parts}: {len(units)} units, {n} cases, rough estimate {est / 60:.1f} min")
        if part == k or parts == 1:
            for u in units:
                print(f"  {u.op:<19} {u.n:>6}x{u.t:<8} {len(u.cases):>3} cases  ~{u.estimate_s(impls):.0f}s")


def main(argv: Sequence[str] | None = None) -> int:
    settings, args = parse_args(argv)
    set_launch(settings.launch)
    if args.plan:
        print_plan(settings, IMPLEMENTATIONS)
        return 0
    t0 = time.perf_counter()
    head, records = run_suite(settings, out=args.out, resume=args.resume)
    from benchmarks import report  # late: report imports this module

    print()
    print(report.short_table(head, records))
    print(f"\nwrote {len(records)} records to {args.out} in {time.perf_counter() - t0:.1f}s")
    failed = [r for r in records if r["status"] in ("failed", "error")]
    if failed:
        print(f"{len(failed)} cases failed the gate or errored: see 'status' and 'note' in the JSON")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
