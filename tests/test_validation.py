"""Input validation: every bad call raises the right exception, with a message naming the argument."""

from __future__ import annotations

import os

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cases import MAIN_MODE, OP_NAMES, build, call

import rlscan_jax

rng = np.random.default_rng(0)
T, B = 4, 3
r = rng.normal(size=(T, B)).astype(np.float32)
v = rng.normal(size=(T, B)).astype(np.float32)
nv = rng.normal(size=(T, B)).astype(np.float32)
lr = rng.normal(size=(T, B)).astype(np.float32)
q = rng.normal(size=(T, B)).astype(np.float32)
boot = rng.normal(size=(B,)).astype(np.float32)
term = rng.random((T, B)) < 0.3
ints = np.ones((T, B), np.int32)
empty = np.zeros((0, B), np.float32)

gae = rlscan_jax.gae
vtrace = rlscan_jax.vtrace
retrace = rlscan_jax.retrace
lam_ret = rlscan_jax.lambda_returns
disc = rlscan_jax.discounted_returns
elig = rlscan_jax.eligibility_traces
cumsum = rlscan_jax.episodic_cumsum
lin = rlscan_jax.linear_scan

# (id, call, exception type, regex the message must match: it names the offending argument)
CASES = [
    # --- gae
    ("gae-scalar-rewards", lambda: gae(np.float32(1.0), np.float32(0.0), bootstrap_value=0.0), ValueError, "rewards"),
    ("gae-values-rank", lambda: gae(r, v[:, 0], bootstrap_value=boot), ValueError, r"\bvalues\b"),
    ("gae-values-shape", lambda: gae(r, v[:3], bootstrap_value=boot), ValueError, r"\bvalues\b"),
    ("gae-next_values-shape", lambda: gae(r, v, next_values=nv[:, :2]), ValueError, "next_values"),
    ("gae-terminated-shape", lambda: gae(r, v, terminated=term[:3], bootstrap_value=boot), ValueError, "terminated"),
    ("gae-truncated-shape", lambda: gae(r, v, truncated=term.T, next_values=nv), ValueError, "truncated"),
    ("gae-bootstrap-shape", lambda: gae(r, v, bootstrap_value=np.zeros(T, np.float32)), ValueError, "bootstrap_value"),
    ("gae-bootstrap-rank", lambda: gae(r, v, bootstrap_value=np.zeros((B, 2), np.float32)), ValueError, "bootstrap"),
    ("gae-int-rewards", lambda: gae(ints, v, bootstrap_value=boot), TypeError, "rewards"),
    ("gae-complex-rewards", lambda: gae(r.astype(np.complex64), v, bootstrap_value=boot), TypeError, "rewards"),
    ("gae-bool-rewards", lambda: gae(term, v, bootstrap_value=boot), TypeError, "rewards"),
    ("gae-int-values", lambda: gae(r, ints, bootstrap_value=boot), TypeError, r"\bvalues\b"),
    ("gae-int-bootstrap", lambda: gae(r, v, bootstrap_value=np.ones(B, np.int32)), TypeError, "bootstrap_value"),
    ("gae-string-rewards", lambda: gae("abc", v, bootstrap_value=boot), TypeError, "rewards"),
    ("gae-ragged-rewards", lambda: gae([[1.0, 2.0], [1.0]], v, bootstrap_value=boot), TypeError, "rewards"),
    ("gae-empty-time", lambda: gae(empty, empty, bootstrap_value=boot), ValueError, "rewards"),
    ("gae-time_axis-high", lambda: gae(r, v, bootstrap_value=np.zeros(T), time_axis=2), ValueError, "time_axis"),
    ("gae-time_axis-low", lambda: gae(r, v, bootstrap_value=boot, time_axis=-3), ValueError, "time_axis"),
    ("gae-time_axis-float", lambda: gae(r, v, bootstrap_value=boot, time_axis=1.0), TypeError, "time_axis"),
    ("gae-truncated-no-next_values", lambda: gae(r, v, truncated=term, bootstrap_value=boot), ValueError, "truncated"),
    ("gae-both-bootstraps", lambda: gae(r, v, next_values=nv, bootstrap_value=boot), ValueError, "bootstrap_value"),
    ("gae-missing-bootstrap", lambda: gae(r, v), ValueError, "bootstrap_value"),
    ("gae-gamma-shape", lambda: gae(r, v, bootstrap_value=boot, gamma=np.ones(5, np.float32)), ValueError, "gamma"),
    ("gae-lambda-shape", lambda: gae(r, v, bootstrap_value=boot, lambda_=np.ones((T, 2))), ValueError, "lambda_"),
    ("gae-gamma-int-array", lambda: gae(r, v, bootstrap_value=boot, gamma=np.ones(B, np.int32)), TypeError, "gamma"),
    ("gae-gamma-bool", lambda: gae(r, v, bootstrap_value=boot, gamma=True), TypeError, "gamma"),
    (
        "gae-complex-flags",
        lambda: gae(r, v, terminated=r.astype(np.complex64), bootstrap_value=boot),
        TypeError,
        "terminated",
    ),
    # --- vtrace
    ("vtrace-log_rhos-shape", lambda: vtrace(r, v, lr[:, :1], bootstrap_value=boot), ValueError, "log_rhos"),
    ("vtrace-int-log_rhos", lambda: vtrace(r, v, ints, bootstrap_value=boot), TypeError, "log_rhos"),
    ("vtrace-values-shape", lambda: vtrace(r, v.T, lr, bootstrap_value=boot), ValueError, r"\bvalues\b"),
    ("vtrace-missing-bootstrap", lambda: vtrace(r, v, lr), ValueError, "bootstrap_value"),
    (
        "vtrace-both-bootstraps",
        lambda: vtrace(r, v, lr, next_values=nv, bootstrap_value=boot),
        ValueError,
        "bootstrap_value",
    ),
    (
        "vtrace-truncated-no-next_values",
        lambda: vtrace(r, v, lr, truncated=term, bootstrap_value=boot),
        ValueError,
        "next_values",
    ),
    (
        "vtrace-rho_clip-shape",
        lambda: vtrace(r, v, lr, bootstrap_value=boot, rho_clip=np.ones(B)),
        ValueError,
        "rho_clip",
    ),
    (
        "vtrace-c_clip-shape",
        lambda: vtrace(r, v, lr, bootstrap_value=boot, c_clip=np.ones((T, B))),
        ValueError,
        "c_clip",
    ),
    (
        "vtrace-pg_rho_clip-int",
        lambda: vtrace(r, v, lr, bootstrap_value=boot, pg_rho_clip=np.array(1, np.int32)),
        TypeError,
        "pg_rho_clip",
    ),
    (
        "vtrace-lambda-shape",
        lambda: vtrace(r, v, lr, bootstrap_value=boot, lambda_=np.ones(T + 1)),
        ValueError,
        "lambda_",
    ),
    ("vtrace-time_axis", lambda: vtrace(r, v, lr, bootstrap_value=boot, time_axis=5), ValueError, "time_axis"),
    # --- retrace
    ("retrace-q_values-shape", lambda: retrace(r, q[:2], nv, lr), ValueError, "q_values"),
    ("retrace-next_values-missing", lambda: retrace(r, q, None, lr), TypeError, "next_values"),
    ("retrace-next_values-shape", lambda: retrace(r, q, nv[:, 0], lr), ValueError, "next_values"),
    ("retrace-log_rhos-shape", lambda: retrace(r, q, nv, lr[None]), ValueError, "log_rhos"),
    ("retrace-int-q_values", lambda: retrace(r, ints, nv, lr), TypeError, "q_values"),
    ("retrace-bool-rewards", lambda: retrace(term, q, nv, lr), TypeError, "rewards"),
    ("retrace-c_clip-shape", lambda: retrace(r, q, nv, lr, c_clip=np.ones(2)), ValueError, "c_clip"),
    ("retrace-terminated-shape", lambda: retrace(r, q, nv, lr, terminated=term[0]), ValueError, "terminated"),
    ("retrace-gamma-shape", lambda: retrace(r, q, nv, lr, gamma=np.ones((2, T, B), np.float32)), ValueError, "gamma"),
    ("retrace-empty-time", lambda: retrace(empty, empty, empty, empty), ValueError, "rewards"),
    # --- lambda_returns
    ("lambda_returns-missing-bootstrap", lambda: lam_ret(r, v), ValueError, "bootstrap_value"),
    ("lambda_returns-no-values", lambda: lam_ret(r, bootstrap_value=boot), ValueError, r"\bvalues\b"),
    (
        "lambda_returns-both-bootstraps",
        lambda: lam_ret(r, v, next_values=nv, bootstrap_value=boot),
        ValueError,
        "bootstrap_value",
    ),
    (
        "lambda_returns-truncated-no-next_values",
        lambda: lam_ret(r, v, truncated=term, bootstrap_value=boot),
        ValueError,
        "next_values",
    ),
    ("lambda_returns-values-shape", lambda: lam_ret(r, v[1:], bootstrap_value=boot), ValueError, r"\bvalues\b"),
    ("lambda_returns-next_values-shape", lambda: lam_ret(r, next_values=nv.T), ValueError, "next_values"),
    ("lambda_returns-int-rewards", lambda: lam_ret(ints, next_values=nv), TypeError, "rewards"),
    (
        "lambda_returns-lambda-int",
        lambda: lam_ret(r, next_values=nv, lambda_=np.ones(B, np.int8)),
        TypeError,
        "lambda_",
    ),
    # --- discounted_returns
    ("discounted-truncated-no-next_values", lambda: disc(r, truncated=term), ValueError, "next_values"),
    (
        "discounted-both-bootstraps",
        lambda: disc(r, next_values=nv, bootstrap_value=boot),
        ValueError,
        "bootstrap_value",
    ),
    ("discounted-bootstrap-shape", lambda: disc(r, bootstrap_value=np.zeros((B, 1))), ValueError, "bootstrap_value"),
    ("discounted-next_values-shape", lambda: disc(r, next_values=nv[:, :, None]), ValueError, "next_values"),
    ("discounted-gamma-shape", lambda: disc(r, gamma=np.ones((T, B + 1), np.float32)), ValueError, "gamma"),
    ("discounted-empty-time", lambda: disc(empty), ValueError, "rewards"),
    ("discounted-scalar-rewards", lambda: disc(np.float32(1.0)), ValueError, "rewards"),
    ("discounted-complex-rewards", lambda: disc(r.astype(np.complex64)), TypeError, "rewards"),
    ("discounted-time_axis", lambda: disc(r, time_axis=-3), ValueError, "time_axis"),
    ("discounted-terminated-dtype", lambda: disc(r, terminated=np.full((T, B), "x")), TypeError, "terminated"),
    # --- eligibility_traces
    ("elig-done-not-leading", lambda: elig(r, term.T, gamma=0.9, lambda_=0.9), ValueError, "done"),
    ("elig-done-too-long", lambda: elig(r, np.zeros((T, B, 2), bool), gamma=0.9, lambda_=0.9), ValueError, "done"),
    ("elig-scalar-done", lambda: elig(r, np.bool_(True), gamma=0.9, lambda_=0.9), ValueError, "done"),
    ("elig-complex-done", lambda: elig(r, r.astype(np.complex64), gamma=0.9, lambda_=0.9), TypeError, "done"),
    ("elig-initial-shape", lambda: elig(r, term, gamma=0.9, lambda_=0.9, initial=np.ones(T)), ValueError, "initial"),
    (
        "elig-int-initial",
        lambda: elig(r, term, gamma=0.9, lambda_=0.9, initial=np.ones(B, np.int32)),
        TypeError,
        "initial",
    ),
    ("elig-int-inputs", lambda: elig(ints, term, gamma=0.9, lambda_=0.9), TypeError, "inputs"),
    ("elig-scalar-inputs", lambda: elig(np.float32(1.0), gamma=0.9, lambda_=0.9), ValueError, "inputs"),
    ("elig-empty-time", lambda: elig(empty, gamma=0.9, lambda_=0.9), ValueError, "inputs"),
    ("elig-gamma-shape", lambda: elig(r, term, gamma=np.ones(T), lambda_=0.9), ValueError, "gamma"),
    ("elig-lambda-bool", lambda: elig(r, term, gamma=0.9, lambda_=False), TypeError, "lambda_"),
    ("elig-time_axis", lambda: elig(r, term, gamma=0.9, lambda_=0.9, time_axis=2), ValueError, "time_axis"),
    # --- episodic_cumsum
    ("cumsum-reverse-int", lambda: cumsum(r, term, reverse=1), TypeError, "reverse"),
    ("cumsum-done-shape", lambda: cumsum(r, term[:, :2]), ValueError, "done"),
    ("cumsum-initial-shape", lambda: cumsum(r, term, initial=np.ones((B, 2))), ValueError, "initial"),
    ("cumsum-bool-inputs", lambda: cumsum(term), TypeError, "inputs"),
    ("cumsum-time_axis-str", lambda: cumsum(r, time_axis="0"), TypeError, "time_axis"),
    ("cumsum-empty-time", lambda: cumsum(empty, np.zeros((0, B), bool)), ValueError, "inputs"),
    # --- linear_scan
    ("linear_scan-b-shape", lambda: lin(r, np.ones((T, B, 1))), ValueError, r"\bb\.shape"),
    ("linear_scan-b-mismatch", lambda: lin(r, np.ones((T + 1, B))), ValueError, r"\bb\.shape"),
    ("linear_scan-int-a", lambda: lin(ints, r), TypeError, r"\ba\.dtype"),
    ("linear_scan-int-b", lambda: lin(r, ints), TypeError, r"\bb\.dtype"),
    ("linear_scan-initial-shape", lambda: lin(r, r, initial=np.ones(T)), ValueError, "initial"),
    ("linear_scan-scalar-a", lambda: lin(np.float32(1.0), np.float32(1.0)), ValueError, r"\ba\.shape"),
    ("linear_scan-empty-time", lambda: lin(empty, empty), ValueError, r"\ba\.shape"),
    ("linear_scan-time_axis", lambda: lin(r, r, time_axis=2), ValueError, "time_axis"),
    ("linear_scan-reverse-str", lambda: lin(r, r, reverse="yes"), TypeError, "reverse"),
]

# An unknown implementation, for every op.
for _op in OP_NAMES:
    CASES.append(
        (
            f"{_op}-unknown-implementation",
            lambda op=_op: call(build(op, MAIN_MODE[op], 4, (3,)), "pallas"),
            ValueError,
            "implementation",
        )
    )

# "triton" where it cannot run (a CPU backend without Triton's interpreter) raises, never falls back.
TRITON_CANNOT_RUN = jax.default_backend() != "gpu" and os.environ.get("TRITON_INTERPRET", "0") in ("", "0")
if TRITON_CANNOT_RUN:
    for _op in OP_NAMES:
        CASES.append(
            (
                f"{_op}-triton-on-cpu",
                lambda op=_op: call(build(op, MAIN_MODE[op], 4, (3,)), "triton"),
                ValueError,
                "triton",
            )
        )


def test_table_is_large():
    assert len(CASES) >= 40
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize(("fn", "exc", "match"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_raises(fn, exc, match):
    with pytest.raises(exc, match=match):
        jax.block_until_ready(fn())


# ----------------------------------------------------------------------------- accepted inputs


@pytest.mark.parametrize("op", OP_NAMES)
def test_numpy_arrays_and_python_lists_are_accepted(op):
    """NumPy arrays and nested Python lists (converted as jnp.asarray would) give the jnp result."""
    inp = build(op, MAIN_MODE[op], 5, (2,), 0)
    as_jnp = {k: jnp.asarray(v) if isinstance(v, np.ndarray) else v for k, v in inp.args.items()}
    expected = call(inp, "sequential", as_jnp)
    chex.assert_trees_all_close(call(inp, "sequential"), expected, rtol=0, atol=0)
    as_lists = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in inp.args.items()}
    chex.assert_trees_all_close(call(inp, "sequential", as_lists), expected, rtol=1e-6, atol=1e-6)


def test_python_scalars_are_accepted_as_bootstrap_and_initial(implementation):
    x = [1.0, 2.0, 3.0]
    out = rlscan_jax.gae(x, [0.0, 0.0, 0.0], bootstrap_value=1.0, gamma=1.0, lambda_=1.0, implementation=implementation)
    np.testing.assert_allclose(out.advantages, [7.0, 6.0, 4.0])
    out = rlscan_jax.episodic_cumsum(x, [False, True, False], initial=10.0, implementation=implementation)
    np.testing.assert_allclose(out, [11.0, 13.0, 3.0])
    out = rlscan_jax.linear_scan(x, 0.5, initial=2.0, implementation=implementation)
    np.testing.assert_allclose(out, [2.0, 3.0, 4.5])


def test_numpy_scalar_parameters_are_accepted(implementation):
    x = np.ones(3, np.float32)
    out = rlscan_jax.discounted_returns(x, gamma=np.float64(0.5), implementation=implementation)
    np.testing.assert_allclose(out, [1.75, 1.5, 1.0])
    out = rlscan_jax.discounted_returns(x, gamma=np.asarray(0.5, np.float32), implementation=implementation)
    np.testing.assert_allclose(out, [1.75, 1.5, 1.0])
    out = rlscan_jax.discounted_returns(x, gamma=1, implementation=implementation)  # a Python int is a number
    np.testing.assert_allclose(out, [3.0, 2.0, 1.0])


@pytest.mark.parametrize("op", OP_NAMES)
def test_validation_happens_at_trace_time_under_jit(op):
    """Shapes are checked while tracing: a jitted call fails the same way, before running."""
    inp = build(op, MAIN_MODE[op], 4, (3,))
    first = next(k for k in ("rewards", "inputs", "a") if k in inp.args)
    args = {k: v for k, v in inp.args.items() if isinstance(v, np.ndarray)}
    static = {k: v for k, v in inp.args.items() if not isinstance(v, np.ndarray)}
    args[first] = args[first][:, :2]  # the batch no longer matches the other inputs / the flags

    @jax.jit
    def f(a):
        return inp.spec.fn(**a, **static, implementation="sequential")

    with pytest.raises(ValueError, match=r"\.shape="):
        f(args)


def test_default_implementation_runs_on_cpu():
    """implementation=None picks a runnable implementation (never an error on a CPU machine)."""
    out = rlscan_jax.discounted_returns(np.ones(3, np.float32), gamma=0.5)
    np.testing.assert_allclose(out, [1.75, 1.5, 1.0])
