"""rlscan_jax.rlax_compat against rlax itself: signatures, values, gradients, vmap.

rlax is the oracle here: the compat layer promises rlax's exact semantics, so every case runs
the same inputs through `rlax.<name>` and `rlax_compat.<name>` and compares outputs and the
gradients of a random-weighted sum with respect to every floating input.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import zlib
from collections.abc import Callable

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlscan_jax import rlax_compat

rlax = pytest.importorskip("rlax")

IMPLEMENTATIONS = ("associative", "sequential")
STOPS = (False, True)
NO_LAMBDA = ("discounted_returns", "general_off_policy_returns_from_q_and_v")
RTOL = ATOL = 2e-5

NAMES = (
    "truncated_generalized_advantage_estimation",
    "lambda_returns",
    "discounted_returns",
    "n_step_bootstrapped_returns",
    "td_lambda",
    "vtrace",
    "vtrace_td_error_and_advantage",
    "general_off_policy_returns_from_q_and_v",
)


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def _discounts(rng: np.random.Generator, length: int) -> np.ndarray:
    """Per-step discounts mixing 0, 0.9, 1 and values strictly between, with zeros inside and at the end."""
    d = rng.uniform(0.3, 1.0, length)
    pick = rng.integers(0, 4, length)
    d = np.where(pick == 0, 0.9, d)
    d = np.where(pick == 1, 1.0, d)
    if length > 2:
        d[length // 2] = 0.0
    d[-1] = 0.0 if length % 2 else 0.9
    return d.astype(np.float32)


def _mixing(rng: np.random.Generator, length: int, kind: str):
    if kind == "scalar":
        return 0.8
    lam = rng.uniform(0.0, 1.0, length)
    lam[rng.integers(0, length)] = 1.0
    if length > 1:
        lam[0] = 0.0
    return jnp.asarray(lam, jnp.float32)


def _normal(rng, *shape):
    return jnp.asarray(rng.normal(size=shape), jnp.float32)


def _ratios(rng, length):
    return jnp.asarray(np.exp(rng.normal(scale=0.7, size=length)), jnp.float32)


@dataclasses.dataclass(frozen=True)
class Case:
    """Positional args (floats listed in `diff` are differentiated), extra keyword args."""

    args: tuple
    kwargs: dict
    diff: tuple[int, ...]


def _case(args, kwargs=None) -> Case:
    diff = tuple(i for i, a in enumerate(args) if isinstance(a, jax.Array) and jnp.issubdtype(a.dtype, jnp.floating))
    return Case(tuple(args), dict(kwargs or {}), diff)


def make_case(spec: str, length: int, lam_kind: str, seed: int = 0) -> Case:
    rng = _rng(spec, length, lam_kind, seed)
    d = jnp.asarray(_discounts(rng, length))
    lam = _mixing(rng, length, lam_kind)
    r = _normal(rng, length)
    if spec == "truncated_generalized_advantage_estimation":
        return _case((r, d, lam, _normal(rng, length + 1)))
    if spec == "lambda_returns":
        return _case((r, d, _normal(rng, length), lam))
    if spec == "discounted_returns":
        return _case((r, d, _normal(rng, length)))
    if spec == "n_step_bootstrapped_returns":
        return _case((r, d, _normal(rng, length), 3, lam))
    if spec == "td_lambda":
        return _case((_normal(rng, length), r, d, _normal(rng, length), lam))
    if spec.startswith("vtrace"):
        args = [_normal(rng, length), _normal(rng, length), r, d, _ratios(rng, length), lam]
        if spec.endswith("_masked"):
            mask = jnp.asarray(rng.uniform(size=length) < 0.7)
            args += [1.3, 0.8] if spec.startswith("vtrace_td") else [1.3]
            return _case(args, {"sample_mask": mask})
        return _case(args)
    if spec == "general_off_policy_returns_from_q_and_v":
        c = jnp.asarray(rng.uniform(0.0, 1.5, length - 1), jnp.float32)
        return _case((_normal(rng, length - 1), _normal(rng, length), r, d, c))
    raise ValueError(spec)


SPECS = (
    "truncated_generalized_advantage_estimation",
    "lambda_returns",
    "discounted_returns",
    "n_step_bootstrapped_returns",
    "td_lambda",
    "vtrace",
    "vtrace_masked",
    "vtrace_td_error_and_advantage",
    "vtrace_td_error_and_advantage_masked",
    "general_off_policy_returns_from_q_and_v",
)


def _function_name(spec: str) -> str:
    return spec.removesuffix("_masked")


def _outputs(out) -> tuple[jax.Array, ...]:
    """The output arrays, field by field for rlax's and our VTraceOutput alike."""
    return tuple(out) if isinstance(out, tuple) else (out,)


def _value_and_grads(fn: Callable, case: Case, stop) -> tuple[tuple[jax.Array, ...], tuple[jax.Array, ...]]:
    """Outputs, and the gradients of a random-weighted sum of them w.r.t. case.diff."""

    def call(*diff_args):
        args = list(case.args)
        for i, a in zip(case.diff, diff_args, strict=True):
            args[i] = a
        return _outputs(fn(*args, stop_target_gradients=stop, **case.kwargs))

    diff_args = tuple(case.args[i] for i in case.diff)
    rng = _rng("weights", case.args[0].shape)
    weights = [jnp.asarray(rng.normal(size=o.shape), o.dtype) for o in jax.eval_shape(call, *diff_args)]

    def loss(*diff_args):
        return sum(jnp.sum(w * o) for w, o in zip(weights, call(*diff_args), strict=True))

    return call(*diff_args), jax.grad(loss, argnums=tuple(range(len(diff_args))))(*diff_args)


@functools.cache
def _rlax_reference(spec: str, length: int, lam_kind: str, stop: bool):
    case = make_case(spec, length, lam_kind)
    return jax.device_get(_value_and_grads(getattr(rlax, _function_name(spec)), case, stop))


def _ours(spec: str, implementation: str) -> Callable:
    return functools.partial(getattr(rlax_compat, _function_name(spec)), implementation=implementation)


def _assert_matches(got, want) -> None:
    (outs, grads), (outs_ref, grads_ref) = got, want
    for o, o_ref in zip(outs, outs_ref, strict=True):
        chex.assert_shape(o, o_ref.shape)
        chex.assert_type(o, o_ref.dtype)
    chex.assert_trees_all_close(outs, outs_ref, rtol=RTOL, atol=ATOL)
    chex.assert_trees_all_close(grads, grads_ref, rtol=RTOL, atol=ATOL)


# ---------------------------------------------------------------------------------------------
# Signatures and output types.


@pytest.mark.parametrize("name", NAMES)
def test_signature_matches_rlax(name):
    ours = list(inspect.signature(getattr(rlax_compat, name)).parameters.values())
    theirs = list(inspect.signature(getattr(rlax, name)).parameters.values())
    assert ours[-1].name == "implementation"
    assert ours[-1].kind is inspect.Parameter.KEYWORD_ONLY
    assert ours[-1].default is None
    assert [(p.name, p.kind, p.default) for p in ours[:-1]] == [(p.name, p.kind, p.default) for p in theirs]


@pytest.mark.parametrize("name", NAMES)
def test_docstring(name):
    doc = getattr(rlax_compat, name).__doc__
    assert "Args:" in doc and "Returns:" in doc


def test_vtrace_output_fields():
    case = make_case("vtrace", 4, "scalar")
    out = rlax_compat.vtrace_td_error_and_advantage(*case.args)
    ref = rlax.vtrace_td_error_and_advantage(*case.args)
    assert out._fields == ref._fields == ("errors", "pg_advantage", "q_estimate")
    assert isinstance(out, rlax_compat.VTraceOutput)


# ---------------------------------------------------------------------------------------------
# Parity: values and gradients, every function, every implementation.


def _parity_params():
    """(spec, T, λ kind, stop) combinations: T = 1, even and odd, both λ kinds, stop-gradients on and off."""
    grid = [
        (1, "array", False),  # a single step
        (6, "scalar", False),  # even T: the last discount is 0.9
        (13, "array", False),  # odd T: zeros in the middle and at the end
        (6, "array", True),
    ]
    params = []
    for spec in SPECS:
        seen = set()
        for length, lam_kind, stop in grid:
            if spec in NO_LAMBDA:
                lam_kind = "none"
            if (length, lam_kind, stop) in seen:
                continue
            seen.add((length, lam_kind, stop))
            ident = f"{spec}-T{length}-lam_{lam_kind}-{'stopgrad' if stop else 'grads'}"
            params.append(pytest.param(spec, length, lam_kind, stop, id=ident))
    return params


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize(("spec", "length", "lam_kind", "stop"), _parity_params())
def test_matches_rlax(spec, length, lam_kind, stop, implementation):
    case = make_case(spec, length, lam_kind)
    got = jax.device_get(_value_and_grads(_ours(spec, implementation), case, stop))
    _assert_matches(got, _rlax_reference(spec, length, lam_kind, stop))


@pytest.mark.parametrize("n", [1, 2, 5, 9])
def test_n_step_window_lengths(n):
    """n = 1 (one-step TD targets), n < T, n = T and n > T (every window cut at T-1)."""
    case = make_case("n_step_bootstrapped_returns", 5, "array")
    case = _case((*case.args[:3], n, case.args[4]))
    got = _value_and_grads(rlax_compat.n_step_bootstrapped_returns, case, False)
    _assert_matches(got, _value_and_grads(rlax.n_step_bootstrapped_returns, case, False))


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_discounted_returns_scalar_bootstrap(implementation):
    case = make_case("discounted_returns", 6, "scalar")
    case = _case((*case.args[:2], jnp.asarray(1.7, jnp.float32)))
    fn = functools.partial(rlax_compat.discounted_returns, implementation=implementation)
    _assert_matches(_value_and_grads(fn, case, False), _value_and_grads(rlax.discounted_returns, case, False))


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize(("name", "i"), [("truncated_generalized_advantage_estimation", 2), ("vtrace", 5)])
def test_traced_scalar_lambda_gradient(name, i, implementation):
    """A traced scalar λ is differentiable, as in rlax (through an estimator and through linear_scan)."""
    case = make_case(name, 6, "scalar")
    args = list(case.args)
    args[i] = jnp.asarray(0.7, jnp.float32)
    case = _case(args)
    fn = functools.partial(getattr(rlax_compat, name), implementation=implementation)
    _assert_matches(_value_and_grads(fn, case, False), _value_and_grads(getattr(rlax, name), case, False))


@pytest.mark.parametrize("stop", STOPS, ids=["grads", "stopgrad"])
def test_traced_stop_target_gradients(stop):
    """stop_target_gradients may be a traced bool under jit, as with rlax's lax.select."""
    case = make_case("vtrace_td_error_and_advantage", 6, "array")

    def run(fn, flag):
        def loss(v_tm1, r_t):
            out = fn(v_tm1, case.args[1], r_t, *case.args[3:], stop_target_gradients=flag)
            return jnp.sum(out.errors * jnp.arange(6.0)) + jnp.sum(out.pg_advantage)

        return jax.value_and_grad(loss, argnums=(0, 1))(case.args[0], case.args[2])

    flag = jnp.asarray(stop)
    got = jax.jit(functools.partial(run, rlax_compat.vtrace_td_error_and_advantage))(flag)
    want = jax.jit(functools.partial(run, rlax.vtrace_td_error_and_advantage))(flag)
    chex.assert_trees_all_close(got, want, rtol=RTOL, atol=ATOL)


# ---------------------------------------------------------------------------------------------
# vmap: parity over a batch, and one batched scan rather than a loop.

BATCH = 3


def _batched_case(spec: str, length: int) -> tuple[Case, tuple, dict]:
    """BATCH independent cases stacked on a leading axis, with the vmap in_axes of args and kwargs."""
    cases = [make_case(spec, length, "array", seed=b) for b in range(BATCH)]
    args, in_axes = [], []
    for i, a in enumerate(cases[0].args):
        if isinstance(a, jax.Array):
            args.append(jnp.stack([c.args[i] for c in cases]))
            in_axes.append(0)
        else:
            args.append(a)
            in_axes.append(None)
    kwargs = {k: jnp.stack([c.kwargs[k] for c in cases]) for k in cases[0].kwargs}
    return Case(tuple(args), kwargs, cases[0].diff), tuple(in_axes), {k: 0 for k in kwargs}


def _vmapped(fn: Callable, in_axes: tuple, kwargs_axes: dict) -> Callable:
    def batched(*args, stop_target_gradients, **kwargs):
        def one(args, kwargs):
            return fn(*args, stop_target_gradients=stop_target_gradients, **kwargs)

        return jax.vmap(one, in_axes=(in_axes, kwargs_axes))(args, kwargs)

    return batched


VMAP_SPECS = (
    "truncated_generalized_advantage_estimation",
    "lambda_returns",
    "discounted_returns",
    "n_step_bootstrapped_returns",
    "td_lambda",
    "vtrace_masked",
    "vtrace_td_error_and_advantage",
    "general_off_policy_returns_from_q_and_v",
)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("spec", VMAP_SPECS)
def test_vmap_matches_rlax(spec, implementation):
    case, in_axes, kwargs_axes = _batched_case(spec, 7)
    got = _value_and_grads(_vmapped(_ours(spec, implementation), in_axes, kwargs_axes), case, False)
    want = _value_and_grads(_vmapped(getattr(rlax, _function_name(spec)), in_axes, kwargs_axes), case, False)
    _assert_matches(got, want)


def _count_primitives(jaxpr, names: set[str]) -> int:
    count = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in names:
            count += 1
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            count += _count_primitives(sub, names)
    return count


SCAN_BACKED = (
    "truncated_generalized_advantage_estimation",
    "lambda_returns",
    "discounted_returns",
    "td_lambda",
    "vtrace_masked",
    "vtrace_td_error_and_advantage",
    "general_off_policy_returns_from_q_and_v",
)


@pytest.mark.parametrize("spec", SCAN_BACKED)
def test_vmap_is_one_batched_scan(spec):
    """vmap over a compat function traces to exactly one lax.scan (sequential) and none (associative)."""
    case, in_axes, kwargs_axes = _batched_case(spec, 5)
    for implementation, expected in (("sequential", 1), ("associative", 0)):
        fn = _vmapped(_ours(spec, implementation), in_axes, kwargs_axes)
        jaxpr = jax.make_jaxpr(functools.partial(fn, stop_target_gradients=False, **case.kwargs))(*case.args)
        assert _count_primitives(jaxpr.jaxpr, {"scan", "while"}) == expected, (implementation, jaxpr)


# ---------------------------------------------------------------------------------------------
# Validation.


def test_rejects_batched_inputs_outside_vmap():
    with pytest.raises(ValueError, match=r"r_t\.shape=\(3, 2\) must be rank 1"):
        rlax_compat.lambda_returns(jnp.ones((3, 2)), jnp.ones((3, 2)), jnp.ones((3, 2)))


def test_rejects_wrong_lengths():
    with pytest.raises(ValueError, match=r"values\.shape=\(3,\) must be \(4,\)"):
        rlax_compat.truncated_generalized_advantage_estimation(jnp.ones(3), jnp.ones(3), 0.9, jnp.ones(3))
    with pytest.raises(ValueError, match=r"c_t\.shape=\(3,\) must be \(2,\)"):
        rlax_compat.general_off_policy_returns_from_q_and_v(
            jnp.ones(2), jnp.ones(3), jnp.ones(3), jnp.ones(3), jnp.ones(3)
        )
    with pytest.raises(ValueError, match=r"lambda_\.shape=\(2,\) must be \(\) or \(3,\)"):
        rlax_compat.lambda_returns(jnp.ones(3), jnp.ones(3), jnp.ones(3), jnp.ones(2))


def test_rejects_integer_inputs():
    with pytest.raises(TypeError, match=r"discount_t\.dtype=int32"):
        rlax_compat.discounted_returns(jnp.ones(3), jnp.ones(3, jnp.int32), jnp.ones(3))


def test_rejects_bad_n_and_implementation():
    with pytest.raises(ValueError, match="n=0 must be at least 1"):
        rlax_compat.n_step_bootstrapped_returns(jnp.ones(3), jnp.ones(3), jnp.ones(3), 0)
    with pytest.raises(TypeError, match="must be a Python int"):
        rlax_compat.n_step_bootstrapped_returns(jnp.ones(3), jnp.ones(3), jnp.ones(3), 2.0)
    with pytest.raises(ValueError, match="implementation='bogus'"):
        rlax_compat.n_step_bootstrapped_returns(jnp.ones(3), jnp.ones(3), jnp.ones(3), 2, implementation="bogus")
    with pytest.raises(ValueError, match="implementation='bogus'"):
        rlax_compat.vtrace(*make_case("vtrace", 3, "scalar").args, implementation="bogus")


def test_n_step_refuses_triton():
    """n-step returns have no kernel: asking for one raises instead of running plain JAX."""
    with pytest.raises(ValueError, match="triton"):
        rlax_compat.n_step_bootstrapped_returns(jnp.ones(4), jnp.ones(4), jnp.ones(4), 2, implementation="triton")
