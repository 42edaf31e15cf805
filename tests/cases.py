"""Shared test machinery: op specifications, random inputs, the case grid and tolerances.

Inputs are built in NumPy in the layout the library is called with (time on `axis`). The same
inputs go to the library (`call`) and, with the time axis moved to 0, to the float64 oracle
(`call_oracle`). Nothing here computes an expected value from the library.
"""

from __future__ import annotations

import dataclasses
import math
import zlib

import chex
import jax.numpy as jnp
import numpy as np
import oracle

import rlscan_jax

# ----------------------------------------------------------------------------- tolerances

# rtol, and atol relative to the magnitude of the expected values (see `assert_close`).
TOLERANCES = {
    np.dtype(np.float64): {"rtol": 1e-10, "atol": 1e-10},
    np.dtype(np.float32): {"rtol": 2e-5, "atol": 2e-5},
    np.dtype(jnp.bfloat16): {"rtol": 1.6e-2, "atol": 1.6e-2},
    np.dtype(np.float16): {"rtol": 2e-3, "atol": 2e-3},
}

DTYPES = {"f64": np.float64, "f32": np.float32, "bf16": jnp.bfloat16, "f16": np.float16}


def tolerance(dtype) -> dict:
    return TOLERANCES[np.dtype(dtype)]


def assert_close(actual, expected, dtype, *, scale=None, msg=""):
    """`actual` (any tree of arrays) matches the float64 `expected` within `dtype`'s tolerance.

    The absolute tolerance is scaled by the largest |expected| (at least 1): the outputs are
    sums of many terms and their rounding error grows with their size.
    """
    actual = tuple(np.asarray(a, dtype=np.float64) for a in as_tuple(actual))
    expected = tuple(np.asarray(e, dtype=np.float64) for e in as_tuple(expected))
    tol = tolerance(dtype)
    if scale is None:
        finite = [np.abs(e[np.isfinite(e)]).max(initial=0.0) for e in expected]
        scale = max(1.0, *finite)
    chex.assert_trees_all_close(actual, expected, rtol=tol["rtol"], atol=tol["atol"] * scale, custom_message=msg)


def assert_equal(actual, expected):
    """Bit-for-bit equality of two trees of arrays (NaN equals NaN)."""
    for a, e in zip(as_tuple(actual), as_tuple(expected), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(e))


def as_tuple(out) -> tuple:
    if isinstance(out, tuple):
        return tuple(out)
    return (out,)


# ----------------------------------------------------------------------------- op specs

PER_STEP = ("rewards", "values", "next_values", "log_rhos", "q_values", "a", "b", "inputs")
FLAGS = ("terminated", "truncated", "done")
EDGE = ("bootstrap_value", "initial")
PARAMS = ("gamma", "lambda_")
STATIC = ("rho_clip", "c_clip", "pg_rho_clip", "reverse")


@dataclasses.dataclass(frozen=True)
class OpSpec:
    name: str
    modes: tuple[str, ...]
    has_gamma: bool
    has_lambda: bool
    forward_family: bool = False  # eligibility traces / episodic sums: the per-step shape is done's

    @property
    def fn(self):
        return getattr(rlscan_jax, self.name)

    @property
    def oracle(self):
        return getattr(oracle, self.name)


OPS = {
    spec.name: spec
    for spec in (
        OpSpec("gae", ("nv", "boot"), True, True),
        OpSpec("vtrace", ("nv", "boot"), True, True),
        OpSpec("retrace", ("nv", "noflags"), True, True),
        OpSpec("lambda_returns", ("nv", "boot"), True, True),
        OpSpec("discounted_returns", ("nv", "boot", "zero"), True, False),
        OpSpec("eligibility_traces", ("done", "feat", "nodone"), True, True, forward_family=True),
        OpSpec("episodic_cumsum", ("fwd", "rev", "fwd-feat", "rev-init"), False, False, forward_family=True),
        # b one a step (rev-bcast, [T, 1, ...]), one a row (fwd-row, [1, *B]), one value (rev-scalar).
        OpSpec("linear_scan", ("fwd", "rev", "fwd-init", "rev-bcast", "fwd-row", "rev-scalar"), False, False),
    )
}
OP_NAMES = tuple(OPS)

# The mode of each op that exercises the most inputs (used where one mode per op is enough).
MAIN_MODE = {
    "gae": "nv",
    "vtrace": "nv",
    "retrace": "nv",
    "lambda_returns": "nv",
    "discounted_returns": "nv",
    "eligibility_traces": "feat",
    "episodic_cumsum": "rev-init",
    "linear_scan": "fwd-init",
}
# A second mode per op, with the other way of giving the bootstrap (or the other direction).
OTHER_MODE = {
    "gae": "boot",
    "vtrace": "boot",
    "retrace": "noflags",
    "lambda_returns": "boot",
    "discounted_returns": "boot",
    "eligibility_traces": "done",
    "episodic_cumsum": "fwd-feat",
    "linear_scan": "rev-bcast",
}


# ----------------------------------------------------------------------------- inputs


@dataclasses.dataclass
class Inputs:
    """One call's arguments in the library's layout (time on `axis`) plus what generated them."""

    op: str
    mode: str
    axis: int
    step_shape: tuple[int, ...]
    args: dict
    # A gradient's arguments and the outputs its loss uses, where not every floating array and
    # every output (tests/triton_variants.py: the fused backwards that write only some gradients).
    wrt: tuple[str, ...] | None = None
    used: tuple[int, ...] | None = None

    @property
    def spec(self) -> OpSpec:
        return OPS[self.op]

    @property
    def time_pos(self) -> int:
        return self.axis % len(self.step_shape)

    def param_shape(self, form: str) -> list[int]:
        """The shape of a parameter (γ, λ) given one a row ("row"), one a time step ("time") or
        per step ("full"), in this call's layout."""
        pos, step = self.time_pos, self.step_shape
        if form == "full":
            return list(step)
        return [(d if i == pos else 1) if form == "time" else (1 if i == pos else d) for i, d in enumerate(step)]

    def float_names(self) -> list[str]:
        """Names of the floating array arguments present (the differentiable ones)."""
        return [
            k
            for k, v in self.args.items()
            if v is not None and k not in FLAGS and k not in STATIC and not isinstance(v, float)
        ]


def seed_of(text: str) -> int:
    return zlib.crc32(text.encode())


def episode_flags(rng, T: int, batch: tuple[int, ...], truncation: bool):
    """Random terminated / truncated flags [T, *B] (time-major), with special rows.

    With at least 4 rows: row 0 never ends, row 1 ends at every step, row 2 is truncated at the
    last step (terminated where truncation is not allowed), row 3 is terminated at the last step.
    A single row gets a random flag (or none) at its last step.
    """
    rows = math.prod(batch)
    term = rng.random((T, rows)) < 0.12
    trunc = (rng.random((T, rows)) < 0.12) & ~term if truncation else np.zeros((T, rows), bool)
    if rows >= 4:
        term[:, 0] = trunc[:, 0] = False
        term[:, 1], trunc[:, 1] = True, False
        if truncation:
            term[1::2, 1], trunc[1::2, 1] = False, True
        term[-1, 2], trunc[-1, 2] = not truncation, truncation
        term[-1, 3], trunc[-1, 3] = True, False
    else:
        k = rng.integers(3)
        term[-1] = k == 1
        trunc[-1] = (k == 2) and truncation
    return term.reshape((T, *batch)), trunc.reshape((T, *batch))


def build(
    op: str,
    mode: str,
    T: int,
    batch: tuple[int, ...] = (),
    axis: int = 0,
    *,
    dtype=np.float32,
    gamma=0.9,
    lambda_=0.95,
    seed: int | None = None,
) -> Inputs:
    """Random inputs for `op` in `mode`, per-step arrays shaped [T, *B] (axis=0) or [*B, T] (axis=-1)."""
    spec = OPS[op]
    if mode not in spec.modes:
        raise ValueError(f"unknown mode {mode!r} for {op}")
    if seed is None:
        seed = seed_of(f"{op}-{mode}-{T}-{batch}-{axis}")
    rng = np.random.default_rng(seed)
    tm = (T, *batch)  # time-major shape
    feat = (2,) if "feat" in mode else ()

    def normal(shape, scale=1.0):
        return rng.normal(0.0, scale, size=shape)

    a: dict = {}
    if spec.forward_family or op == "linear_scan":
        if op == "linear_scan":
            a["a"] = normal(tm)
            b_shape = {"rev-bcast": (T,) + (1,) * len(batch), "fwd-row": (1, *batch), "rev-scalar": ()}.get(mode, tm)
            a["b"] = rng.uniform(-1.0, 1.0, size=b_shape)
        else:
            a["inputs"] = normal(tm + feat)
            if mode != "nodone":
                term, trunc = episode_flags(rng, T, batch, truncation=True)
                a["done"] = term | trunc
        if "init" in mode or "feat" in mode or mode in ("nodone", "rev-bcast", "fwd-row"):
            a["initial"] = normal(tuple(batch) + feat)
        if mode.startswith("rev"):
            a["reverse"] = True
    else:
        truncation = mode in ("nv",)
        term, trunc = episode_flags(rng, T, batch, truncation)
        a["rewards"] = normal(tm)
        if op == "retrace":
            a["q_values"] = normal(tm)
            a["next_values"] = normal(tm)
            a["log_rhos"] = normal(tm, 0.8)
            if mode == "noflags":
                a["c_clip"] = None
            else:
                a["terminated"], a["truncated"] = term, trunc
        else:
            if op in ("gae", "vtrace") or (op == "lambda_returns" and mode == "boot"):
                a["values"] = normal(tm)
            if op == "vtrace":
                a["log_rhos"] = normal(tm, 0.8)
                if mode == "boot":
                    a["rho_clip"], a["c_clip"], a["pg_rho_clip"] = 2.0, None, 0.5
            a["terminated"] = term
            if mode == "nv":
                a["truncated"] = trunc
                a["next_values"] = normal(tm)
            elif mode == "boot":
                a["bootstrap_value"] = normal(batch)
    if spec.has_gamma and gamma is not None:  # None: the library's (and the oracle's) default
        a["gamma"] = gamma
    if spec.has_lambda and lambda_ is not None:
        a["lambda_"] = lambda_
    step_shape = tm
    args = {}
    for k, v in a.items():
        if isinstance(v, np.ndarray):
            if (k in PER_STEP or k in FLAGS) and v.ndim:
                v = np.moveaxis(v, 0, axis % len(tm)) if axis % len(tm) else v
            if k not in FLAGS:
                v = v.astype(dtype)
        args[k] = v
    if axis % len(tm):
        step_shape = tuple(np.moveaxis(np.empty(tm, np.int8), 0, axis % len(tm)).shape)
    return Inputs(op=op, mode=mode, axis=axis, step_shape=step_shape, args=args)


# ----------------------------------------------------------------------------- calls


def call(inp: Inputs, implementation: str, args: dict | None = None, **kwargs):
    """The library on `inp` (or on `args`, a variant of `inp.args`) as a tuple of outputs."""
    args = dict(inp.args if args is None else args)
    out = inp.spec.fn(**args, time_axis=inp.axis, implementation=implementation, **kwargs)
    return as_tuple(out)


def oracle_args(inp: Inputs, args: dict | None = None, xp=np) -> dict:
    """`args` in the oracle's layout: time on axis 0, per-step parameters broadcast in full."""
    args = dict(inp.args if args is None else args)
    p = inp.time_pos
    out = {}
    for k, v in args.items():
        if v is None or isinstance(v, (bool, float, int)):
            out[k] = v
        elif k in FLAGS:
            out[k] = np.moveaxis(np.asarray(v), p, 0)
        elif k in PARAMS:
            v = xp.asarray(v) if xp is not np else np.asarray(v, np.float64)
            if v.ndim == 0:
                out[k] = v
            else:
                out[k] = xp.moveaxis(xp.broadcast_to(v, inp.step_shape), p, 0)
        elif k == "b":
            b = v if xp is not np else np.asarray(v, np.float64)
            out[k] = xp.moveaxis(xp.broadcast_to(b, np.shape(args["a"])), p, 0)
        elif k in PER_STEP:
            out[k] = xp.moveaxis(v if xp is not np else np.asarray(v, np.float64), p, 0)
        else:
            out[k] = v if xp is not np else np.asarray(v, np.float64)
    return out


def call_oracle(inp: Inputs, args: dict | None = None, xp=np) -> tuple:
    """The float64 oracle on the same inputs, outputs moved back to the library's layout."""
    out = as_tuple(inp.spec.oracle(**oracle_args(inp, args, xp), xp=xp))
    return tuple(xp.moveaxis(o, 0, inp.time_pos) for o in out)


# ----------------------------------------------------------------------------- the grid


@dataclasses.dataclass(frozen=True)
class Case:
    op: str
    mode: str
    T: int
    batch: tuple[int, ...]
    axis: int
    gamma: float | None = None
    lambda_: float | None = None

    @property
    def id(self) -> str:
        b = "x".join(map(str, self.batch)) if self.batch else "none"
        parts = [self.op, f"T{self.T}", f"B{b}", f"ax{self.axis}"]
        if self.gamma is not None:
            parts.append(f"g{self.gamma:g}")
        if self.lambda_ is not None:
            parts.append(f"l{self.lambda_:g}")
        parts.append(self.mode)
        return "-".join(parts)

    def __str__(self) -> str:
        return self.id

    def build(self, dtype=np.float32) -> Inputs:
        return build(
            self.op,
            self.mode,
            self.T,
            self.batch,
            self.axis,
            dtype=dtype,
            gamma=self.gamma,
            lambda_=self.lambda_,
            seed=seed_of(self.id),
        )


GRID_VALUES = (0.0, 0.9, 1.0)

# (batch, time_axis) layouts per T; a [T] input has only one layout.
SMALL_LAYOUTS = {
    1: (((), 0), ((5,), 0), ((3, 4), -1)),
    2: (((), 0), ((5,), -1), ((3, 4), 0)),
    63: (((), 0), ((5,), 0), ((5,), -1), ((3, 4), 0), ((3, 4), -1)),
}


def small_grid() -> list[Case]:
    """Every op and mode at T in {1, 2, 63}, over all layouts, with the full γ × λ grid.

    Each compiled configuration costs seconds (mostly the associative scan) while a new γ or λ
    costs nothing (they are traced), so modes take turns over the layouts of each T instead of
    running every mode on every layout; the γ × λ grid is complete on every pair.
    """
    out = []
    for op, spec in OPS.items():
        for T, layouts in SMALL_LAYOUTS.items():
            n = max(len(layouts), len(spec.modes))
            for k in range(n):
                batch, axis = layouts[k % len(layouts)]
                mode = spec.modes[(k + T) % len(spec.modes)]
                for g in GRID_VALUES if spec.has_gamma else (None,):
                    for lam in GRID_VALUES if spec.has_lambda else (None,):
                        out.append(Case(op, mode, T, batch, axis, g, lam))
    return out


def long_grid() -> list[Case]:
    """T = 1000: two representative configurations per op (the associative scan compiles slowly)."""
    out = []
    for op, spec in OPS.items():
        g1, l1 = (0.99 if spec.has_gamma else None), (0.95 if spec.has_lambda else None)
        g2, l2 = (1.0 if spec.has_gamma else None), (1.0 if spec.has_lambda else None)
        out.append(Case(op, MAIN_MODE[op], 1000, (), 0, g1, l1))
        out.append(Case(op, OTHER_MODE[op], 1000, (3, 4), -1, g2, l2))
    return out
