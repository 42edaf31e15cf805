"""Choosing the implementation: `implementation=None` picks the fastest one measured for the backend.

Nothing falls back silently: asking for "triton" where it cannot run raises.
"""

from __future__ import annotations

import functools
import os

import jax

IMPLEMENTATIONS = ("triton", "associative", "sequential")

# lax.scan beat lax.associative_scan on a 2-core CPU at most rollout shapes measured
# (benchmarks/cpu_default.py writes benchmarks/results/cpu_default.json).
CPU_DEFAULT = "sequential"


def interpret_mode() -> bool:
    """True when TRITON_INTERPRET=1: the Triton kernels run on the CPU through the interpreter."""
    return os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


@functools.cache
def triton_unavailable_reason() -> str | None:
    """None if the Triton implementation can run here, else why not."""
    try:
        import triton  # noqa: F401
    except ImportError as e:
        return f"triton is not installed ({e}); install the 'gpu' extra"
    if interpret_mode():
        return None
    if jax.default_backend() != "gpu" or not any(d.platform == "gpu" for d in jax.devices()):
        return (
            f"it needs a CUDA GPU, and JAX's default backend is {jax.default_backend()!r} "
            "(set TRITON_INTERPRET=1 before importing rlscan_jax to run the kernels in Triton's interpreter)"
        )
    try:
        import jax_triton  # noqa: F401
    except ImportError as e:
        return f"jax-triton could not be imported ({e}); install the 'gpu' extra"
    return None


def resolve(implementation: str | None) -> str:
    """Returns the implementation to run, raising `ValueError` for an unknown or unavailable one."""
    if implementation is None:
        return "triton" if triton_unavailable_reason() is None and not interpret_mode() else CPU_DEFAULT
    if not isinstance(implementation, str) or implementation not in IMPLEMENTATIONS:
        raise ValueError(f"implementation={implementation!r} must be None or one of {IMPLEMENTATIONS}")
    if implementation == "triton":
        reason = triton_unavailable_reason()
        if reason is not None:
            raise ValueError(f'implementation="triton" cannot run here: {reason}')
    return implementation
