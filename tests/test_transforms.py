"""JAX transformations: jit without recompilation, vmap with several in_axes, grad, remat, loops."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from cases import FLAGS, MAIN_MODE, OP_NAMES, OPS, PER_STEP, build, call

from rlscan_jax._src import core

T = 7
CLOSE = {"rtol": 1e-5, "atol": 1e-5}
GAMMA_OPS = [op for op in OP_NAMES if OPS[op].has_gamma]


def split(inp):
    """(arrays, static): the array arguments (traceable) and the rest (Python values)."""
    arrays, static = {}, {}
    for k, v in inp.args.items():
        (arrays if isinstance(v, np.ndarray) else static)[k] = v
    return arrays, static


def run(inp, implementation, arrays, static, time_axis=None):
    out = inp.spec.fn(
        **arrays,
        **static,
        time_axis=inp.axis if time_axis is None else time_axis,
        implementation=implementation,
    )
    return tuple(out) if isinstance(out, tuple) else (out,)


def batch_in_axes(inp, arrays, axis):
    """in_axes mapping every per-step array over its `axis` and every edge array over 0."""
    return {k: (axis if (k in PER_STEP or k in FLAGS) else 0) for k in arrays}


# ----------------------------------------------------------------------------- jit


@pytest.mark.parametrize("op", GAMMA_OPS)
def test_jit_does_not_retrace_for_new_gamma_or_lambda(op, implementation):
    inp = build(op, MAIN_MODE[op], T, (4,), 0)
    arrays, static = split(inp)
    static.pop("gamma")
    static.pop("lambda_", None)
    traces = []

    @jax.jit
    def f(arrays, gamma, lambda_):
        traces.append(1)
        p = {"gamma": gamma} if not OPS[op].has_lambda else {"gamma": gamma, "lambda_": lambda_}
        return run(inp, implementation, arrays, {**static, **p})

    for g, lam in ((0.9, 0.95), (0.5, 0.7), (1.0, 0.0)):
        out = f(arrays, g, lam)
        p = {"gamma": g} if not OPS[op].has_lambda else {"gamma": g, "lambda_": lam}
        chex.assert_trees_all_close(out, run(inp, implementation, arrays, {**static, **p}), **CLOSE)
    f(jax.tree.map(lambda x: x * 2 if x.dtype != bool else x, arrays), 0.3, 0.3)  # new data, same shapes
    assert len(traces) == 1


@pytest.mark.parametrize("op", OP_NAMES)
def test_eager_calls_compile_once_per_shape(op, implementation):
    """Eager calls with a new Python-float γ (or new data) reuse the compiled `core.evaluate`;
    a new T compiles once more."""
    inp = build(op, MAIN_MODE[op], 53, (3,), 0)  # lengths no other test uses
    call(inp, implementation)
    size = core.evaluate._cache_size()
    if OPS[op].has_gamma:
        for g in (0.123, 0.5, 1.0):
            lam = {"lambda_": 1.0 - g} if OPS[op].has_lambda else {}
            call(inp, implementation, dict(inp.args, gamma=g, **lam))
    call(build(op, MAIN_MODE[op], 53, (3,), 0, seed=123), implementation)
    assert core.evaluate._cache_size() == size
    call(build(op, MAIN_MODE[op], 59, (3,), 0), implementation)
    assert core.evaluate._cache_size() == size + 1


# ----------------------------------------------------------------------------- vmap


@pytest.mark.parametrize("op", OP_NAMES)
def test_vmap_over_time_major_batch(op, implementation):
    """[T, B] data, vmap with in_axes=1 (per-step) / 0 (edge), out_axes=1: equals the batched call."""
    inp = build(op, MAIN_MODE[op], T, (4,), 0)
    arrays, static = split(inp)
    f = jax.vmap(
        lambda a: run(inp, implementation, a, static, time_axis=0),
        in_axes=(batch_in_axes(inp, arrays, 1),),
        out_axes=1,
    )
    chex.assert_trees_all_close(f(arrays), run(inp, implementation, arrays, static), **CLOSE)


@pytest.mark.parametrize("op", OP_NAMES)
def test_vmap_over_batch_major_rows(op, implementation):
    """[B, T] data (time_axis=-1 when batched), vmap with in_axes=0 over rows of [T]."""
    inp = build(op, MAIN_MODE[op], T, (4,), -1)
    arrays, static = split(inp)
    f = jax.vmap(lambda a: run(inp, implementation, a, static, time_axis=0), in_axes=(0,))
    out = f(arrays)
    chex.assert_trees_all_close(out, run(inp, implementation, arrays, static), **CLOSE)
    for i in range(4):  # and each row alone, unbatched
        row = run(inp, implementation, {k: v[i] for k, v in arrays.items()}, static, time_axis=0)
        chex.assert_trees_all_close(jax.tree.map(lambda o, i=i: o[i], out), row, **CLOSE)


@pytest.mark.parametrize("axis", [0, -1], ids=["time-major", "batch-major"])
@pytest.mark.parametrize("op", OP_NAMES)
def test_vmap_in_axes_1_with_an_inner_batch(op, axis, implementation):
    """in_axes=1 with a batch axis left for the op: [T, 3, 4] maps the 3 (the op sees [T, 4]);
    batch-major [3, 4, T] maps the 4 (the op sees [3, T] with time_axis=-1)."""
    inp = build(op, MAIN_MODE[op], T, (3, 4), axis)
    arrays, static = split(inp)
    edge_axis = 0 if axis == 0 else 1  # the mapped batch axis, counted without time
    in_axes = {k: (1 if (k in PER_STEP or k in FLAGS) else edge_axis) for k in arrays}
    f = jax.vmap(lambda a: run(inp, implementation, a, static), in_axes=(in_axes,), out_axes=1)
    chex.assert_trees_all_close(f(arrays), run(inp, implementation, arrays, static), **CLOSE)


@pytest.mark.parametrize("op", OP_NAMES)
def test_vmap_with_a_shared_input(op, implementation):
    """in_axes=None: one input (the first per-step array) mapped, all others shared by every row."""
    inp = build(op, MAIN_MODE[op], T, (), 0)
    arrays, static = split(inp)
    mapped = next(k for k in arrays if k in PER_STEP)
    rows = np.random.default_rng(1).normal(size=(5, *np.shape(arrays[mapped]))).astype(np.float32)
    in_axes = {k: (0 if k == mapped else None) for k in arrays}
    out = jax.vmap(lambda a: run(inp, implementation, a, static), in_axes=(in_axes,))({**arrays, mapped: rows})
    for i in range(5):
        expected = run(inp, implementation, {**arrays, mapped: rows[i]}, static)
        chex.assert_trees_all_close(jax.tree.map(lambda o, i=i: o[i], out), expected, **CLOSE)


@pytest.mark.parametrize("op", OP_NAMES)
def test_nested_vmap(op, implementation):
    """[3, 4, T] data through vmap(vmap(op on [T])) equals the batched call with time_axis=-1."""
    inp = build(op, MAIN_MODE[op], T, (3, 4), -1)
    arrays, static = split(inp)
    inner = jax.vmap(lambda a: run(inp, implementation, a, static, time_axis=0), in_axes=(0,))
    out = jax.vmap(inner, in_axes=(0,))(arrays)
    chex.assert_trees_all_close(out, run(inp, implementation, arrays, static), **CLOSE)


def test_vmap_over_gamma(implementation):
    """Several discounts at once: gamma mapped, data shared."""
    inp = build("gae", "nv", T, (4,), 0)
    arrays, static = split(inp)
    static.pop("gamma")
    gammas = jnp.array([0.0, 0.5, 0.9, 1.0])
    out = jax.vmap(lambda g: run(inp, implementation, arrays, {**static, "gamma": g}))(gammas)
    for i, g in enumerate([0.0, 0.5, 0.9, 1.0]):
        expected = run(inp, implementation, arrays, {**static, "gamma": g})
        chex.assert_trees_all_close(jax.tree.map(lambda o, i=i: o[i], out), expected, **CLOSE)


# ----------------------------------------------------------------------------- grad


def floats_of(arrays):
    return {k: v for k, v in arrays.items() if k not in FLAGS}


def weighted_loss(inp, implementation, static, flags, weights, time_axis=None):
    def loss(diff):
        out = run(inp, implementation, {**diff, **flags}, static, time_axis)
        return sum(jnp.sum(o * w) for o, w in zip(out, weights, strict=True))

    return loss


@pytest.mark.parametrize("op", OP_NAMES)
def test_grad_of_vmap_equals_vmap_of_grad(op, implementation):
    inp = build(op, MAIN_MODE[op], T, (4,), -1)
    arrays, static = split(inp)
    diff = floats_of(arrays)
    flags = {k: v for k, v in arrays.items() if k in FLAGS}
    out = run(inp, implementation, arrays, static)
    rng = np.random.default_rng(2)
    weights = [rng.normal(size=o.shape).astype(np.float32) for o in out]

    def row_loss(d, fl, w):
        o = run(inp, implementation, {**d, **fl}, static, time_axis=0)
        return sum(jnp.sum(a * b) for a, b in zip(o, w, strict=True))

    @jax.jit  # one compilation for the three gradients
    def grads(d):
        batched = jax.grad(weighted_loss(inp, implementation, static, flags, weights))(d)
        grad_of_vmap = jax.grad(lambda d: jnp.sum(jax.vmap(row_loss)(d, flags, weights)))(d)
        vmap_of_grad = jax.vmap(jax.grad(row_loss))(d, flags, weights)
        return batched, grad_of_vmap, vmap_of_grad

    batched, grad_of_vmap, vmap_of_grad = grads(diff)
    chex.assert_trees_all_close(grad_of_vmap, batched, **CLOSE)
    chex.assert_trees_all_close(vmap_of_grad, batched, **CLOSE)


@pytest.mark.parametrize("op", OP_NAMES)
def test_remat(op, implementation):
    inp = build(op, MAIN_MODE[op], T, (4,), 0)
    arrays, static = split(inp)
    diff = floats_of(arrays)
    flags = {k: v for k, v in arrays.items() if k in FLAGS}
    out = run(inp, implementation, arrays, static)
    weights = [np.random.default_rng(3).normal(size=o.shape).astype(np.float32) for o in out]
    loss = weighted_loss(inp, implementation, static, flags, weights)
    plain, remat = jax.jit(lambda d: (jax.grad(loss)(d), jax.grad(jax.checkpoint(loss))(d)))(diff)
    chex.assert_trees_all_close(remat, plain, **CLOSE)
    # the checkpointed forward really is recomputed: the remat primitive is in the gradient's jaxpr
    assert "remat" in str(jax.make_jaxpr(jax.grad(jax.checkpoint(loss)))(diff))


# ----------------------------------------------------------------------------- loops


@pytest.mark.parametrize("op", OP_NAMES)
def test_inside_lax_scan(op, implementation):
    """Three windows processed in a lax.scan (γ changing per window) equal three eager calls."""
    inps = [build(op, MAIN_MODE[op], T, (4,), 0, seed=s) for s in range(3)]
    splits = [split(i) for i in inps]
    static = splits[0][1]
    stacked = jax.tree.map(lambda *xs: np.stack(xs), *[s[0] for s in splits])
    has_gamma = OPS[op].has_gamma
    gammas = jnp.array([0.9, 0.5, 1.0])

    def body(total, xs):
        arrays, g = xs
        st = {**static, "gamma": g} if has_gamma else static
        out = run(inps[0], implementation, arrays, st)
        return total + sum(jnp.sum(o) for o in out), out

    total, outs = jax.lax.scan(body, jnp.float32(0.0), (stacked, gammas))
    expected_total = 0.0
    for i in range(3):
        st = {**static, "gamma": float(gammas[i])} if has_gamma else static
        expected = run(inps[0], implementation, splits[i][0], st)
        chex.assert_trees_all_close(jax.tree.map(lambda o, i=i: o[i], outs), expected, **CLOSE)
        expected_total += sum(float(jnp.sum(o)) for o in expected)
    np.testing.assert_allclose(total, expected_total, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("op", GAMMA_OPS)
def test_inside_fori_loop(op, implementation):
    """A fori_loop summing outputs over λ (or γ) = i / 4 equals the Python loop."""
    inp = build(op, MAIN_MODE[op], T, (4,), -1)
    arrays, static = split(inp)
    name = "lambda_" if OPS[op].has_lambda else "gamma"

    def body(i, acc):
        out = run(inp, implementation, arrays, {**static, name: i / 4.0})
        return jax.tree.map(jnp.add, acc, out)

    zeros = tuple(jnp.zeros_like(o) for o in run(inp, implementation, arrays, static))
    got = jax.lax.fori_loop(0, 5, body, zeros)
    expected = zeros
    for i in range(5):
        expected = jax.tree.map(jnp.add, expected, run(inp, implementation, arrays, {**static, name: i / 4.0}))
    chex.assert_trees_all_close(got, expected, **CLOSE)


@pytest.mark.parametrize("op", ["vtrace", "retrace"])
def test_new_clip_thresholds_do_not_recompile(op, implementation):
    """Clip thresholds are traced like γ: new values reuse the compiled program (None is a new one)."""
    inp = build(op, MAIN_MODE[op], 57, (3,), 0)  # a length no other test uses
    clips = ("rho_clip", "c_clip", "pg_rho_clip") if op == "vtrace" else ("c_clip",)
    call(inp, implementation, dict(inp.args, **dict.fromkeys(clips, 1.0)))
    size = core.evaluate._cache_size()
    for value in (0.5, 2.0, 1e9):
        out = call(inp, implementation, dict(inp.args, **dict.fromkeys(clips, value)))
        assert all(np.isfinite(np.asarray(o)).all() for o in out)
    assert core.evaluate._cache_size() == size
