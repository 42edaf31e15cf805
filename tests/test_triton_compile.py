"""Every kernel variant the launchers produce compiles for sm_90 (H100 / H200), without a GPU.

A kernel that does not compile for the GPU fails CI here, before anyone reaches a GPU.
"""

from __future__ import annotations

import pytest

triton = pytest.importorskip("triton", reason="the test extra installs triton")

import triton_variants  # noqa: E402

VARIANTS = triton_variants.record()


def test_every_op_has_variants():
    names = {v.kernel.fn.__name__ for v in VARIANTS}
    assert names == {"gae_kernel", "vtrace_kernel", "retrace_kernel", "returns_kernel", "linear_kernel", "carry_kernel"}
    phases = {dict(v.constexprs).get("PHASE") for v in VARIANTS}
    assert phases >= {0, 1, 2, 3}


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_compiles_for_sm90(variant):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler import compile as compile_kernel

    fn = variant.kernel
    constexprs = dict(variant.constexprs)
    params = [p for p in fn.arg_names if p not in constexprs]
    assert len(params) == len(variant.types), variant.name
    signature = dict(zip(params, variant.types))
    signature.update({k: "constexpr" for k in constexprs})
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs)
    compiled = compile_kernel(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": variant.num_warps})
    assert compiled.asm["cubin"], variant.name
