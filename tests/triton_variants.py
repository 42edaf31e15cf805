"""The kernel variants the launchers actually produce, recorded without running anything.

`record()` traces every public op (forward and gradient; one-pass and split rows; both
layouts; float32 and bfloat16 inputs; flags as bool and as int8) with `launch.call` replaced
by a recorder, and returns one variant per distinct (kernel, constexpr flags), plus the bfloat16 ones. The compile
test builds each for sm_90; the GPU sanitizer sweep runs each under compute-sanitizer.
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


@contextlib.contextmanager
def _recording(found: dict):
    from rlscan_jax._src import dispatch
    from rlscan_jax._src.triton import batching, launch, ops
    from rlscan_jax._src.triton.kernels import common, gae, linear, retrace, returns, vtrace  # noqa: F401

    # The kernels are imported above, before TRITON_INTERPRET is set, so they stay compilable.

    def fake_call(kernel, *, grid, args, out_shapes, num_warps=4, **constexprs):
        types = tuple(_type(a) for a in args) + tuple(_type(o) for o in out_shapes)
        v = Variant(kernel, types, tuple(sorted(constexprs.items())), num_warps)
        # One variant per flag combination (block sizes aside); 16-bit inputs for one-pass kernels.
        half = "*bf16" in types
        if not half or constexprs.get("PHASE", 0) == 0:
            flags = tuple((k, x) for k, x in v.constexprs if k not in ("BT", "BB"))
            found.setdefault((kernel.fn.__name__, flags, half), v)
        return [jnp.zeros(s.shape, s.dtype) for s in out_shapes]

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


def _trace(inp, dtype_flags):
    args = dict(inp.args)
    for k in cases.FLAGS:
        if args.get(k) is not None:
            args[k] = np.asarray(args[k]).astype(dtype_flags)
    jax.eval_shape(lambda: cases.call(inp, "triton", args))
    names = inp.float_names()

    def loss(*floats):
        a = dict(args)
        a.update(zip(names, floats))
        return sum(jnp.sum(o.astype(jnp.float32)) for o in cases.call(inp, "triton", a))

    jax.eval_shape(jax.grad(loss, argnums=tuple(range(len(names)))), *[jnp.asarray(args[k]) for k in names])


def record() -> list[Variant]:
    found: dict[tuple, Variant] = {}
    with _recording(found):
        for op, spec in cases.OPS.items():
            for mode in spec.modes:
                # (T, batch, axis): one pass time-major, one pass batch-major, split rows, general layout.
                for T, batch, axis in (
                    (16, (64,), 0),
                    (16, (64,), -1),
                    (4096, (2,), 0),
                    (4096, (2,), -1),
                    (8, (2, 3), 1),
                ):
                    for dtype in (np.float32, jnp.bfloat16):
                        g = 0.9 if spec.has_gamma else None
                        lam = 0.9 if spec.has_lambda else None
                        inp = cases.build(op, mode, T, batch, axis, dtype=dtype, gamma=g, lambda_=lam)
                        _trace(inp, np.bool_ if dtype == np.float32 else np.int8)
    return list(found.values())
