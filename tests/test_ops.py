"""Every public function and implementation against the float64 sequential oracle."""

from __future__ import annotations

import chex
import jax.numpy as jnp
import numpy as np
import oracle
import pytest
from cases import MAIN_MODE, OP_NAMES, OPS, assert_close, build, call, call_oracle, long_grid, small_grid
from conftest import enable_x64

import rlscan_jax


def check_against_oracle(inp, implementation, dtype):
    out = call(inp, implementation)
    expected = call_oracle(inp)
    shape = np.shape(inp.args["inputs" if "inputs" in inp.args else "a" if "a" in inp.args else "rewards"])
    assert len(out) == len(expected)
    for o in out:
        chex.assert_shape(o, shape)
        assert o.dtype == jnp.dtype(dtype), (o.dtype, dtype)
    assert_close(out, expected, dtype)


@pytest.mark.parametrize("case", small_grid(), ids=str)
def test_matches_oracle(case, implementation):
    check_against_oracle(case.build(np.float32), implementation, np.float32)


@pytest.mark.parametrize("case", long_grid(), ids=str)
def test_matches_oracle_long(case, implementation):
    check_against_oracle(case.build(np.float32), implementation, np.float32)


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("op", OP_NAMES)
def test_16bit_inputs_keep_their_dtype_and_accumulate_in_fp32(op, dtype, implementation):
    """Output dtype is the input dtype; the values match the oracle on the rounded inputs."""
    dt = {"bf16": jnp.bfloat16, "f16": np.float16}[dtype]
    inp = build(op, MAIN_MODE[op], 63, (5,), -1, dtype=dt, gamma=0.9, lambda_=0.95)
    check_against_oracle(inp, implementation, dt)


@pytest.mark.parametrize("op", OP_NAMES)
def test_float64_with_python_float_parameters(op, implementation):
    """float64 inputs give float64-accurate results with γ, λ passed as Python floats."""
    with enable_x64():
        inp = build(op, MAIN_MODE[op], 63, (3, 4), -1, dtype=np.float64, gamma=0.9, lambda_=0.95)
        check_against_oracle(inp, implementation, np.float64)


@pytest.mark.parametrize("op", [op for op in OP_NAMES if OPS[op].has_gamma])
def test_float64_with_array_parameters(op, implementation):
    with enable_x64():
        inp = build(op, MAIN_MODE[op], 63, (3, 4), 0, dtype=np.float64)
        inp.args["gamma"] = np.float64(0.9) * np.ones((), np.float64)
        if OPS[op].has_lambda:
            inp.args["lambda_"] = np.asarray(0.95, np.float64)
        check_against_oracle(inp, implementation, np.float64)


@pytest.mark.parametrize("axis", [0, -1], ids=lambda a: f"ax{a}")
@pytest.mark.parametrize("op", [op for op in OP_NAMES if OPS[op].has_gamma])
def test_per_step_parameters(op, axis, implementation):
    """γ as a full per-step array, λ as an array broadcastable to the per-step shape."""
    inp = build(op, MAIN_MODE[op], 63, (3, 4), axis)
    rng = np.random.default_rng(7)
    inp.args["gamma"] = rng.uniform(0.0, 1.0, size=inp.step_shape).astype(np.float32)
    if OPS[op].has_lambda:
        # time-major [T, 3, 4]: one λ per column (4,); batch-major [3, 4, T]: one λ per step (T,).
        lam_shape = (4,) if axis == 0 else (63,)
        inp.args["lambda_"] = rng.uniform(0.0, 1.0, size=lam_shape).astype(np.float32)
    check_against_oracle(inp, implementation, np.float32)


@pytest.mark.parametrize("op", [op for op in OP_NAMES if not OPS[op].forward_family and op != "linear_scan"])
def test_flags_of_any_numeric_dtype(op, implementation):
    """bool, integer and float flags agree; any non-zero value is true."""
    inp = build(op, "nv", 9, (5,), 0)
    ref = call(inp, implementation)
    for cast in (lambda f: f.astype(np.int32) * 3, lambda f: f.astype(np.float32) * 0.5, lambda f: f.astype(np.uint8)):
        args = dict(inp.args)
        for k in ("terminated", "truncated"):
            args[k] = cast(inp.args[k])
        chex.assert_trees_all_equal(call(inp, implementation, args), ref)


@pytest.mark.parametrize("op", ["eligibility_traces", "episodic_cumsum"])
def test_done_of_any_numeric_dtype(op, implementation):
    inp = build(op, OPS[op].modes[0], 9, (5,), -1)
    ref = call(inp, implementation)
    for cast in (lambda f: f.astype(np.int8) * -2, lambda f: f.astype(np.float16) * 0.25):
        args = dict(inp.args, done=cast(inp.args["done"]))
        chex.assert_trees_all_equal(call(inp, implementation, args), ref)


def test_lambda_returns_ignores_values_when_next_values_is_given(implementation):
    inp = build("lambda_returns", "nv", 63, (5,), 0)
    ref = call(inp, implementation)
    values = np.random.default_rng(3).normal(size=inp.step_shape).astype(np.float32)
    chex.assert_trees_all_equal(call(inp, implementation, dict(inp.args, values=values)), ref)


def test_discounted_returns_defaults_to_a_zero_bootstrap(implementation):
    inp = build("discounted_returns", "zero", 63, (5,), 0)
    ref = call(inp, implementation)
    zero = dict(inp.args, bootstrap_value=np.zeros(5, np.float32))
    chex.assert_trees_all_equal(call(inp, implementation, zero), ref)
    assert_close(ref, call_oracle(inp), np.float32)


# ----------------------------------------------------------------------------- the oracle itself


def test_oracle_by_hand():
    """Small cases worked out by hand, so the oracle is checked before it judges anything."""
    r = np.array([1.0, 2.0, 3.0])
    v = np.array([0.5, 1.0, 2.0])
    term = np.array([False, True, False])
    # GAE, γ=0.5, λ=0.5, bootstrap 4: δ = [1+0.5·1-0.5, 2-1, 3+0.5·4-2] = [1, 1, 3]; A_1 = 1 (done).
    adv, ret = oracle.gae(r, v, terminated=term, bootstrap_value=4.0, gamma=0.5, lambda_=0.5)
    np.testing.assert_allclose(adv, [1.0 + 0.25 * 1.0, 1.0, 3.0])
    np.testing.assert_allclose(ret, adv + v)
    # Truncation at step 0 with next_values: bootstrap from next_values[0], no flow from step 1.
    nv = np.array([10.0, 20.0, 30.0])
    adv, _ = oracle.gae(r, v, truncated=[True, False, False], next_values=nv, gamma=0.5, lambda_=1.0)
    np.testing.assert_allclose(adv, [1 + 5 - 0.5, (2 + 10 - 1) + 0.5 * (3 + 15 - 2), 3 + 15 - 2])
    # Discounted returns, γ=0.5, zero bootstrap, terminated after step 1.
    np.testing.assert_allclose(oracle.discounted_returns(r, terminated=term, gamma=0.5), [2.0, 2.0, 3.0])
    # λ-returns with λ=0.5, γ=1, next_values, no ends: G_2 = 3+30, G_1 = 2 + 0.5·20 + 0.5·33.
    g = oracle.lambda_returns(r, next_values=nv, gamma=1.0, lambda_=0.5)
    np.testing.assert_allclose(g, [1 + 5 + 0.5 * 28.5, 2 + 10 + 16.5, 33.0])
    # V-trace with ρ = 2 clipped to 1 (c too), γ=1, λ=1, bootstrap 0: vs = discounted return.
    vs, pg = oracle.vtrace(r, v, np.log(2.0) * np.ones(3), bootstrap_value=0.0, gamma=1.0)
    np.testing.assert_allclose(vs, [6.0, 5.0, 3.0])
    np.testing.assert_allclose(pg, [1 + 5 - 0.5, 2 + 3 - 1, 3 - 2])
    # V-trace with ρ = 0.5 unclipped: δ = 0.5·[1.5, 3, 1]; c = 0.5.
    vs, _ = oracle.vtrace(r, v, np.log(0.5) * np.ones(3), bootstrap_value=0.0, gamma=1.0)
    d2 = 0.5
    d1 = 1.5 + 0.5 * d2
    d0 = 0.75 + 0.5 * d1
    np.testing.assert_allclose(vs, v + [d0, d1, d2])
    # Retrace with c = 1, terminated at the last step: G_2 = 3; G_1 = 2 + 20 + (G_2 - q_2) = 24.7;
    # G_0 = 1 + 10 + (G_1 - q_1).
    q = np.array([0.1, 0.2, 0.3])
    g = oracle.retrace(r, q, nv, np.zeros(3), terminated=[False, False, True], gamma=1.0)
    np.testing.assert_allclose(g, [1 + 10 + (24.7 - 0.2), 24.7, 3.0])
    # ... and with c = λ·min(1, e^{log ρ}) = 0.5·0.5 at every step, no ends: G_2 = 3 + 30.
    g = oracle.retrace(r, q, nv, np.log(0.5) * np.ones(3), gamma=1.0, lambda_=0.5)
    g1 = 2 + 20 + 0.25 * (33 - 0.3)
    np.testing.assert_allclose(g, [1 + 10 + 0.25 * (g1 - 0.2), g1, 33.0])
    # Eligibility traces with done after step 0 and initial 2: e = [1 + 0.25·2, 2, 3 + 0.25·2].
    e = oracle.eligibility_traces(r, [True, False, False], gamma=0.5, lambda_=0.5, initial=2.0)
    np.testing.assert_allclose(e, [1.5, 2.0, 3.5])
    # Episodic sums with done after step 0; initial 10.
    np.testing.assert_allclose(oracle.episodic_cumsum(r, [True, False, False], initial=10.0), [11.0, 2.0, 5.0])
    np.testing.assert_allclose(
        oracle.episodic_cumsum(r, [True, False, False], initial=10.0, reverse=True), [1.0, 15.0, 13.0]
    )
    np.testing.assert_allclose(oracle.linear_scan(r, 0.5, initial=2.0), [2.0, 3.0, 4.5])
    np.testing.assert_allclose(oracle.linear_scan(r, 0.5, initial=2.0, reverse=True), [3.0, 4.0, 4.0])


def test_oracle_agrees_with_rlax():
    """rlax (no truncation, per-trajectory) is a second independent yardstick for the oracle."""
    rlax = pytest.importorskip("rlax")  # in the test extra (CI has it); the GPU machine may not
    rng = np.random.default_rng(11)
    T = 20
    r = rng.normal(size=T)
    v = rng.normal(size=T)
    boot = rng.normal()
    term = rng.random(T) < 0.2
    gamma, lam = 0.9, 0.8
    discount = gamma * (1.0 - term)
    v_next = np.append(v[1:], boot)
    f32 = {"rtol": 1e-5, "atol": 1e-5}

    def j(x):
        return jnp.asarray(x, jnp.float32)

    adv, _ = oracle.gae(r, v, terminated=term, bootstrap_value=boot, gamma=gamma, lambda_=lam)
    expected = rlax.truncated_generalized_advantage_estimation(j(r), j(discount), lam, j(np.append(v, boot)))
    np.testing.assert_allclose(adv, expected, **f32)

    g = oracle.lambda_returns(r, v, terminated=term, bootstrap_value=boot, gamma=gamma, lambda_=lam)
    np.testing.assert_allclose(g, rlax.lambda_returns(j(r), j(discount), j(v_next), lam), **f32)

    g = oracle.discounted_returns(r, terminated=term, bootstrap_value=boot, gamma=gamma)
    np.testing.assert_allclose(g, rlax.discounted_returns(j(r), j(discount), j(boot)), **f32)

    log_rhos = rng.normal(0.0, 0.8, size=T)
    for lam_v in (0.7, 1.0):
        vs, pg = oracle.vtrace(
            r, v, log_rhos, terminated=term, bootstrap_value=boot, gamma=gamma, lambda_=lam_v, rho_clip=1.5
        )
        out = rlax.vtrace_td_error_and_advantage(
            j(v), j(v_next), j(r), j(discount), j(np.exp(log_rhos)), lam_v, 1.5, 1.0, stop_target_gradients=False
        )
        np.testing.assert_allclose(vs, out.errors + j(v), **f32)
        if lam_v == 1.0:  # rlax mixes λ into its policy-gradient bootstrap; IMPALA (and DESIGN) do not
            np.testing.assert_allclose(pg, out.pg_advantage, **f32)


def test_public_functions_have_an_oracle():
    for name in rlscan_jax.__all__:
        if name[0].islower():
            assert callable(getattr(oracle, name))
