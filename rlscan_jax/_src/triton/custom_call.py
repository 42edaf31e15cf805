"""Which XLA custom call a Triton kernel launch lowers to.

jaxlib runs a Triton kernel through one of two custom-call targets that take the same payload
(a compressed `TritonKernelCall` proto: the compiled kernel, its grid and parameters):

- `triton_kernel_call`, the legacy custom call (API version 2), which jax-triton 0.3.x emits.
  XLA runs it as a plain thunk on every execution: jaxlib finds the kernel by looking the whole
  payload up in a cache, each launch, and XLA cannot record it into a command buffer (CUDA graph).
- `triton_kernel_call_ffi`, a typed XLA FFI handler (API version 4), which jax-triton 0.4.x
  emits. Since jaxlib 0.11 it has an initialize step that loads the kernel once per executable,
  and it is marked command-buffer compatible, so XLA may capture it in a CUDA graph.

jax-triton 0.4.x requires triton 3.7, which users pinned to triton 3.6 (torch 2.11 pins it) cannot
install. For them, `target_name()` names the FFI target, and the lowering rule installed here
turns jax-triton 0.3.x's legacy call into the FFI call with the same payload: what 0.4.x emits.
The rule changes only calls that ask for `FFI_TARGET` by name (which 0.3.x could not lower
itself); every other `triton_call` in the process lowers as jax-triton lowers it.

The same rule caps a kernel's registers a thread where its launch passes the constexpr
`MAX_REGISTERS_PARAM` (> 0): triton's `maxnreg` compile option, which jax-triton 0.3.x's
`triton_call` does not take. The cap is set on the CUDA backend's options while jax-triton
compiles that kernel (its compile cache keys on the constexpr, so capped and uncapped variants
stay apart). Where the rule is not installed the constexpr is only a kernel parameter: the kernel
compiles uncapped, the same results.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import threading

LEGACY_TARGET = "triton_kernel_call"
FFI_TARGET = "triton_kernel_call_ffi"
# The first jaxlib whose FFI handler has the initialize step and the command-buffer trait
# (jax-ml/jax#37094); jax-triton 0.4 requires it too.
MIN_JAXLIB_FOR_FFI = (0, 11, 0)
MAX_REGISTERS_PARAM = "MAXNREG"
_CAP_LOCK = threading.Lock()


@contextlib.contextmanager
def max_registers(cap: int):
    """While jax-triton compiles a kernel in this block: at most `cap` registers a thread (triton's
    maxnreg option on the CUDA backend; 0: no cap)."""
    if not cap:
        yield
        return
    from triton.backends.nvidia.compiler import CUDABackend

    with _CAP_LOCK:
        parse = CUDABackend.parse_options

        def capped(self, opts):
            return parse(self, {**opts, "maxnreg": cap})

        CUDABackend.parse_options = capped
        try:
            yield
        finally:
            CUDABackend.parse_options = parse


def _jaxlib_version() -> tuple[int, ...]:
    from jax._src.lib import version

    return tuple(version)


def _legacy_rule():
    """jax-triton 0.3.x's lowering rule (before its backend argument), or None where it is not 0.3.x."""
    import jax_triton as jt
    from jax_triton import triton_lib

    parameter = inspect.signature(jt.triton_call).parameters.get("custom_call_target_name")
    if parameter is None or parameter.default != LEGACY_TARGET:
        return None  # 0.4.x: no such argument, it emits FFI_TARGET itself
    rule = getattr(triton_lib, "triton_kernel_call_lowering", None)
    if rule is None or not hasattr(triton_lib, "get_cuda_backend"):
        return None
    return rule


@functools.cache
def _install() -> bool:
    """Registers the CUDA lowering of jax-triton's primitive that emits FFI_TARGET when asked to."""
    if _jaxlib_version() < MIN_JAXLIB_FOR_FFI:
        return False
    rule = _legacy_rule()
    if rule is None:
        return False
    import jax
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir
    from jax_triton import triton_lib

    legacy = functools.partial(rule, triton_lib.get_cuda_backend)

    def lowering(ctx, *args, custom_call_target_name, input_output_aliases, **params):
        # jax-triton builds (and caches) the compiled kernel and its payload, under the launch's cap
        ffi = custom_call_target_name == FFI_TARGET
        with max_registers(params.get(MAX_REGISTERS_PARAM, 0)):
            results = legacy(
                ctx,
                *args,
                custom_call_target_name=LEGACY_TARGET if ffi else custom_call_target_name,
                input_output_aliases=input_output_aliases,
                **params,
            )
        if not ffi:
            return results
        # the payload moves, unchanged, from the legacy call's backend_config to the FFI call's `opaque`
        legacy_call = results[0].owner
        payload = ir.StringAttr(legacy_call.attributes["backend_config"]).value_bytes
        rule = jax.ffi.ffi_lowering(FFI_TARGET, api_version=4, operand_output_aliases=dict(input_output_aliases))
        ffi_results = rule(ctx, *args, opaque=payload)
        legacy_call.erase()
        return ffi_results

    mlir.register_lowering(triton_lib.triton_kernel_call_p, lowering, platform="cuda")
    if hasattr(triton_lib, "get_hip_backend"):
        hip = functools.partial(rule, triton_lib.get_hip_backend)

        def hip_lowering(ctx, *args, custom_call_target_name, **params):
            # No rewrite for ROCm: a call that asked for FFI_TARGET lowers as jax-triton's default.
            name = LEGACY_TARGET if custom_call_target_name == FFI_TARGET else custom_call_target_name
            return hip(ctx, *args, custom_call_target_name=name, **params)

        mlir.register_lowering(triton_lib.triton_kernel_call_p, hip_lowering, platform="rocm")
    return True


def target_name(use_ffi: bool) -> str | None:
    """The `custom_call_target_name` to pass to jax-triton's `triton_call`, or None for its default.

    FFI_TARGET where `use_ffi` and this jax-triton is 0.3.x on a jaxlib that has the FFI handler;
    None where jax-triton already emits the FFI call (0.4.x), or the legacy call is to be kept.
    """
    if _install() and use_ffi:  # installed either way: the rule also applies MAX_REGISTERS_PARAM
        return FFI_TARGET
    return None


def active_target(use_ffi: bool) -> str:
    """The custom-call target that launches lower to here (for results headers)."""
    from jax_triton import triton_lib

    return target_name(use_ffi) or getattr(triton_lib, "CUSTOM_CALL_TARGET_NAME", LEGACY_TARGET)
