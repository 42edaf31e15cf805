"""Executes every Triton kernel variant the launchers produce, for compute-sanitizer (issue #6, item 5).

Runs the calls that `triton_variants.record()` traces (its `calls()`: every op × mode, forward
and gradient, one-pass and split rows, time-major / batch-major / general layouts, float32 with
bool flags and bfloat16 with int8 flags) through the real `implementation="triton"` path, jitted
and blocked on. `launch.call` is wrapped, not replaced: each launch is keyed the way `record()`
keys it (kernel and constexpr flags, block sizes aside), and a key counts as executed once its
case has run to completion. Every output and gradient is compared with the "sequential"
reference, which runs on the CPU so that the sanitizer watches the kernels under test alone.

The last lines give the variants executed, the variants `record()` finds, and every recorded
variant that was not executed (none, for a complete sweep). The lines that start with `SWEEP-`
are for `sanitize_summary.py`, which also takes the union over shards: `SWEEP-CALLS` (the calls
this process will run, by index into `calls()`), `SWEEP-START` before each call and `SWEEP-CALL`
after it (so that a crash of the sanitizer names the call in flight), `SWEEP-RESULT`, `SWEEP-DONE`.

    python tests/gpu_runs/sanitize_driver.py [--quick] [--shard I/N] [--ptx-cache DIR] [--ref-cache DIR]
    python tests/gpu_runs/sanitize_driver.py --only 17,40-43   # these calls (indices or names) alone
    python tests/gpu_runs/sanitize_driver.py --trace-only  # the bookkeeping alone: trace, run nothing
    python tests/gpu_runs/sanitize_driver.py --canary      # a planted out-of-bounds read, for memcheck

Exit status 1 on a mismatch, an error or (whole unsharded sweep) a missing variant; --exit-zero
keeps it 0 (compute-sanitizer counts a non-zero exit as an error of its own). On a CPU machine,
TRITON_INTERPRET=1 in the environment runs the kernels through Triton's interpreter (use --quick).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import inspect
import json
import os
import platform
import re
import sys
import time
import zlib
from importlib import metadata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: cases, oracle, triton_variants

import cases
import jax
import jax.numpy as jnp
import numpy as np
import triton
import triton.language as tl
import triton_variants

from rlscan_jax._src import dispatch
from rlscan_jax._src.triton import launch

# --quick: every op in its first mode, float32 one pass (time-major) and bfloat16 in the general
# layout, plus split rows (batch-major, float32) for the first op.
QUICK_LAYOUTS = {((16, 64), 0, "float32"), ((2, 8, 3), 1, "bfloat16")}
QUICK_SPLIT = ((2, 4096), -1, "float32")


def key_name(key: tuple) -> str:
    name, flags, half, capped = key
    text = f"{name}[{','.join(f'{k}={v}' for k, v in flags)}]"
    text += "[bf16]" if half else ""
    return text + (f"[BT={capped[0]},warps={capped[1]}]" if capped else "")


def case_id(inp: cases.Inputs, args: dict) -> str:
    dtype = args[inp.float_names()[0]].dtype
    shape = "x".join(map(str, inp.step_shape))
    return f"{inp.op}-{inp.mode}-{shape}-ax{inp.axis}-{jnp.dtype(dtype).name}"


def select(calls: list, quick: bool) -> list[int]:
    """The indices into `calls` that a sweep runs: all of them, or (quick) a few per op."""
    if not quick:
        return list(range(len(calls)))
    first = {op: spec.modes[0] for op, spec in cases.OPS.items()}
    keep = []
    for i, (inp, args) in enumerate(calls):
        layout = (inp.step_shape, inp.axis, jnp.dtype(args[inp.float_names()[0]].dtype).name)
        if inp.mode == first[inp.op] and (
            layout in QUICK_LAYOUTS or (inp.op == cases.OP_NAMES[0] and layout == QUICK_SPLIT)
        ):
            keep.append(i)
    return keep


def parse_only(spec: str, names: dict[str, int], selection: list[int]) -> list[int]:
    """The calls `--only` names: indices (`17`), ranges (`40-43`) and call ids, comma-separated.

    Raises:
      ValueError: an item that names no call of the selection (a --quick run has fewer).
    """
    chosen = set()
    for item in filter(None, spec.split(",")):
        if item in names:
            chosen.add(names[item])
        elif m := re.fullmatch(r"(\d+)(?:-(\d+))?", item):
            chosen.update(range(int(m[1]), int(m[2] or m[1]) + 1))
        else:
            raise ValueError(f"--only {spec!r}: {item!r} is neither an index, a range nor a call id")
    outside = sorted(chosen - set(selection))
    if outside:
        raise ValueError(f"--only {spec!r}: calls {outside} are not in this selection of {len(selection)} calls")
    return sorted(chosen)


class Recorder:
    """Wraps `launch.call`: the variant key of every launch traced since the last `take()`."""

    def __init__(self):
        self.pending: dict[tuple, object] = {}
        self.launches = 0

    @contextlib.contextmanager
    def installed(self):
        real = launch.call
        # launch.call's own keywords (grid, args, ..., zeroed); the rest are the kernel's constexprs.
        params = inspect.signature(real).parameters.values()
        options = {p.name for p in params if p.kind is not p.VAR_KEYWORD}

        def call(kernel, **kwargs):
            constexprs = {k: v for k, v in kwargs.items() if k not in options}
            v = triton_variants.variant(
                kernel, kwargs["args"], kwargs["out_shapes"], kwargs.get("num_warps", 4), constexprs
            )
            k = triton_variants.key(v)
            self.launches += 1
            if k is not None:
                self.pending.setdefault(k, v)
            return real(kernel, **kwargs)

        launch.call = call
        try:
            yield self
        finally:
            launch.call = real

    def take(self) -> tuple[dict, int]:
        out, n = self.pending, self.launches
        self.pending, self.launches = {}, 0
        return out, n


def cache_ptx(directory: str) -> bool:
    """Keeps jax-triton's Triton-to-PTX compilations on disk, keyed by the TTIR and the options.

    The sweep's processes (shards, then each sanitizer tool) then compile every kernel once
    between them. Only jax-triton 0.3.x has the hook; elsewhere nothing changes.
    """
    try:
        from jax_triton import triton_lib
    except (ImportError, ValueError):  # no jax-triton, or a jaxlib without its GPU part
        return False
    compile_ttir = getattr(triton_lib, "compile_ttir_inplace", None)
    result = getattr(triton_lib, "CompilationResult", None)
    if compile_ttir is None or result is None:
        return False
    os.makedirs(directory, exist_ok=True)

    def cached(ttir, backend, options, compute_capability, platform_):
        path = None
        try:  # a cache that fails costs only the compilation
            text = f"{triton.__version__}\n{platform_}\n{compute_capability}\n{options!r}\n{ttir}"
            path = os.path.join(directory, hashlib.sha256(text.encode()).hexdigest() + ".json")
            if os.path.exists(path):
                with open(path) as f:
                    return result(**json.load(f), ttgir=None, llir=None)
        except Exception:
            pass
        r = compile_ttir(ttir, backend, options, compute_capability, platform_)  # changes ttir in place
        if path and platform_ == "cuda":
            try:
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "w") as f:
                    json.dump({"binary": r.binary, "name": r.name, "shared_mem_bytes": r.shared_mem_bytes}, f)
                os.replace(tmp, path)
            except Exception:
                pass
        return r

    triton_lib.compile_ttir_inplace = cached
    return True


def reference(inp: cases.Inputs, args: dict, cache: str | None) -> tuple[list, dict]:
    """The "sequential" implementation's outputs and gradients, on the CPU (cached on disk if asked)."""
    arrays, forward, grad = triton_variants.functions(inp, args, "sequential")
    path = None
    if cache:
        crc = 0
        for k in sorted(arrays):
            crc = zlib.crc32(np.ascontiguousarray(arrays[k]).view(np.uint8).tobytes(), crc)
        # A call that differentiates some inputs or uses one output (Inputs.wrt, .used) shares its
        # case id and arrays with the call that differentiates all: the key names both.
        subset = (
            "" if inp.wrt is None and inp.used is None else f"-{zlib.crc32(repr((inp.wrt, inp.used)).encode()):08x}"
        )
        path = os.path.join(cache, f"{case_id(inp, args)}-{crc:08x}{subset}.npz")
        try:
            with np.load(path) as z:
                outs = [z[f"out{i}"] for i in range(int(z["n"]))]
                return outs, {k[len("grad_") :]: z[k] for k in z.files if k.startswith("grad_")}
        except (OSError, KeyError, ValueError):
            pass
    with jax.default_device(jax.devices("cpu")[0]):
        outs, grads = jax.jit(lambda a: (forward(a), grad(a)))(arrays)
    # float32 holds every bfloat16 value exactly, and np.save keeps no bfloat16.
    outs = [np.asarray(o, np.float32) for o in outs]
    grads = {k: np.asarray(g, np.float32) for k, g in grads.items()}
    if path:
        os.makedirs(cache, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp.npz"
        np.savez(
            tmp, n=len(outs), **{f"out{i}": o for i, o in enumerate(outs)}, **{f"grad_{k}": g for k, g in grads.items()}
        )
        os.replace(tmp, path)
    return outs, grads


def compare(name: str, got, want) -> str | None:
    """None if `got` is finite and within the tolerance of its dtype of `want`, else what is wrong."""
    dtype = np.asarray(got).dtype
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if got.shape != want.shape:
        return f"{name}: shape {got.shape} != reference {want.shape}"
    bad = int(np.sum(~np.isfinite(got)))
    if bad:
        return f"{name}: {bad} non-finite values"
    tol = cases.tolerance(dtype)
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    err = np.abs(got - want)
    if np.any(err > tol["atol"] * scale + tol["rtol"] * np.abs(want)):
        return f"{name}: max |error| {err.max():.3g} (atol {tol['atol'] * scale:.3g}, rtol {tol['rtol']:g}, {dtype})"
    return None


def run_one(inp: cases.Inputs, args: dict, opts) -> list[str]:
    """One call, forward and gradient, on the Triton kernels: what differs from the reference."""
    arrays, forward, grad = triton_variants.functions(inp, args, "triton")

    def both(a):
        return forward(a), grad(a)

    if opts.trace_only:
        jax.eval_shape(both, arrays)
        return []
    outs, grads = jax.block_until_ready(jax.jit(both)(arrays))
    want_outs, want_grads = reference(inp, args, opts.ref_cache)
    problems = [compare(f"out[{i}]", o, w) for i, (o, w) in enumerate(zip(outs, want_outs, strict=True))]
    problems += [compare(f"d/d{k}", grads[k], want_grads[k]) for k in want_grads]
    return [p for p in problems if p]


def gpu_alive() -> bool:
    try:
        jax.block_until_ready(jnp.ones(4) + 1)
        return True
    except Exception:  # any failure here means the device is gone
        return False


def environment() -> dict:
    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    names = ("jax", "jaxlib", "jax-cuda13-plugin", "jax-cuda12-plugin", "triton", "jax-triton", "numpy")
    return {
        "device": str(jax.devices()[0].device_kind),
        "backend": jax.default_backend(),
        "interpret": dispatch.interpret_mode(),
        "python": platform.python_version(),
        "versions": {n: version(n) for n in names if version(n) is not None},
    }


def sweep(opts) -> int:
    start = time.perf_counter()
    print("SWEEP-ENV " + json.dumps(environment()), flush=True)
    if opts.ptx_cache:
        print(f"PTX cache {opts.ptx_cache}: {'on' if cache_ptx(opts.ptx_cache) else 'not available'}", flush=True)
    recorded = {triton_variants.key(v): v for v in triton_variants.record()}
    calls = triton_variants.calls()
    ids = [case_id(inp, args) for inp, args in calls]
    selection = select(calls, opts.quick)
    if opts.only:
        try:
            todo = parse_only(opts.only, {cid: i for i, cid in enumerate(ids)}, selection)
        except ValueError as e:
            print(e)
            return 2
        what = f"--only {opts.only}"
    else:
        todo, what = selection, "all"
    i, n = opts.shard
    if n > 1:  # the I-th slice of the calls (of --only's calls with --only)
        todo = todo[i * len(todo) // n : (i + 1) * len(todo) // n]
        what = f"shard {i}/{n} of {what}"
    shard = f"{opts.shard[0]}/{opts.shard[1]}"
    print(f"record(): {len(recorded)} variants; this run: {len(todo)} calls ({what})", flush=True)
    print("SWEEP-CALLS " + json.dumps([[i, ids[i]] for i in todo]), flush=True)

    recorder = Recorder()
    executed: dict[tuple, object] = {}
    ok = mismatched = failed = 0
    aborted = None
    with recorder.installed():
        for n, index in enumerate(todo, 1):
            inp, args = calls[index]
            cid = ids[index]
            head = f"[{n}/{len(todo)}] #{index} {cid}:"
            print(f"SWEEP-START {index} {cid}", flush=True)
            t0 = time.perf_counter()
            try:
                problems = run_one(inp, args, opts)
            except Exception as e:  # report, then go on unless the device is gone
                failed += 1
                recorder.take()
                print(f"{head} ERROR {type(e).__name__}: {str(e).splitlines()[0][:300]}", flush=True)
                print(
                    "SWEEP-CALL " + json.dumps({"index": index, "id": cid, "status": "error", "variants": []}),
                    flush=True,
                )
                if not gpu_alive():
                    aborted = cid
                    print(f"SWEEP-ABORTED at {cid}: the device no longer runs anything", flush=True)
                    break
                continue
            keys, launches = recorder.take()
            new = [k for k in keys if k not in executed]
            executed.update(keys)
            detail = f"{launches} launches, {len(new)} new variants, {time.perf_counter() - t0:.2f} s"
            if problems:
                mismatched += 1
                print(f"{head} MISMATCH {'; '.join(problems)} ({detail})", flush=True)
            else:
                ok += 1
                print(f"{head} {'traced' if opts.trace_only else 'ok'} ({detail})", flush=True)
            status = "mismatch" if problems else "ok"
            record = {"index": index, "id": cid, "status": status, "variants": sorted(map(key_name, keys))}
            if problems:
                record["problems"] = problems
            print("SWEEP-CALL " + json.dumps(record), flush=True)

    missing = [recorded[k].name for k in recorded if k not in executed]
    extra = [key_name(k) for k in executed if k not in recorded]
    whole = opts.shard == (0, 1) and not opts.quick and not opts.only
    done = "traced" if opts.trace_only else "executed"
    print(
        "SWEEP-RESULT "
        + json.dumps(
            {
                "shard": shard,
                "only": opts.only,
                "quick": opts.quick,
                "trace_only": opts.trace_only,
                "calls": len(todo),
                "indices": todo,
                "ok": ok,
                "mismatched": mismatched,
                "failed": failed,
                "aborted": aborted,
                "executed": sorted(key_name(k) for k in executed),
                "recorded": sorted(key_name(k) for k in recorded),
                "wall_s": round(time.perf_counter() - start, 1),
            }
        ),
        flush=True,
    )
    print(f"calls: {ok} ok, {mismatched} mismatched, {failed} failed, of {len(todo)}")
    print(f"variants {done}: {len(executed)}; recorded by record(): {len(recorded)}")
    if extra:
        print(f"{done} but not recorded by record() ({len(extra)}): " + ", ".join(extra))
    if whole:
        if missing:
            print(f"INCOMPLETE: {len(missing)} recorded variants were NOT {done}:")
            print("\n".join(f"  {m}" for m in missing))
        else:
            print(f"COMPLETE: all {len(recorded)} recorded variants were {done}")
    else:
        print(f"not {done} in this run ({'--quick, ' if opts.quick else ''}{what}): {len(missing)}")
    print(f"SWEEP-DONE {time.perf_counter() - start:.1f} s", flush=True)
    bad = mismatched or failed or aborted or (whole and missing)
    return 1 if bad and not opts.exit_zero else 0


@triton.jit
def canary_kernel(p_x, p_out, FAR: tl.constexpr):
    """Reads x[FAR], far past the end of x: an out-of-bounds read that memcheck must report."""
    tl.store(p_out, tl.load(p_x + FAR))


def canary() -> int:
    if dispatch.interpret_mode():
        print("the canary reads out of bounds: it runs on a GPU, under memcheck, only")
        return 2
    print("SWEEP-ENV " + json.dumps(environment()), flush=True)
    x = jnp.zeros((16,), jnp.float32)
    try:
        (y,) = launch.call(
            canary_kernel, grid=(1,), args=[x], out_shapes=[launch.out((1,), jnp.float32)], num_warps=1, FAR=1 << 28
        )
        jax.block_until_ready(y)
        print("canary: the planted out-of-bounds read returned without an error", flush=True)
    except Exception as e:  # the expected outcome under memcheck
        print(f"canary: the planted out-of-bounds read failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    print("SWEEP-DONE canary", flush=True)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="a few calls per op (a smoke run)")
    p.add_argument("--shard", default="0/1", help="I/N: the I-th of N slices of the calls (of --only's)")
    p.add_argument("--only", help="these calls alone: indices into calls(), ranges I-J or call ids, comma-separated")
    p.add_argument("--ptx-cache", help="keep jax-triton's PTX here, shared between processes")
    p.add_argument("--ref-cache", help="keep the reference outputs here, shared between processes")
    p.add_argument("--trace-only", action="store_true", help="trace the calls without running them (bookkeeping)")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 when the sweep completes, whatever it found")
    p.add_argument("--canary", action="store_true", help="launch one kernel that reads out of bounds, then stop")
    opts = p.parse_args(argv)
    i, n = (int(x) for x in opts.shard.split("/"))
    if not 0 <= i < n:
        p.error(f"--shard {opts.shard}: need 0 <= I < N")
    opts.shard = (i, n)
    if opts.canary:
        return canary()
    reason = dispatch.triton_unavailable_reason()
    if reason is not None:
        print(f'implementation="triton" cannot run here: {reason}')
        return 2
    return sweep(opts)


if __name__ == "__main__":
    sys.exit(main())
