"""Benchmark shapes, layouts, dtypes, ops and modes, and the inputs each op is measured on.

Shared by the harness (`benchmarks.run`) and the tests. Sizes are written N×T: N trajectories
(the batch) of T steps. An op's per-step arrays are [T, N] in the "time_major" layout
(time_axis=0) and [N, T] in the "batch_major" layout (time_axis=1).

The minimum traffic of an op, `bytes_min`, counts every per-step input read once and every
output written once, floating arrays in the benchmark dtype and flags as 1-byte bools. With
E = N·T elements per array, s the dtype's size in bytes, F floating inputs, G flag inputs and
O outputs (per op in `SPECS`):

    fwd:      E · (s·(F + O) + G)
    fwd+bwd:  E · (s·(F + O) + G)          the forward pass
            + E · (s·O + s·F + G + s·F)    the backward pass: read the O cotangents, re-read the
                                           inputs, write the F input gradients
            = E · (s·(3F + 2O) + 2G)

Scalars (γ, λ, clips) are not counted.
"""

from __future__ import annotations

import dataclasses
import zlib

import jax
import jax.numpy as jnp

import rlscan_jax

GRID: tuple[tuple[int, int], ...] = (
    (4096, 128),
    (16384, 128),
    (65536, 16),
    (32768, 8),
    (4096, 1024),
    (1024, 4096),
    (16384, 512),
    (512, 4096),
    (8, 131072),
    (1, 1048576),
)
"""The benchmark grid as (N, T) pairs."""

QUICK_GRID: tuple[tuple[int, int], ...] = ((64, 16), (8, 128))
"""Two small shapes for the CPU smoke run (`--quick`)."""

LAYOUTS: tuple[str, ...] = ("time_major", "batch_major")
TIME_AXIS: dict[str, int] = {"time_major": 0, "batch_major": 1}
DTYPES: tuple[str, ...] = ("float32", "bfloat16")
MODES: tuple[str, ...] = ("fwd", "fwd+bwd")

P_TERMINATED = 1 / 64
P_TRUNCATED = 1 / 256
P_DONE = 1 / 64


@dataclasses.dataclass(frozen=True)
class OpSpec:
    """How one public function is benchmarked.

    Attributes:
      name: the public function in `rlscan_jax`.
      floats: the floating per-step inputs, in call order; all are differentiated in fwd+bwd.
      flags: the flag per-step inputs (bool).
      outputs: the names of the outputs, in the order the function returns them.
      params: keyword parameters passed as Python floats.
      rlax: whether rlax has this estimator (measured as a baseline).
    """

    name: str
    floats: tuple[str, ...]
    flags: tuple[str, ...]
    outputs: tuple[str, ...]
    params: dict = dataclasses.field(default_factory=dict)
    rlax: bool = False


_EPISODE_FLAGS = ("terminated", "truncated")

SPECS: dict[str, OpSpec] = {
    s.name: s
    for s in (
        OpSpec(
            "gae",
            ("rewards", "values", "next_values"),
            _EPISODE_FLAGS,
            ("advantages", "returns"),
            {"gamma": 0.99, "lambda_": 0.95},
            rlax=True,
        ),
        OpSpec(
            "vtrace",
            ("rewards", "values", "next_values", "log_rhos"),
            _EPISODE_FLAGS,
            ("vs", "pg_advantages"),
            {"gamma": 0.99, "lambda_": 1.0},
            rlax=True,
        ),
        OpSpec(
            "retrace",
            ("rewards", "q_values", "next_values", "log_rhos"),
            _EPISODE_FLAGS,
            ("q_targets",),
            {"gamma": 0.99, "lambda_": 0.95},
            rlax=True,
        ),
        OpSpec(
            "lambda_returns",
            ("rewards", "next_values"),
            _EPISODE_FLAGS,
            ("returns",),
            {"gamma": 0.99, "lambda_": 0.95},
            rlax=True,
        ),
        OpSpec(
            "discounted_returns",
            ("rewards", "next_values"),
            _EPISODE_FLAGS,
            ("returns",),
            {"gamma": 0.99},
            rlax=True,
        ),
        OpSpec("eligibility_traces", ("inputs",), ("done",), ("traces",), {"gamma": 0.99, "lambda_": 0.95}),
        OpSpec("episodic_cumsum", ("inputs",), ("done",), ("sums",)),
        OpSpec("linear_scan", ("a", "b"), (), ("h",)),
    )
}

OPS: tuple[str, ...] = tuple(SPECS)


def shape(n: int, t: int, layout: str) -> tuple[int, int]:
    """The per-step array shape of an N×T problem in `layout`."""
    if layout not in TIME_AXIS:
        raise ValueError(f"layout={layout!r} must be one of {LAYOUTS}")
    return (t, n) if layout == "time_major" else (n, t)


def _key(op: str, n: int, t: int, seed: int) -> jax.Array:
    # crc32, not hash(): str hashing is salted per process.
    return jax.random.fold_in(jax.random.key(seed), zlib.crc32(f"{op}/{n}x{t}".encode()))


def make_inputs(op: str, n: int, t: int, layout: str = "time_major", dtype="float32", seed: int = 0) -> dict:
    """Random inputs of one benchmark problem, as keyword arguments of the public function.

    The data depend only on (op, N, T, seed): the batch-major arrays are the transposes of the
    time-major ones, and the bfloat16 arrays the float32 ones rounded. Episode ops get random
    `terminated` (probability 1/64 per step) and `truncated` (1/256) flags and `next_values`
    (so truncation is allowed); eligibility traces and episodic sums get a `done` flag (1/64).

    Args:
      op: a key of `SPECS`.
      n: N, the number of trajectories.
      t: T, the number of steps.
      layout: "time_major" ([T, N]) or "batch_major" ([N, T]).
      dtype: the floating dtype of the floating inputs; flags are bool.
      seed: the random seed.

    Returns:
      dict name -> jax.Array for every name in `SPECS[op].floats + SPECS[op].flags`.
    """
    spec = SPECS[op]
    shape(n, t, layout)  # checks the layout
    keys = jax.random.split(_key(op, n, t, seed), len(spec.floats) + len(spec.flags))
    out = {}
    for name, key in zip(spec.floats, keys[: len(spec.floats)], strict=True):
        if name == "log_rhos":
            x = 0.5 * jax.random.normal(key, (t, n), jnp.float32)
        elif name == "b":
            x = jax.random.uniform(key, (t, n), jnp.float32, 0.9, 1.0)
        else:
            x = jax.random.normal(key, (t, n), jnp.float32)
        out[name] = x.astype(dtype)
    probs = {"terminated": P_TERMINATED, "truncated": P_TRUNCATED, "done": P_DONE}
    for name, key in zip(spec.flags, keys[len(spec.floats) :], strict=True):
        out[name] = jax.random.bernoulli(key, probs[name], (t, n))
    if layout == "batch_major":
        out = {k: v.T for k, v in out.items()}
    return out


def call(op: str, inputs: dict, *, layout: str, implementation: str | None) -> tuple[jax.Array, ...]:
    """Calls the public function on `make_inputs`-style inputs and returns its outputs as a tuple."""
    spec = SPECS[op]
    fn = getattr(rlscan_jax, op)
    out = fn(**inputs, **spec.params, time_axis=TIME_AXIS[layout], implementation=implementation)
    return tuple(out) if isinstance(out, tuple) else (out,)


def bytes_min(op: str, n: int, t: int, dtype, mode: str) -> int:
    """The fewest bytes `op` must move on an N×T problem (see the module docstring for the formula).

    Args:
      op: a key of `SPECS`.
      n: N.
      t: T.
      dtype: the floating dtype (flags count 1 byte).
      mode: "fwd" or "fwd+bwd".

    Returns:
      bytes, an int.
    """
    spec = SPECS[op]
    s = jnp.dtype(dtype).itemsize
    f, g, o = len(spec.floats), len(spec.flags), len(spec.outputs)
    e = n * t
    if mode == "fwd":
        return e * (s * (f + o) + g)
    if mode == "fwd+bwd":
        return e * (s * (3 * f + 2 * o) + 2 * g)
    raise ValueError(f"mode={mode!r} must be one of {MODES}")
