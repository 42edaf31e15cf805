"""PTX instruction counts of the kernels compiled for sm_90 (no GPU needed): the figures of tune run 4.

    python tests/gpu_runs/ptx_counts.py scan OUT.json          # a minimal scan, reverse vs forward
    python tests/gpu_runs/ptx_counts.py vector OUT.json        # batch-major one-pass blocks, VEC 1 vs 4
    python tests/gpu_runs/ptx_counts.py variants ROOT OUT.json # every variant ROOT's triton_variants records
    python tests/gpu_runs/ptx_counts.py compare OLD.json NEW.json
    python tests/gpu_runs/ptx_counts.py case OUT.json OPS NxT LAYOUT DTYPE  # a benchmark case's forward launches

Counts are of PTX instructions in the compiled text (not executed counts; a loop body counts
once), with the pointers declared 16-byte aligned as jax-triton declares them. Run with the
triton the GPU has (3.6.0 on the lent H200) for its figures; the header records the version.
"""

from __future__ import annotations

import collections
import datetime
import json
import os
import re
import statistics
import sys

_SKIP = ("//", ".", "$", "{", "}", ")", "(")


def count(ptx: str) -> dict[str, int]:
    """Instructions by opcode (first part), with "total" and "shfl"."""
    out = collections.Counter()
    for line in ptx.splitlines():
        s = line.strip()
        if not s or s.startswith(_SKIP):
            continue
        m = re.match(r"(@!?%p\d+\s+)?([a-z][\w.]*)", s)
        if m:
            out["total"] += 1
            out[m.group(2).split(".")[0]] += 1
    return dict(out)


def compile_sm90(fn, types, constexprs, num_warps):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler import compile as compile_kernel

    params = [p for p in fn.arg_names if p not in constexprs]
    signature = dict(zip(params, types, strict=True))
    signature.update({k: "constexpr" for k in constexprs})
    attrs = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(types) if t.startswith("*")}
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    from rlscan_jax._src.triton import launch

    return compile_kernel(src, target=GPUTarget("cuda", 90, 32), options=launch.compile_options(num_warps, constexprs))


def _scan_kernel():
    import triton
    import triton.language as tl

    from rlscan_jax._src.triton.kernels.common import combine

    @triton.jit
    def minimal_scan(pa, pb, po, N, BT: tl.constexpr, BB: tl.constexpr, REVERSE: tl.constexpr):
        """A time-major block [BT, BB] scanned along time: the two ways of a reverse scan."""
        o_n = tl.program_id(0) * BB + tl.arange(0, BB)
        if REVERSE:  # rows ascending, the scan reversed
            o_t = tl.arange(0, BT)
        else:  # rows in scan order (descending), the scan forward: what the kernels do
            o_t = BT - 1 - tl.arange(0, BT)
        off = o_t[:, None] * N + o_n[None, :]
        a = tl.load(pa + off)
        b = tl.load(pb + off)
        h, _ = tl.associative_scan((a, b), 0, combine, reverse=REVERSE)
        tl.store(po + off, h)

    return minimal_scan


def scan_records() -> list[dict]:
    fn = _scan_kernel()
    out = []
    for bt, bb, warps in ((8, 128, 1), (64, 32, 8), (128, 16, 8), (512, 2, 8)):
        for reverse in (True, False):
            k = compile_sm90(fn, ("*fp32", "*fp32", "*fp32", "i32"), dict(BT=bt, BB=bb, REVERSE=reverse), warps)
            out.append(dict(block=[bt, bb], warps=warps, reverse_scan=reverse, counts=count(k.asm["ptx"])))
    return out


def vector_records() -> list[dict]:
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
    import triton_variants

    out, done = [], set()
    for v in triton_variants.record():
        c = dict(v.constexprs)
        name = v.kernel.fn.__name__
        if c.get("LAYOUT") != 1 or c.get("PHASE") != 0 or "*bf16" in v.types or name in done:
            continue
        if name == "linear_kernel" and c.get("REVERSE"):  # the forward linear scan
            continue
        done.add(name)
        for bt, bb in ((512, 2), (1024, 1), (4096, 1)):
            per = {}
            for vec in (1, 4):
                k = compile_sm90(v.kernel, v.types, {**c, "BT": bt, "BB": bb, "SINGLE": True, "VEC": vec}, 8)
                per[vec] = count(k.asm["ptx"])["total"] / (bt * bb / 256)
            out.append(dict(kernel=name, block=[bt, bb], warps=8, per_element={str(k): v for k, v in per.items()}))
    return out


def variant_records(root: str) -> dict[str, dict]:
    sys.path[:0] = [root, os.path.join(root, "tests")]
    import triton_variants
    from ptx_diff import stable_name

    out = {}
    for v in triton_variants.record():
        name = stable_name(v.name) + f" warps={v.num_warps}"
        out[name] = {"counts": count(compile_sm90(v.kernel, v.types, dict(v.constexprs), v.num_warps).asm["ptx"])}
    return out


def case_records(ops: str, nt: str, layout: str, dtype: str) -> list[dict]:
    """Counts of every forward launch of a benchmark case (comma-separated ops), as the plan makes them."""
    from benchmarks import kernel_resources

    n, t = (int(x) for x in nt.split("x"))
    out = []
    for op in ops.split(","):
        for launch in kernel_resources.case_launches(op, n, t, layout, "fwd", dtype):
            c = dict(launch.constexprs)
            ptx = compile_sm90(launch.kernel, launch.types, c, launch.num_warps).asm["ptx"]
            block = [c.get("BT"), c.get("BB")]
            name = launch.kernel.fn.__name__
            out.append(dict(op=op, kernel=name, block=block, warps=launch.num_warps, counts=count(ptx)))
            print(op, name, block, {k: out[-1]["counts"].get(k) for k in ("total", "shfl", "selp")})
    return out


def header() -> dict:
    import triton

    date = datetime.date.today().isoformat()
    return {"record": "header", "triton": triton.__version__, "target": "sm_90", "date": date}


def compare(old: dict, new: dict) -> None:
    both = [k for k in old["variants"] if k in new["variants"]]
    ratios = {k: new["variants"][k]["counts"]["total"] / old["variants"][k]["counts"]["total"] for k in both}
    changed = [r for r in ratios.values() if r != 1.0]
    print(f"{len(both)} variants on both sides; {len(changed)} with a different count")
    if changed:
        print(f"new/old: min {min(changed):.2f}, median {statistics.median(changed):.2f}, max {max(changed):.2f}")
    print(f"median over all {len(both)}: {statistics.median(ratios.values()):.2f}")


def main(argv: list[str]) -> None:
    mode = argv[0]
    if mode == "compare":
        compare(*(json.load(open(p)) for p in argv[1:3]))
        return
    if mode == "scan":
        body = {"scan": scan_records()}
    elif mode == "vector":
        body = {"vector": vector_records()}
    elif mode == "case":
        body = {"case": dict(zip(("ops", "NxT", "layout", "dtype"), argv[2:6])), "launches": case_records(*argv[2:6])}
    elif mode == "variants":
        body = {"variants": variant_records(os.path.abspath(argv[1]))}
        argv = argv[1:]
    else:
        raise SystemExit(__doc__)
    with open(argv[1], "w") as f:
        json.dump({**header(), **body}, f, indent=1)
    print(f"wrote {argv[1]}")


if __name__ == "__main__":
    main(sys.argv[1:])
