"""Cross-lowers every public op's Triton path for CUDA on a CPU-only machine (no GPU needed).

For each op × layout × shape × transform (forward, grad, vmap, vmap of grad) it runs
`jax.jit(f).trace(*args).lower(lowering_platforms=("cuda",))` with implementation="triton" and
checks that the lowered module holds the expected number of Triton kernel custom calls, that
each payload carries sm_90 PTX of the expected kernels (one per launcher; PHASE 1, carry_kernel,
PHASE 2 for rows split in three launches), and that every kernel parameter got the operand
the library meant for it (inputs and scalars in order, then the outputs), as jax-triton (0.3.x
or 0.4.x) typed it for the compiler.

Needs: a jaxlib with the CUDA plugin wheel installed (jax-cuda13-plugin, without
jax-cuda13-pjrt), jax-triton, triton. Run from the repository root:

    JAX_PLATFORMS=cpu python tests/gpu_runs/cross_lower.py [--quick] [--out FILE]

The Triton implementation refuses to run without a GPU backend; this script (only) replaces
`dispatch.triton_unavailable_reason` so that lowering for CUDA can proceed, and sets
`launch.COMPUTE_CAPABILITY = 90` so jax-triton compiles for sm_90 without asking a device.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import inspect
import os
import platform
import re
import sys
import time
import traceback
import warnings
import zlib

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # silences triton 3.9's default-change warning
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # tests/

import jax
import jax.numpy as jnp
import numpy as np

from rlscan_jax._src import dispatch
from rlscan_jax._src.triton import launch

# ----------------------------------------------------------------------------- setup

launch.COMPUTE_CAPABILITY = 90
dispatch.triton_unavailable_reason.cache_clear()
dispatch.triton_unavailable_reason = lambda: None  # lowering only: no kernel ever runs here

IMPORT_ERROR = None
try:
    import jax_triton  # noqa: F401
except Exception as e:  # 0.3.1 on a CPU-only jaxlib raises ImportError
    IMPORT_ERROR = "".join(traceback.format_exception(e))

import cases  # noqa: E402  (tests/cases.py)


def version(name: str) -> str:
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return "-"


VERSIONS = {
    "python": platform.python_version(),
    "jax": version("jax"),
    "jaxlib": version("jaxlib"),
    "jax-cuda13-plugin": version("jax-cuda13-plugin"),
    "jax-cuda13-pjrt": version("jax-cuda13-pjrt"),
    "jax-triton": version("jax-triton"),
    "triton": version("triton"),
    "numpy": version("numpy"),
}

# ----------------------------------------------------------------------------- binding spy

INTENDED: list[tuple[str, tuple]] = []  # (kernel name, ((param, type), ...)) per launch.call
ACTUAL: list[tuple[str, tuple]] = []  # what jax-triton bound, per lowered kernel
_TYPES = {
    "bfloat16": "bf16",
    "float64": "fp64",
    "float32": "fp32",
    "float16": "fp16",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint8": "u8",
    "bool": "i1",
}


def _type_of(v) -> str:
    if isinstance(v, bool):
        return "B"
    if isinstance(v, int):
        return "i32" if -(2**31) <= v < 2**31 else "i64"
    return "*" + _TYPES[np.dtype(v.dtype).name]


def _runtime_params(kernel) -> list[str]:
    fn = kernel.fn if hasattr(kernel, "fn") else kernel
    return (
        [p.name for p in kernel.params if not p.is_constexpr]
        if hasattr(kernel, "params")
        else list(inspect.signature(fn).parameters)
    )


_real_call = launch.call


def _spy_call(kernel, *, grid, args, out_shapes, num_warps=4, zeroed=(), **constexprs):
    names = _runtime_params(kernel)
    values = [*args, *out_shapes]
    if len(names) == len(values):
        INTENDED.append((kernel.fn.__name__, tuple(zip(names, map(_type_of, values)))))
    else:
        INTENDED.append((kernel.fn.__name__, ("param count mismatch", len(names), len(values))))
    return _real_call(
        kernel, grid=grid, args=args, out_shapes=out_shapes, num_warps=num_warps, zeroed=zeroed, **constexprs
    )


launch.call = _spy_call

if IMPORT_ERROR is None:
    from jax_triton import triton_lib as _tl

    if hasattr(_tl, "KernelSpecialization"):  # 0.4.x
        _orig_get = _tl.TritonFunction.get_or_create_kernel

        def _spy_get(self, make_target_func, platform_, args, arg_dtypes, **kw):
            ACTUAL.append(
                (
                    self.fn.fn.__name__ if hasattr(self.fn, "fn") else self.fn.__name__,
                    tuple(zip(self.non_constexpr_param_names, arg_dtypes)),
                )
            )
            return _orig_get(self, make_target_func, platform_, args, arg_dtypes, **kw)

        _tl.TritonFunction.get_or_create_kernel = _spy_get
    elif hasattr(_tl, "get_or_create_triton_kernel"):  # 0.3.x
        _orig_create = _tl.get_or_create_triton_kernel

        def _spy_create(backend_init_func, platform_, fn, arg_dtypes, scalar_args, **kw):
            ACTUAL.append((fn.fn.__name__, tuple(zip(fn.arg_names, arg_dtypes))))
            return _orig_create(backend_init_func, platform_, fn, arg_dtypes, scalar_args, **kw)

        _tl.get_or_create_triton_kernel = _spy_create

# ----------------------------------------------------------------------------- lowered text


def _unescape(s: str) -> bytes:
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and s[i + 1] in '\\"nt':
            out += {"\\": b"\\", '"': b'"', "n": b"\n", "t": b"\t"}[s[i + 1]]
            i += 2
        elif c == "\\":
            out.append(int(s[i + 1 : i + 3], 16))
            i += 3
        else:
            out += c.encode()
            i += 1
    return bytes(out)


TARGETS: set[str] = set()  # custom-call target names seen
ARCHS: set[str] = set()  # PTX .target lines seen
CALL_RE = re.compile(r"stablehlo\.custom_call @(triton_kernel_call\w*)\(")
# 0.4.x: mhlo.backend_config = {opaque = "..."}; 0.3.x: backend_config = "..." (non-empty)
OPAQUE_RE = re.compile(r'(?:opaque|(?<!\.)backend_config) = "((?:[^"\\]|\\.)+)"')


def kernels_in(text: str) -> tuple[list[str], list[str], list[str]]:
    """Custom-call targets, the PTX entry names of their payloads, and their .target lines."""
    targets = CALL_RE.findall(text)
    entries, arch = [], []
    for m in OPAQUE_RE.finditer(text):
        raw = _unescape(m.group(1))
        try:
            raw = zlib.decompress(raw)
        except zlib.error:
            pass
        e = re.search(rb"\.entry\s+(\w+)", raw)
        a = re.search(rb"\.target\s+(\w+)", raw)
        entries.append(e.group(1).decode() if e else "?")
        arch.append(a.group(1).decode() if a else "?")
    return targets, entries, arch


# ----------------------------------------------------------------------------- cases

# (label, op, mode): every public function; episodic_cumsum and linear_scan in both directions.
VARIANTS = [
    ("gae", "gae", "nv"),
    ("vtrace", "vtrace", "nv"),
    ("retrace", "retrace", "nv"),
    ("lambda_returns", "lambda_returns", "nv"),
    ("discounted_returns", "discounted_returns", "nv"),
    ("eligibility_traces", "eligibility_traces", "done"),
    ("episodic_cumsum/fwd", "episodic_cumsum", "fwd"),
    ("episodic_cumsum/rev", "episodic_cumsum", "rev-init"),
    ("linear_scan/fwd", "linear_scan", "fwd-init"),
    ("linear_scan/rev", "linear_scan", "rev"),
]
# (label, T, N): T=32 runs in one pass in both layouts; T=8192, N=2 splits rows in one launch
# (the look-back) in both; T=16384, N=32 splits time-major rows in three launches (PHASE 1,
# carry, PHASE 2: too many chunks for the look-back) and batch-major ones with the look-back.
SHAPES = [("T32xN64", 32, 64), ("T8192xN2", 8192, 2), ("T16384xN32", 16384, 32)]
LAYOUTS = [("time-major", 0), ("batch-major", -1)]
# grad is value_and_grad: with the loss returned the forward kernel must stay (a plain grad may
# drop it when no cotangent needs the forward state h, e.g. for discounted_returns).
TRANSFORMS = ["fwd", "grad", "vmap", "vmap(grad)"]
VMAP = 3


UNBATCHED_ADJOINT = {"gae", "lambda_returns", "discounted_returns", "eligibility_traces", "episodic_cumsum"}


def launches(shape: tuple[int, ...], axis: int, op: str) -> int:
    """Kernels the forward launcher issues for a per-step array of `shape`, by the library's own
    plan: one for a single pass or the look-back, two for a split whose PHASE 2 folds the
    composites itself (launch.fold_rounds), three with carry_kernel between the phases."""
    from rlscan_jax._src.triton.launchers import vtrace

    kwargs = vtrace.PLAN if op == "vtrace" else {}
    p = launch.plan(launch.geometry(shape, axis % len(shape)), op=op, **kwargs)
    if p.nseg == 1 or p.lookback:
        return 1
    return 2 if launch.fold_rounds(p) else 3


def make(op: str, mode: str, T: int, N: int, axis: int, transform: str):
    """(function, args, expected number of Triton kernel calls in its lowering)."""
    inp = cases.build(op, mode, T, (N,), axis, dtype=np.float32, gamma=0.97, lambda_=0.9)
    floats = inp.float_names()
    static = {k: v for k, v in inp.args.items() if k not in floats}
    arrays = [jnp.asarray(inp.args[k]) for k in floats]
    main = next(k for k in ("rewards", "a", "inputs") if k in inp.args)
    shape = np.shape(inp.args[main])

    def fwd(*xs):
        args = {**static, **dict(zip(floats, xs))}
        return cases.call(inp, "triton", args)

    def loss(*xs):
        return sum(jnp.sum(o) for o in fwd(*xs))

    k = launches(shape, axis, op)
    kv = launches((VMAP, *shape), (axis % len(shape)) + 1, op)
    if transform == "fwd":
        return fwd, arrays, k
    if transform == "grad":
        return jax.value_and_grad(loss, argnums=tuple(range(len(arrays)))), arrays, 2 * k
    batched = [jnp.stack([a * (1.0 + 0.1 * i) for i in range(VMAP)]) for a in arrays]
    if transform == "vmap":
        return jax.vmap(fwd), batched, kv
    g = jax.value_and_grad(loss, argnums=tuple(range(len(arrays))))
    # A backward pass that reads no floating input (only the cotangent, the flags, γ and λ) is not
    # batched: the loss's cotangent is the same for every vmapped problem, so it runs once, unbatched.
    return jax.vmap(g), batched, kv + (k if op in UNBATCHED_ADJOINT else kv)


def check(op, mode, T, N, axis, transform):
    fn, args, expected = make(op, mode, T, N, axis, transform)
    n_act = len(ACTUAL)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        lowered = jax.jit(fn).trace(*args).lower(lowering_platforms=("cuda",))
        text = lowered.as_text()
    targets, entries, arch = kernels_in(text)
    problems = []
    if len(targets) != expected:
        problems.append(f"{len(targets)} kernel calls, expected {expected}")
    if len(entries) != len(targets) or "?" in entries:
        problems.append(f"{len(entries)} readable kernel payloads for {len(targets)} calls: {entries}")
    if any(a != "sm_90" and a != "sm_90a" for a in arch):
        problems.append(f"targets {sorted(set(arch))}")
    # Split launches come in threes: <op kernel> PHASE 1, carry_kernel, <op kernel> PHASE 2.
    for i, e in enumerate(entries):
        if e == "carry_kernel" and (i == 0 or i + 1 >= len(entries) or entries[i - 1] != entries[i + 1]):
            problems.append(f"carry_kernel not between two launches of one kernel: {entries}")
    binding = "n/a"
    if len(ACTUAL) > n_act:
        intended = set(INTENDED)  # all so far: JAX reuses traced launchers across cases
        bad = [a for a in ACTUAL[n_act:] if a not in intended]
        binding = "ok" if not bad else "MISMATCH"
        if len(ACTUAL) - n_act != len(targets):
            binding = "MISMATCH"
            problems.append(f"{len(ACTUAL) - n_act} kernels bound for {len(targets)} calls")
        for name, sig in bad[:2]:
            near = [s for n, s in intended if n == name]
            diff = [(x, y) for x, y in zip(sig, near[0])] if near else []
            diff = [(x, y) for x, y in diff if x != y]
            problems.append(f"binding of {name}: got != intended at {diff or sig}")
    dep = sorted({str(x.message).splitlines()[0] for x in w if issubclass(x.category, DeprecationWarning)})
    TARGETS.update(targets)
    ARCHS.update(arch)
    return len(targets), expected, entries, binding, problems, dep


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="one variant per op, first shape only")
    ap.add_argument("--out", default=None, help="also write the report to this file")
    a = ap.parse_args()

    lines: list[str] = []

    def emit(s=""):
        print(s, flush=True)
        lines.append(s)

    emit("rlscan_jax Triton path cross-lowered for CUDA (sm_90) on a CPU-only machine")
    emit(time.strftime("date: %Y-%m-%d %H:%M:%S %Z"))
    emit("versions: " + ", ".join(f"{k} {v}" for k, v in VERSIONS.items()))
    emit(f"jax backend: {jax.default_backend()}; devices: {jax.devices()}")
    if IMPORT_ERROR is not None:
        emit("import jax_triton FAILED; no case can lower:")
        emit(IMPORT_ERROR.rstrip())
    emit()

    shapes = SHAPES[:1] if a.quick else SHAPES
    rows, errors, deps = [], [], set()
    t0 = time.time()
    for label, op, mode in VARIANTS:
        for lname, axis in LAYOUTS:
            for sname, T, N in shapes:
                for tr in TRANSFORMS:
                    case = f"{label} {lname} {sname} {tr}"
                    try:
                        n, exp, entries, binding, problems, dep = check(op, mode, T, N, axis, tr)
                        deps.update(dep)
                        status = "OK" if not problems else "FAIL"
                        note = "; ".join(problems)
                    except Exception as e:
                        n, exp, entries, binding, status = "-", "-", [], "-", "FAIL"
                        note = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                        errors.append((case, "".join(traceback.format_exception(e))))
                    seq = ",".join(e.removesuffix("_kernel") for e in entries)
                    rows.append((case, n, exp, binding, status, note, seq))
                    print(f"  {case:<52} {n!s:>3}/{exp!s:<3} {binding:<5} {status} {note}", flush=True)
    emit(f"{'case':<52} {'#calls':>6} {'expect':>6}  {'binding':<8} {'result':<6} kernels (PTX entries, in order)")
    for case, n, exp, binding, status, note, seq in rows:
        emit(f"{case:<52} {n!s:>6} {exp!s:>6}  {binding:<8} {status:<6} {seq}{('  ' + note) if note else ''}")
    ok = sum(r[4] == "OK" for r in rows)
    emit()
    emit(f"summary: {ok} OK, {len(rows) - ok} FAIL of {len(rows)} cases ({time.time() - t0:.0f} s)")
    emit("custom-call targets seen: " + (", ".join(sorted(TARGETS)) or "none"))
    emit("PTX targets seen: " + (", ".join(sorted(ARCHS)) or "none"))
    if deps:
        emit("deprecation warnings seen: " + " | ".join(deps))
    for case, tb in errors[:3]:
        emit()
        emit(f"--- traceback of {case}")
        emit(tb.rstrip())
    if len(errors) > 3:
        distinct = sorted({tb.strip().splitlines()[-1] for _, tb in errors})
        emit()
        emit(f"{len(errors)} cases raised; distinct last lines: " + " | ".join(distinct))
    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
    return 0 if ok == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
