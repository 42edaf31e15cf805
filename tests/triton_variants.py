"""The kernel variants the launchers actually produce, recorded without running anything.

`record()` traces every public op (forward and gradient; one-pass and split rows; both
layouts; float32 and bfloat16 inputs; flags as bool and as int8) with `launch.call` replaced
by a recorder, and returns one variant per distinct (kernel, constexpr flags), plus the bfloat16 ones. The compile
test builds each for sm_90; the GPU sanitizer sweep (gpu_runs/sanitize_driver.py) executes the
same `calls()` through `functions()` and keys each launch with `variant()` and `key()`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os

import cases
import jax
import jax.numpy as jnp
import numpy as np

_TYPES = {
    "float64": "fp64",
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
    "bool": "i1",
    "int8": "i8",
    "uint8": "u8",
    "int32": "i32",
}


@dataclasses.dataclass(frozen=True)
class Variant:
    kernel: object
    types: tuple[str, ...]  # every non-constexpr parameter, in order
    constexprs: tuple[tuple[str, object], ...]
    num_warps: int

    @property
    def name(self) -> str:
        flags = ",".join(f"{k}={v}" for k, v in self.constexprs)
        return f"{self.kernel.fn.__name__}[{','.join(self.types)}][{flags}]"


def _type(a) -> str:
    if isinstance(a, int):
        return "i64" if a >= 2**31 else "i32"
    return "*" + _TYPES[jnp.dtype(a.dtype).name]


def variant(kernel, args, out_shapes, num_warps: int, constexprs: dict) -> Variant:
    """The variant of one `launch.call(kernel, args=..., out_shapes=..., num_warps=..., **constexprs)`."""
    types = tuple(_type(a) for a in args) + tuple(_type(o) for o in out_shapes)
    return Variant(kernel, types, tuple(sorted(constexprs.items())), num_warps)


def key(v: Variant) -> tuple | None:
    """What `record()` keeps one variant per: (kernel, constexpr flags but block sizes, 16-bit inputs,
    and for a launch under a register cap its block steps and warps, which the cap is chosen for:
    launch.ROW_REGISTERS).

    None for a 16-bit split-row phase: 16-bit inputs are kept for one-pass kernels only.
    """
    constexprs = dict(v.constexprs)
    half = "*bf16" in v.types
    if half and constexprs.get("PHASE", 0) != 0:
        return None
    flags = tuple((k, x) for k, x in v.constexprs if k not in ("BT", "BB"))
    capped = (constexprs["BT"], v.num_warps) if constexprs.get("MAXNREG") else None
    return (v.kernel.fn.__name__, flags, half, capped)


@contextlib.contextmanager
def recording(on_launch):
    """Replaces `launch.call` while tracing: each launch calls `on_launch(kernel, grid, args,
    out_shapes, num_warps, constexprs)`, whose return value stands for the kernel's outputs
    (None: zeros). Nothing runs; "triton" is accepted without a GPU."""
    from rlscan_jax._src import dispatch
    from rlscan_jax._src.triton import batching, launch, ops
    from rlscan_jax._src.triton.kernels import (  # noqa: F401
        adjoint,
        adjoint_offpolicy,
        common,
        gae,
        linear,
        retrace,
        returns,
        vtrace,
    )

    # The kernels are imported above, before TRITON_INTERPRET is set, so they stay compilable.

    def fake_call(kernel, *, grid, args, out_shapes, num_warps=4, zeroed=(), **constexprs):
        outs = on_launch(kernel, grid, args, out_shapes, num_warps, constexprs)
        return [jnp.zeros(s.shape, s.dtype) for s in out_shapes] if outs is None else outs

    def clear():
        jax.clear_caches()
        batching.launcher.cache_clear()
        ops._op.cache_clear()
        dispatch.triton_unavailable_reason.cache_clear()

    saved_call, saved_env = launch.call, os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"  # lets dispatch accept "triton" on a CPU machine
    launch.call = fake_call
    clear()
    try:
        yield
    finally:
        launch.call = saved_call
        if saved_env is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = saved_env
        clear()


# (T, batch, time_axis): one pass time-major, one pass batch-major, split rows with the look-back
# (both layouts), general layout, split rows in three launches (too many chunks for the look-back).
LAYOUTS = (
    (16, (64,), 0),
    (16, (64,), -1),
    (4096, (2,), 0),
    (4096, (2,), -1),  # vectorisable long rows: three launches, vectorised (launch.VECTOR_SPLIT_ELEMS)
    (4094, (2,), -1),  # long rows not of a multiple of 4 steps: the look-back (PHASE 3)
    (4096, (8,), 0),  # time-major long rows of 8 columns: vector loads across them (launch.TIME_MAJOR_CVEC)
    (4096, (3,), 0),  # ... of 3: no vector width; split in few programs, so in small blocks (SPLIT_FILL_PROGRAMS)
    (131072, (7,), 0),  # ... of 7, enough chunks for 128 programs: the look-back for every op
    (8, (2, 3), 1),
    (16384, (32,), 0),
    (4096, (512,), -1),  # batch-major rows scanned whole, a row per program (BT = 4096)
    (1024, (3,), -1),  # ... in blocks of one row of up to 1024 steps (launch.ONE_ROW_BLOCK_WARPS)
    (72, (4096,), 0),  # time-major rows of up to 128 steps and many columns: [128, 8] blocks
)


def calls() -> list[tuple[cases.Inputs, dict]]:
    """The calls `record()` traces, in order: (inputs, arguments with the flags cast).

    Every op × mode × layout, in float32 with bool flags and in bfloat16 with int8 flags, with γ
    and λ as Python floats; then, for the ops with γ, every mode × layout in float32 with γ as an
    array, which `functions` traces: the fused backward's launch that also writes the parameters'
    gradients (or u, from which XLA takes them: ops.py); then
    their main mode × layout with γ and λ one a row and one a time step (launch.param's forms 3
    and 2, read at every site that reads them), in float32 and then in bfloat16 (whose gradient
    runs the forward kernel again with a float32 output: ops.py, param_residual); last, for the
    ops whose fused backward writes only the gradients asked for (ops.SELECTIVE), their main mode ×
    SELECTIVE_LAYOUTS in float32 with the gradient of the value inputs alone, of γ and λ alone (arrays), and
    for GAE and V-trace of each output alone (Inputs.wrt, Inputs.used); then V-trace's rows of 131072
    steps in 8 time-major columns, float32 and bfloat16 (launch.TIME_MAJOR_VECTOR_SPLIT_WARPS).
    """
    out = []
    for op, spec in cases.OPS.items():
        for mode in spec.modes:
            for T, batch, axis in LAYOUTS:
                for dtype, flag_dtype in ((np.float32, np.bool_), (jnp.bfloat16, np.int8)):
                    out.append(_call(op, mode, T, batch, axis, dtype, flag_dtype, 0.9))
    for op, spec in cases.OPS.items():
        if spec.has_gamma:
            for mode in spec.modes:
                for T, batch, axis in LAYOUTS:
                    out.append(_call(op, mode, T, batch, axis, np.float32, np.bool_, np.asarray(0.9, np.float32)))
    for dtype, flag_dtype in ((np.float32, np.bool_), (jnp.bfloat16, np.int8)):
        for op, spec in cases.OPS.items():
            if spec.has_gamma:
                for T, batch, axis in LAYOUTS:
                    for shared in ("row", "time"):
                        out.append(_call(op, cases.MAIN_MODE[op], T, batch, axis, dtype, flag_dtype, shared))
    for op in SELECTIVE:
        for T, batch, axis in SELECTIVE_LAYOUTS:
            gamma = np.asarray(0.9, np.float32)
            inp, args = _call(op, cases.MAIN_MODE[op], T, batch, axis, np.float32, np.bool_, gamma)
            names = inp.float_names()
            params = tuple(k for k in ("gamma", "lambda_") if k in names)
            critic = tuple(k for k in names if k in ("values", "next_values", "q_values"))
            subsets = [(critic, None), (params, None)]
            if op in ("gae", "vtrace"):
                inputs = tuple(k for k in names if k not in params)
                subsets += [(inputs, (0,)), (inputs, (1,))]
            out += [(dataclasses.replace(inp, wrt=wrt, used=used), args) for wrt, used in subsets]
    # V-trace's vectorised split of time-major rows of 8 columns in blocks that take
    # launch.TIME_MAJOR_VECTOR_SPLIT_WARPS: rows of 131072 steps, [256, 8] at 4 warps, 2 steps a
    # thread, 512 programs (TIME_MAJOR_VECTOR_SPLIT_WARPS_MIN_PROGRAMS; rows of 32768 steps have 128)
    for dtype, flag_dtype in ((np.float32, np.bool_), (jnp.bfloat16, np.int8)):
        out.append(_call("vtrace", cases.MAIN_MODE["vtrace"], 131072, (8,), 0, dtype, flag_dtype, 0.9))
    return out


# The ops whose fused backward writes only the gradients the differentiation asks for, and the
# layouts of their calls that ask for some: one pass both layouts, the batch-major look-back
# (PHASE 3) and a time-major split (PHASES 1 and 2).
SELECTIVE = ("gae", "vtrace", "retrace", "lambda_returns", "discounted_returns")
SELECTIVE_LAYOUTS = ((16, (64,), 0), (16, (64,), -1), (4094, (2,), -1), (4096, (3,), 0))


def _call(op, mode, T, batch, axis, dtype, flag_dtype, gamma) -> tuple[cases.Inputs, dict]:
    """`gamma`: a value, or "row" / "time" for γ and λ one a row / one a time step (arrays)."""
    spec = cases.OPS[op]
    lam = 0.9 if spec.has_lambda else None
    shared = gamma if isinstance(gamma, str) else None
    gamma = 0.9 if shared else gamma
    inp = cases.build(op, mode, T, batch, axis, dtype=dtype, gamma=gamma if spec.has_gamma else None, lambda_=lam)
    if shared:
        shape = inp.param_shape(shared)
        inp.args["gamma"] = np.full(shape, 0.97, np.float32)
        if spec.has_lambda:
            inp.args["lambda_"] = np.full(shape, 0.9, np.float32)
    if "log_rhos" in inp.args:
        inp.args["log_rhos"] = clear_of_clip_kinks(inp.args["log_rhos"], inp.args)
    args = dict(inp.args)
    for k in cases.FLAGS:
        if args.get(k) is not None:
            args[k] = np.asarray(args[k]).astype(flag_dtype)
    return inp, args


# The clips of V-trace and Retrace, with their defaults: min(clip, e^x) has a kink at x = log clip.
CLIPS = {"rho_clip": 1.0, "c_clip": 1.0, "pg_rho_clip": 1.0}
KINK_MARGIN = 1e-4


def clear_of_clip_kinks(log_rhos, args: dict):
    """log_rhos with every value within KINK_MARGIN of a clip's kink (log clip, for each clip the
    call has: `args`' value, its default where absent, none where None) moved 10 · KINK_MARGIN
    away from it, in the dtype given. At a kink min's derivative jumps (jnp.minimum's rule gives
    ½ at a tie), and a float32 exp on the GPU and XLA's on the CPU round e^x differently within an
    ulp of it: tests/gpu_runs/README.md, 2026-12-03, log ρ = -8.0e-8 in
    vtrace-nv-131072x7-ax0-float32, where the kernel's ρ is 1.0 and the reference's 0.99999994,
    d/dlog_rhos 1.24 apart. The sanitizer's comparison would flag the convention, not the kernel."""
    x = np.asarray(log_rhos)
    moved = x.astype(np.float64)
    for name, default in CLIPS.items():
        clip = args.get(name, default)
        if clip is None:
            continue
        kink = float(np.log(clip))
        near = np.abs(moved - kink) < KINK_MARGIN
        moved = np.where(near, kink + np.where(moved < kink, -10.0, 10.0) * KINK_MARGIN, moved)
    return moved.astype(x.dtype)


def functions(inp: cases.Inputs, args: dict, implementation: str):
    """(arrays, forward, grad): the call and the gradient of the sum of its outputs (those in
    `inp.used`, where given).

    `forward(arrays)` returns the outputs and `grad(arrays)` the gradients with respect to the
    floating arrays (`inp.float_names()`, or `inp.wrt` where given), as functions of the array arguments `arrays`; the
    other arguments (floats, None, `reverse`) stay fixed.
    """
    arrays = {k: v for k, v in args.items() if isinstance(v, np.ndarray)}
    names = inp.float_names() if inp.wrt is None else list(inp.wrt)

    def forward(arrays):
        return cases.call(inp, implementation, {**args, **arrays})

    def loss(floats, arrays):
        outs = forward({**arrays, **floats})
        used = range(len(outs)) if inp.used is None else inp.used
        return sum(jnp.sum(outs[i].astype(jnp.float32)) for i in used)

    def grad(arrays):
        return jax.grad(loss)({k: arrays[k] for k in names}, arrays)

    return arrays, forward, grad


def trace(inp: cases.Inputs, args: dict) -> None:
    """Traces one call's forward and gradient on "triton" (under `recording`: nothing runs)."""
    arrays, forward, grad = functions(inp, args, "triton")
    jax.eval_shape(forward, arrays)
    jax.eval_shape(grad, arrays)


def record() -> list[Variant]:
    found: dict[tuple, Variant] = {}

    def on_launch(kernel, grid, args, out_shapes, num_warps, constexprs):
        v = variant(kernel, args, out_shapes, num_warps, constexprs)
        k = key(v)
        if k is not None:
            found.setdefault(k, v)

    with recording(on_launch):
        for inp, args in calls():
            trace(inp, args)
    return list(found.values())
