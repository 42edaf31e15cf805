"""Whether two checkouts compile every recorded kernel variant to the same PTX (no GPU needed).

    python tests/gpu_runs/ptx_diff.py OLD_CHECKOUT [NEW_CHECKOUT]   # NEW defaults to this one
    python tests/gpu_runs/ptx_diff.py --kernels vtrace_kernel,adjoint_kernel OLD_CHECKOUT   # these alone

A refactor of the kernels' source that leaves every variant's PTX unchanged keeps what the GPU
runs (tests, sanitizer sweeps, benchmarks) valid for the new source. For each checkout, a child
process imports that checkout's `rlscan_jax` and `tests/triton_variants.py`, compiles every
variant `record()` finds for sm_90 with the installed triton, and hashes its PTX without the
debug information (`.loc`, `.file`, comments, debug sections, and the `$L__tmp` labels the line
table uses). Prints the variants whose PTX differs (and those only one side records); exit
status 1 if any.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys


def normalized(ptx: str) -> str:
    """The PTX's instructions and declarations, without debug information."""
    keep, in_debug = [], False
    for line in ptx.splitlines():
        s = line.strip()
        if s.startswith(".section") and "debug" in s:
            in_debug = True
        if in_debug:
            in_debug = s != "}"
            continue
        if s and not s.startswith((".loc", ".file", "//", "$L__tmp")):
            keep.append(s)
    return "\n".join(keep)


def stable_name(name: str) -> str:
    """A variant's name without the flags at their defaults that older checkouts do not have.

    VEC=1 (no vector hint; the flag came with 396ec57) and WINDOWED=False (the look-back's fold
    of every chunk before; the flag was there from 142c23d until the windowed fold was measured
    and removed after adb761d) compile as without the flag; so do FOLD=False (3898df1 on) and
    FENCE=False (the look-back's acquire RMWs, as before the flag), WALK_BACK=False and
    STREAM=False (PHASE 1 in scan order and plain stores, as before those flags), and CVEC=1
    (no vector hint across time-major columns, as before the flag). A parameter's form
    (GAMMA_FULL and the like) was a bool before the forms 2 and 3 (False and True are 0 and 1),
    and linear_adjoint_kernel's B_FULL=1 and HAS_DB=True (b an array, d b written) are as before
    those flags.
    """
    name = re.sub(r"_FULL=(False|True)", lambda m: "_FULL=" + str(int(m.group(1) == "True")), name)
    return (
        name.replace(",B_FULL=1", "")
        .replace(",HAS_DB=True", "")
        .replace(",VEC=1,", ",")
        .replace(",VEC=1]", "]")
        .replace(",WINDOWED=False", "")
        .replace(",FOLD=False", "")
        .replace(",FENCE=False", "")
        .replace(",STREAM=False", "")
        .replace(",WALK_BACK=False", "")
        .replace(",CVEC=1,", ",")
        .replace(",CVEC=1]", "]")
    )


def hashes(root: str, kernels: frozenset[str] = frozenset()) -> dict[str, str]:
    """{variant name and warps: sha256 of its normalized PTX} for the checkout at `root` (the
    variants of `kernels` alone, where given)."""
    sys.path[:0] = [root, os.path.join(root, "tests")]
    import triton_variants
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler import compile as compile_kernel

    out = {}
    for v in triton_variants.record():
        if kernels and v.kernel.fn.__name__ not in kernels:
            continue
        constexprs = dict(v.constexprs)
        params = [p for p in v.kernel.arg_names if p not in constexprs]
        signature = dict(zip(params, v.types, strict=True))
        signature.update({k: "constexpr" for k in constexprs})
        src = ASTSource(fn=v.kernel, signature=signature, constexprs=constexprs)
        cap = constexprs.get("MAXNREG")  # launch.compile_options, written out: `root` may predate it
        options = {"num_warps": v.num_warps, "enable_fp_fusion": True, **({"maxnreg": cap} if cap else {})}
        ptx = compile_kernel(src, target=GPUTarget("cuda", 90, 32), options=options).asm["ptx"]
        out[f"{stable_name(v.name)} warps={v.num_warps}"] = hashlib.sha256(normalized(ptx).encode()).hexdigest()
    return out


def _child_hashes(root: str, kernels: str = "") -> dict[str, str]:
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--hashes", os.path.abspath(root), kernels],
        capture_output=True,
        text=True,
        check=True,
        cwd=os.path.abspath(root),
    )
    return json.loads(proc.stdout.splitlines()[-1])


def main(argv: list[str]) -> int:
    if argv[:1] == ["--hashes"]:
        print(json.dumps(hashes(argv[1], frozenset(k for k in argv[2].split(",") if k))))
        return 0
    kernels = ""
    if argv[:1] == ["--kernels"] and len(argv) > 1:
        kernels, argv = argv[1], argv[2:]
    if not 1 <= len(argv) <= 2:
        print(__doc__)
        return 2
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    old, new = _child_hashes(argv[0], kernels), _child_hashes(argv[1] if len(argv) == 2 else here, kernels)
    differ = sorted(k for k in old.keys() & new.keys() if old[k] != new[k])
    only = sorted(old.keys() ^ new.keys())
    for k in differ:
        print("PTX differs:", k)
    for k in only:
        print("recorded on one side only:", k)
    both = len(old.keys() & new.keys())
    print(f"{both} variants on both sides, {len(differ)} with different PTX, {len(only)} on one side only")
    return 1 if differ or only else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
