"""Registers, spills, shared memory and theoretical occupancy of the kernels each benchmark case
launches, compiled for sm_90 on this machine (no GPU needed).

    python -m benchmarks.kernel_resources --out benchmarks/results/kernel_resources_sm90.json

For each case of the benchmark grid (op × N×T × layout, float32, fwd and fwd+bwd) the public
function is compiled (for this machine's backend) with `launch.call` replaced by a recorder,
which keeps every launch that the compiled program keeps: the kernel, its grid, warps and
constexprs (block [BT, BB], PHASE). Each distinct launch is compiled
for sm_90 with the installed triton; `ptxas -v` (triton's own ptxas, as triton picks it) reports
registers and spill bytes of the PTX, and triton's metadata the shared memory.

Theoretical occupancy on an H100 / H200 SM (compute capability 9.0: 65536 registers allocated
per warp in units of 256, at most 64 warps, 32 blocks and 228 KB of shared memory, 1 KB of it
reserved per block): resident blocks = min(register limit, shared-memory limit, warp limit, 32).
`waves` is the launch's programs over (resident blocks × 132 SMs); below 1 the GPU is not full.
A memory-bound kernel needs enough resident warps (or enough loads in flight per warp) to cover
the memory latency; these columns say how many it can have at most.

Limits: the registers are those of triton's ptxas on triton's PTX; on the GPU jaxlib assembles
the same PTX with the CUDA plugin's own ptxas, whose count can differ a little. The pointers are
declared 16-byte aligned, as jax-triton declares them (`aligned_pointers`); the integer arguments
(N, T, ...) are not declared multiples of 16 here, where jax-triton declares those that are, so a
launch whose code depends on that (a time-major block's row stride) can compile a little
differently on the GPU. Nothing here is a measured time.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import functools
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence

import jax

from benchmarks import shapes

SCOPE = "rlscan_launch_"
SM_COUNT = 132  # H100 SXM / H200
REGS_PER_SM = 65536
REG_UNIT = 256  # registers are allocated per warp in units of 256
MAX_WARPS = 64
MAX_BLOCKS = 32
SMEM_PER_SM = 228 * 1024
SMEM_RESERVED = 1024  # per block


@dataclasses.dataclass(frozen=True)
class Launch:
    kernel: object
    grid: tuple[int, ...]
    num_warps: int
    types: tuple[str, ...]
    constexprs: tuple[tuple[str, object], ...]

    @property
    def variant_key(self) -> tuple:
        return (self.kernel.fn.__name__, self.types, self.constexprs, self.num_warps)


def _tests_on_path() -> None:
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(here, "tests")
    if path not in sys.path:
        sys.path.insert(0, path)


@contextlib.contextmanager
def recording(launches: list[Launch]):
    """Records every launch the public functions make while tracing (nothing runs)."""
    _tests_on_path()
    import triton_variants

    def on_launch(kernel, grid, args, out_shapes, num_warps, constexprs):
        v = triton_variants.variant(kernel, args, out_shapes, num_warps, constexprs)
        launches.append(Launch(kernel, tuple(grid), num_warps, v.types, v.constexprs))
        # Outputs that depend on every array argument (x * 0 is not folded for floats), under
        # a scope naming the launch: the compiled program shows which launches it keeps.
        with jax.named_scope(f"{SCOPE}{len(launches) - 1}_"):
            dep = sum(a.reshape(-1)[0].astype(jax.numpy.float32) * 0.0 for a in args if hasattr(a, "dtype"))
            outs = [(jax.numpy.zeros(s.shape, jax.numpy.float32) + dep).astype(s.dtype) for s in out_shapes]
            # Not fused into a consumer (whose name the fusion would carry), dropped only if dead.
            return list(jax.lax.optimization_barrier(outs))

    with triton_variants.recording(on_launch):
        yield


def case_launches(
    op: str, n: int, t: int, layout: str, mode: str, dtype: str = "float32", param_form: str = ""
) -> list[Launch]:
    """The launches of one benchmark case, traced on abstract inputs (floating ones of `dtype`);
    with `param_form`, γ and λ (linear_scan's b) in that form of benchmarks.param_forms."""
    from benchmarks import param_forms

    spec = shapes.SPECS[op]
    shape = shapes.shape(n, t, layout)
    given = {}
    if param_form:
        call, given = param_forms.call_with(op, param_form, n, t, layout, "triton")
    avals = {k: jax.ShapeDtypeStruct(shape, dtype) for k in spec.floats if k not in given}
    avals.update({k: jax.ShapeDtypeStruct(shape, jax.numpy.bool_) for k in spec.flags})
    avals.update({k: jax.ShapeDtypeStruct(v.shape, v.dtype) for k, v in given.items()})  # held constant

    def fwd(inputs):
        if param_form:
            return call(inputs)
        return shapes.call(op, inputs, layout=layout, implementation="triton")

    def fwd_bwd(inputs, cotangents):  # as the benchmark's fwd+bwd mode: outputs and input gradients
        floats = {k: inputs[k] for k in spec.floats if k in inputs and k not in given}
        rest = {k: v for k, v in inputs.items() if k not in floats}
        outputs, vjp = jax.vjp(lambda f: fwd({**f, **rest}), floats)
        return outputs, vjp(tuple(cotangents))

    launches: list[Launch] = []
    with recording(launches):
        if mode == "fwd":
            lowered = jax.jit(fwd).lower(avals)
        else:
            cts = jax.eval_shape(fwd, avals)
            lowered = jax.jit(fwd_bwd).lower(avals, cts)
        hlo = lowered.compile().as_text()
    # Tracing also sees launches the program drops (custom_vjp traces its primal function for
    # the output types even where only the forward-with-residuals runs): keep those in the HLO.
    kept = {int(i) for i in re.findall(SCOPE + r"(\d+)_", hlo)}
    return [x for i, x in enumerate(launches) if i in kept]


def _ptxas_path() -> str:
    from triton.backends.nvidia.compiler import get_ptxas

    return get_ptxas(90).path


def aligned_pointers(types: Sequence[str]) -> dict:
    """Triton's attributes declaring every pointer parameter 16-byte aligned, as jax-triton declares
    the buffers it passes (XLA's are): without them the compiler cannot prove a vector load aligned
    and loads element by element, and a batch-major vector block compiles to other code (GAE's
    [512, 2] block at 8 warps, triton 3.6: 54 registers, against 32 aligned and 30 that Nsight
    Compute reported on an H200)."""
    return {(i,): [["tt.divisibility", 16]] for i, t in enumerate(types) if t.startswith("*")}


def compile_sm90(launch, options: dict | None = None) -> object:
    """One launch's kernel (anything with `kernel`, `constexprs`, `types` and `num_warps`: a
    Launch, a triton_variants variant) compiled for sm_90 as jax-triton compiles it: pointers
    16-byte aligned, the launch's register cap where it has one, fp fusion on (`options`, for a
    test's control compile, replaces those compile options)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler import compile as compile_kernel

    from rlscan_jax._src.triton import launch as plans

    fn = launch.kernel
    constexprs = dict(launch.constexprs)
    params = [p for p in fn.arg_names if p not in constexprs]
    signature = dict(zip(params, launch.types, strict=True))
    signature.update({k: "constexpr" for k in constexprs})
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=aligned_pointers(launch.types))
    if options is None:
        options = plans.compile_options(launch.num_warps, constexprs)  # maxnreg where the launch caps it
    return compile_kernel(src, target=GPUTarget("cuda", 90, 32), options=options)


def compile_resources(launch: Launch) -> dict:
    """Registers, spill bytes and shared memory of one launch's kernel compiled for sm_90, and its
    global loads in the PTX: vector (ld.global.v2/.v4) and scalar."""
    compiled = compile_sm90(launch)
    ptx = compiled.asm["ptx"]
    loads = [re.search(r"\.v\d\b", q) for q in re.findall(r"\bld\.global((?:\.[\w:]+)*)", ptx)]
    arch = re.search(r"^\s*\.target\s+(\S+)", ptx, re.MULTILINE).group(1)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.ptx")
        with open(path, "w") as f:
            f.write(ptx)
        proc = subprocess.run(
            [_ptxas_path(), "-v", f"--gpu-name={arch}", path, "-o", os.path.join(d, "k.cubin")],
            capture_output=True,
            text=True,
            check=True,
        )
    info = proc.stdout + proc.stderr
    regs = int(re.search(r"Used (\d+) registers", info).group(1))
    spill_st = int(re.search(r"(\d+) bytes spill stores", info).group(1))
    spill_ld = int(re.search(r"(\d+) bytes spill loads", info).group(1))
    stack = int(re.search(r"(\d+) bytes stack frame", info).group(1))
    return {
        "registers": regs,
        "spill_store_bytes": spill_st,
        "spill_load_bytes": spill_ld,
        "stack_bytes": stack,
        "shared_bytes": int(compiled.metadata.shared),
        "vector_loads": sum(1 for v in loads if v),
        "scalar_loads": sum(1 for v in loads if not v),
    }


def occupancy(registers: int, shared: int, warps: int) -> dict:
    """Resident blocks and warps per SM (compute capability 9.0), and what limits them."""
    per_warp = -(-registers * 32 // REG_UNIT) * REG_UNIT
    limits = {
        "registers": (REGS_PER_SM // per_warp) // warps,
        "shared": SMEM_PER_SM // (shared + SMEM_RESERVED),
        "warps": MAX_WARPS // warps,
        "blocks": MAX_BLOCKS,
    }
    blocks = min(limits.values())
    return {
        "blocks_per_sm": blocks,
        "warps_per_sm": blocks * warps,
        "occupancy": blocks * warps / MAX_WARPS,
        "limited_by": min(limits, key=limits.get),
    }


def run(
    ops: Sequence[str],
    grid: Sequence[tuple[int, int]],
    layouts: Sequence[str],
    modes: Sequence[str],
    log=print,
    dtypes: Sequence[str] = ("float32",),
    param_forms: Sequence[str] = ("",),
) -> list[dict]:
    cache: dict[tuple, dict] = {}
    records = []
    for n, t in grid:
        for layout in layouts:
            for op, mode, dtype, form in itertools.product(ops, modes, dtypes, param_forms):
                launches = case_launches(op, n, t, layout, mode, dtype, form)
                rows = []
                for launch in launches:
                    if launch.variant_key not in cache:
                        cache[launch.variant_key] = compile_resources(launch)
                    res = cache[launch.variant_key]
                    occ = occupancy(res["registers"], res["shared_bytes"], launch.num_warps)
                    c = dict(launch.constexprs)
                    programs = 1
                    for g in launch.grid:
                        programs *= g
                    rows.append(
                        {
                            "kernel": launch.kernel.fn.__name__,
                            "phase": c.get("PHASE"),
                            "BT": c.get("BT"),
                            "BB": c.get("BB"),
                            "num_warps": launch.num_warps,
                            "programs": programs,
                            **res,
                            **occ,
                            "waves": programs / (occ["blocks_per_sm"] * SM_COUNT),
                        }
                    )
                rec = {"op": op, "N": n, "T": t, "layout": layout, "mode": mode, "dtype": dtype}
                if form:
                    rec["param_form"] = form
                rec["launches"] = rows
                records.append(rec)
                main = rows[-1] if rows else None
                if main is not None:
                    log(
                        f"{op:>18} {n}x{t} {layout:>11} {mode:>7} {dtype}: {len(rows)} launches; last "
                        f"{main['kernel']} P{main['phase']} [{main['BT']},{main['BB']}] w{main['num_warps']} "
                        f"regs {main['registers']} spill {main['spill_store_bytes']} smem {main['shared_bytes']} "
                        f"occ {main['occupancy']:.2f} ({main['limited_by']}) waves {main['waves']:.2f}"
                    )
    return records


def markdown(head: dict, records: Sequence[dict]) -> str:
    """The launches as a table; a dtype column where the records hold more than float32."""
    dtypes = sorted({r["dtype"] for r in records}) or ["float32"]
    typed = dtypes != ["float32"]
    launch = head.get("launch")
    lines = [
        f"Kernels of each benchmark case compiled for sm_90 with triton {head['triton']} "
        f"({head['date'][:10]}, commit {head.get('commit') or '?'}); {', '.join(dtypes)}; theoretical occupancy of an "
        "H100/H200 SM (see benchmarks/kernel_resources.py). Not measured times."
        + (f" Launch constants overridden (--launch): {launch}." if launch else ""),
        "",
        "| op | N×T | layout | mode |" + (" dtype |" if typed else "") + " kernel, phase | block [BT, BB] | warps "
        "| programs | regs | spill B | smem B | warps/SM (limit) | waves |",
        "|---|---|---|---|" + ("---|" if typed else "") + "---|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in records:
        mode = f"{r['mode']} | {r['dtype']}" if typed else r["mode"]
        if r.get("param_form"):
            mode = f"{mode} (γ {r['param_form']})"
        for x in r["launches"]:
            lines.append(
                f"| {r['op']} | {r['N']}×{r['T']} | {r['layout']} | {mode} | {x['kernel']} P{x['phase']} "
                f"| [{x['BT']}, {x['BB']}] | {x['num_warps']} | {x['programs']} | {x['registers']} "
                f"| {x['spill_store_bytes']} | {x['shared_bytes']} | {x['warps_per_sm']} ({x['limited_by']}) "
                f"| {x['waves']:.2f} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks import run as run_module  # late: it imports the whole harness

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="JSON path; a .md table is written beside it")
    ap.add_argument("--ops", default=",".join(shapes.OPS))
    ap.add_argument("--shapes", help="NxT,NxT (default: the benchmark grid)")
    ap.add_argument("--layouts", default=",".join(shapes.LAYOUTS))
    ap.add_argument("--modes", default=",".join(shapes.MODES))
    ap.add_argument("--dtypes", default="float32", help="comma list of float32, bfloat16 (the floating inputs)")
    ap.add_argument(
        "--param-forms",
        default="",
        help="comma list of benchmarks.param_forms.FORMS: γ and λ (linear_scan's b) in each form (default: as the "
        "benchmark gives them)",
    )
    run_module.add_launch_option(ap, "recorded in the header")
    args = ap.parse_args(argv)
    overrides = [run_module._launch_override(item, ap) for item in args.launch]
    run_module.set_launch(overrides)
    grid = shapes.GRID
    if args.shapes:
        grid = tuple(tuple(int(v) for v in s.split("x")) for s in args.shapes.split(","))
    import triton

    head = {
        "record": "header",
        "triton": triton.__version__,
        "ptxas": subprocess.run([_ptxas_path(), "--version"], capture_output=True, text=True).stdout.strip()[-60:],
        "target": "sm_90",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "commit": os.environ.get("RLSCAN_COMMIT"),
        **({"launch": run_module.launch_record(overrides)} if overrides else {}),
    }
    log = functools.partial(print, flush=True)
    forms = tuple(args.param_forms.split(",")) if args.param_forms else ("",)
    records = run(
        args.ops.split(","), grid, args.layouts.split(","), args.modes.split(","), log, args.dtypes.split(","), forms
    )
    with open(args.out, "w") as f:
        json.dump([head, *records], f, indent=1)
    md = os.path.splitext(args.out)[0] + ".md"
    with open(md, "w") as f:
        f.write(markdown(head, records))
    print(f"{len(records)} cases -> {args.out}, {md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
