"""Gradients: jax.vjp with random cotangents w.r.t. every floating input, against the oracle's
own autodiff (the NumPy loops run in jax.numpy), across implementations, and against finite
differences in float64."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cases import FLAGS, MAIN_MODE, OPS, OTHER_MODE, STATIC, build, call_oracle
from conftest import IMPLEMENTATIONS, enable_x64
from jax.test_util import check_grads

OP_MODES = [(op, mode) for op, spec in OPS.items() for mode in spec.modes]
OP_MODE_IDS = [f"{op}-{mode}" for op, mode in OP_MODES]
PARAM_OPS = [op for op in OPS if OPS[op].has_gamma]
FD_OP_MODES = [(op, m[op]) for op in OPS for m in (MAIN_MODE, OTHER_MODE)]


def away_from_kinks(rng, shape):
    """log-ratios with |log ρ| in [0.15, 0.55] ∪ [0.85, 1.3]: clear of the clip kinks at log 1,
    log 2 and log 0.5 (min(clip, e^x) has no derivative there)."""
    mag = np.where(rng.random(shape) < 0.5, rng.uniform(0.15, 0.55, shape), rng.uniform(0.85, 1.3, shape))
    return np.where(rng.random(shape) < 0.5, -mag, mag)


def grad_inputs(op, mode, T, batch, axis, dtype, *, per_step_params=False, seed=0):
    """(inp, diff, fixed): diff holds every floating input (γ and λ as traced scalars or arrays)."""
    inp = build(op, mode, T, batch, axis, dtype=np.float64, gamma=0.9, lambda_=0.8, seed=seed)
    rng = np.random.default_rng(seed + 1)
    if "log_rhos" in inp.args:
        inp.args["log_rhos"] = away_from_kinks(rng, inp.args["log_rhos"].shape)
    for name in ("gamma", "lambda_"):
        if name in inp.args:
            shape = inp.step_shape if per_step_params else ()
            inp.args[name] = rng.uniform(0.3, 0.95, size=shape)
    diff, fixed = {}, {}
    for k, v in inp.args.items():
        if isinstance(v, np.ndarray) and k not in FLAGS and k not in STATIC:
            diff[k] = jnp.asarray(v.astype(dtype))
        else:
            fixed[k] = v
    return inp, diff, fixed


def library_fn(inp, fixed, implementation):
    def f(diff):
        out = inp.spec.fn(**diff, **fixed, time_axis=inp.axis, implementation=implementation)
        return tuple(out) if isinstance(out, tuple) else (out,)

    return f


def oracle_fn(inp, fixed):
    def f(diff):
        return call_oracle(inp, {**fixed, **diff}, xp=jnp)

    return f


def vjp_with_random_cotangents(f, diff, seed=0, jit=False):
    """(outputs, input cotangents) for random output cotangents; `jit` compiles it as one program."""
    shapes = jax.eval_shape(f, diff)
    rng = np.random.default_rng(seed)
    cot = tuple(jnp.asarray(rng.normal(size=o.shape), o.dtype) for o in shapes)

    def run(d):
        out, f_vjp = jax.vjp(f, d)
        return out, f_vjp(cot)[0]

    return jax.jit(run)(diff) if jit else run(diff)


# Each op-mode with one layout; both layouts are covered across them.
OP_MODES_AXES = [(op, mode, (0, -1)[i % 2]) for i, (op, mode) in enumerate(OP_MODES)]


@pytest.mark.parametrize(("op", "mode", "axis"), OP_MODES_AXES, ids=[f"{o}-{m}-ax{a}" for o, m, a in OP_MODES_AXES])
def test_vjp_matches_oracle_autodiff(op, mode, axis, implementation):
    with enable_x64():
        inp, diff, fixed = grad_inputs(op, mode, 6, (3,), axis, np.float64)
        out, grads = vjp_with_random_cotangents(library_fn(inp, fixed, implementation), diff, jit=True)
        expected_out, expected = vjp_with_random_cotangents(oracle_fn(inp, fixed), diff)
        assert set(grads) == set(diff)
        chex.assert_trees_all_close(out, expected_out, rtol=1e-10, atol=1e-10)
        chex.assert_trees_all_close(grads, expected, rtol=1e-10, atol=1e-10)
        for k in diff:
            assert grads[k].dtype == jnp.float64 and grads[k].shape == diff[k].shape, k


@pytest.mark.parametrize("op", PARAM_OPS)
def test_vjp_with_per_step_gamma_and_lambda(op, implementation):
    with enable_x64():
        inp, diff, fixed = grad_inputs(op, OPS[op].modes[0], 6, (3,), -1, np.float64, per_step_params=True)
        assert diff["gamma"].shape == inp.step_shape
        _, grads = vjp_with_random_cotangents(library_fn(inp, fixed, implementation), diff, jit=True)
        _, expected = vjp_with_random_cotangents(oracle_fn(inp, fixed), diff)
        chex.assert_trees_all_close(grads, expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("op", list(OPS))
def test_implementations_agree_on_gradients(op):
    """float32 vjps of every implementation agree with each other."""
    inp, diff, fixed = grad_inputs(op, MAIN_MODE[op], 17, (4,), -1, np.float32)
    results = {
        impl: vjp_with_random_cotangents(library_fn(inp, fixed, impl), diff, jit=True) for impl in IMPLEMENTATIONS
    }
    first, *rest = IMPLEMENTATIONS
    for impl in rest:
        chex.assert_trees_all_close(results[impl], results[first], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("op", "mode"), FD_OP_MODES, ids=[f"{o}-{m}" for o, m in FD_OP_MODES])
def test_gradients_match_finite_differences(op, mode, implementation):
    with enable_x64():
        inp, diff, fixed = grad_inputs(op, mode, 5, (2,), 0, np.float64, seed=3)
        check_grads(library_fn(inp, fixed, implementation), (diff,), order=1, modes=("rev",), eps=1e-6)


@pytest.mark.parametrize("op", PARAM_OPS)
def test_per_step_parameter_gradients_match_finite_differences(op, implementation):
    with enable_x64():
        inp, diff, fixed = grad_inputs(op, OPS[op].modes[-1], 5, (2,), -1, np.float64, per_step_params=True, seed=4)
        check_grads(library_fn(inp, fixed, implementation), (diff,), order=1, modes=("rev",), eps=1e-6)


def test_gradient_at_gamma_zero_is_finite_and_exact(implementation):
    """At γ = 0 every b_t is 0, yet the derivative w.r.t. γ is not: boundaries must be a selection,
    not a `b == 0` test, for the gradient to stay exact there."""
    with enable_x64():
        inp, diff, fixed = grad_inputs("gae", "nv", 6, (3,), 0, np.float64)
        diff["gamma"] = jnp.float64(0.0)
        _, grads = vjp_with_random_cotangents(library_fn(inp, fixed, implementation), diff)
        _, expected = vjp_with_random_cotangents(oracle_fn(inp, fixed), diff)
        chex.assert_trees_all_close(grads, expected, rtol=1e-10, atol=1e-10)
