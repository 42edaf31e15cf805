"""The lowering that moves jax-triton 0.3.x's kernel payload into jaxlib's typed-FFI call.

No GPU and no jax-triton here: a stand-in for jax-triton 0.3.x (its `triton_call` signature, its
primitive, and a lowering rule that emits the legacy custom call, API version 2, with the payload
as `backend_config`, as 0.3.1's does) is lowered for CUDA on the CPU. `test_gpu.py` runs the real
one and compares the two calls' outputs bit for bit.
"""

from __future__ import annotations

import re
import sys
import types

import jax
import jax.extend as jex
import jax.numpy as jnp
import pytest

from rlscan_jax._src.triton import custom_call

# Bytes a compressed proto holds: NUL, high bytes, a quote and a backslash.
PAYLOAD = b'\x78\x9c\x00\xff\x01"q\\z' * 7
SHAPE = jax.ShapeDtypeStruct((5, 3), jnp.float32)


def _stand_in(with_target_argument: bool = True) -> types.ModuleType:
    """A module shaped like jax-triton 0.3.x (or, without the argument, like 0.4.x)."""
    prim = jex.core.Primitive("stand_in_triton_kernel_call")
    prim.multiple_results = True
    prim.def_abstract_eval(lambda *args, out_shapes, **_: [jax.core.ShapedArray(s.shape, s.dtype) for s in out_shapes])

    caps = []

    def lowering(backend, ctx, *args, custom_call_target_name, input_output_aliases, out_shapes, grid, **metaparams):
        assert backend == f"{ctx.module_context.platforms[0]}-backend" and grid == (4, 1, 1)
        if metaparams:  # jax-triton compiles the kernel here: the maxnreg its CUDA options get
            caps.append(_cuda_options().maxnreg)
        rule = jax.ffi.ffi_lowering(
            custom_call_target_name,
            api_version=2,
            backend_config=PAYLOAD,
            operand_output_aliases=dict(input_output_aliases),
        )
        return rule(ctx, *args)

    lib = types.ModuleType("jax_triton.triton_lib")
    lib.triton_kernel_call_p = prim
    lib.triton_kernel_call_lowering = lowering
    lib.get_cuda_backend = "cuda-backend"
    lib.get_hip_backend = "rocm-backend"
    if with_target_argument:

        def triton_call(*args, kernel, out_shape, grid, custom_call_target_name="triton_kernel_call"): ...

    else:

        def triton_call(*args, kernel, out_type, grid): ...

    package = types.ModuleType("jax_triton")
    package.triton_call = triton_call
    package.triton_lib = lib
    package.caps = caps
    return package


def _cuda_options():
    """The options triton's CUDA backend makes of jax-triton's (num_warps and fp fusion here)."""
    from triton.backends.compiler import GPUTarget
    from triton.backends.nvidia.compiler import CUDABackend

    return CUDABackend(GPUTarget("cuda", 90, 32)).parse_options({"num_warps": 4, "enable_fp_fusion": True})


@pytest.fixture
def jax_triton(monkeypatch):
    """Installs a stand-in jax-triton 0.3.x on a jaxlib new enough for the FFI target."""

    def install(module):
        monkeypatch.setitem(sys.modules, "jax_triton", module)
        monkeypatch.setitem(sys.modules, "jax_triton.triton_lib", module.triton_lib)
        custom_call._install.cache_clear()
        return module

    monkeypatch.setattr(custom_call, "_jaxlib_version", lambda: (0, 11, 2))
    yield install
    custom_call._install.cache_clear()


def _lowered(module, target: str, aliases=(), platform="cuda", **metaparams) -> str:
    prim = module.triton_lib.triton_kernel_call_p

    def f(x, y):
        return prim.bind(
            x,
            y,
            out_shapes=(SHAPE, SHAPE),
            custom_call_target_name=target,
            input_output_aliases=aliases,
            grid=(4, 1, 1),
            **metaparams,
        )

    x = jnp.ones(SHAPE.shape, SHAPE.dtype)
    return jax.jit(f).trace(x, x).lower(lowering_platforms=(platform,)).as_text()


def _calls(text: str) -> list[str]:
    return [line for line in text.splitlines() if "stablehlo.custom_call" in line]


def _unescape(text: str) -> bytes:
    """An MLIR string attribute's text (\\XX escapes) as bytes."""
    out, i = bytearray(), 0
    while i < len(text):
        if text[i] == "\\" and re.match(r"[0-9A-Fa-f]{2}", text[i + 1 : i + 3]):
            out.append(int(text[i + 1 : i + 3], 16))
            i += 3
        elif text[i] == "\\":
            out += text[i + 1].encode()
            i += 2
        else:
            out += text[i].encode()
            i += 1
    return bytes(out)


def test_ffi_call_carries_the_legacy_payload(jax_triton):
    module = jax_triton(_stand_in())
    assert custom_call.target_name(True) == custom_call.FFI_TARGET
    [call] = _calls(_lowered(module, custom_call.FFI_TARGET))
    assert call.count("@triton_kernel_call_ffi(%arg0, %arg1)") == 1
    assert "api_version = 2" not in call
    opaque = re.search(r'mhlo\.backend_config = \{opaque = "((?:[^"\\]|\\.)*)"\}', call)
    assert opaque is not None, call
    assert _unescape(opaque.group(1)) == PAYLOAD
    assert re.search(r'(?<!\.)backend_config = ""', call)  # the payload moved, not copied
    assert call.count("dense<[1, 0]> : tensor<2xindex>") == 4  # two operands' and two results' layouts


def test_ffi_call_keeps_output_aliases(jax_triton):
    module = jax_triton(_stand_in())
    assert custom_call.target_name(True) == custom_call.FFI_TARGET
    [call] = _calls(_lowered(module, custom_call.FFI_TARGET, aliases=((1, 0),)))
    assert "@triton_kernel_call_ffi" in call
    assert re.search(r"output_tuple_indices = \[0\],\s*operand_index = 1", call), call


def test_other_calls_lower_as_jax_triton_lowers_them(jax_triton):
    module = jax_triton(_stand_in())
    custom_call.target_name(True)  # installs the rule
    [call] = _calls(_lowered(module, custom_call.LEGACY_TARGET))
    assert "@triton_kernel_call(%arg0, %arg1)" in call
    assert "api_version = 2 : i32" in call
    assert _unescape(re.search(r'(?<!\.)backend_config = "((?:[^"\\]|\\.)+)"', call).group(1)) == PAYLOAD
    assert "opaque" not in call


def test_legacy_call_where_ffi_is_not_asked_for_or_not_there(jax_triton, monkeypatch):
    jax_triton(_stand_in())
    assert custom_call.target_name(False) is None
    jax_triton(_stand_in(with_target_argument=False))  # 0.4.x emits the FFI call itself
    assert custom_call.target_name(True) is None
    jax_triton(_stand_in())
    monkeypatch.setattr(custom_call, "_jaxlib_version", lambda: (0, 10, 2))  # no initialize step there
    assert custom_call.target_name(True) is None


def test_rocm_keeps_jax_tritons_own_call(jax_triton):
    """The FFI payload move is for CUDA only: on ROCm a call that asks for it lowers as before."""
    module = jax_triton(_stand_in())
    assert custom_call.target_name(True) == custom_call.FFI_TARGET
    [call] = _calls(_lowered(module, custom_call.FFI_TARGET, platform="rocm"))
    assert "@triton_kernel_call(%arg0, %arg1)" in call and "api_version = 2 : i32" in call


@pytest.mark.parametrize("use_ffi", [True, False])
def test_register_cap_holds_while_the_kernel_compiles(jax_triton, use_ffi):
    """A launch's MAX_REGISTERS_PARAM reaches the CUDA backend's options (maxnreg) while jax-triton
    compiles its kernel, in the FFI call and the legacy one; other launches, and the backend after
    the lowering, have no cap."""
    module = jax_triton(_stand_in())
    target = custom_call.target_name(use_ffi) or custom_call.LEGACY_TARGET  # installs the rule either way
    for cap in (64, 0, 80):
        _lowered(module, target, **{custom_call.MAX_REGISTERS_PARAM: cap})
    _lowered(module, target, BT=8)  # a launch without the parameter
    assert module.caps == [64, None, 80, None]
    assert _cuda_options().maxnreg is None
