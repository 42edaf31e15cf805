"""Numerics: NaN/Inf isolation, huge next to tiny, exact reverse sums, no division by γ^t, fp32 accumulation."""

from __future__ import annotations

import chex
import jax.numpy as jnp
import numpy as np
import oracle
import pytest
from cases import OPS, assert_close, assert_equal, build, call, call_oracle

import rlscan_jax

T = 24
EPISODES = [slice(0, 8), slice(8, 16), slice(16, 24)]  # ends: terminated at 7, truncated (or terminated) at 15

# (op, mode): every op, each way of giving the bootstrap or direction.
OP_MODES = [
    ("gae", "nv"),
    ("gae", "boot"),
    ("vtrace", "nv"),
    ("vtrace", "boot"),
    ("retrace", "nv"),
    ("lambda_returns", "nv"),
    ("lambda_returns", "boot"),
    ("discounted_returns", "nv"),
    ("discounted_returns", "boot"),
    ("eligibility_traces", "feat"),
    ("episodic_cumsum", "fwd-feat"),
    ("episodic_cumsum", "rev-init"),
]


def packed(op, mode, seed=0):
    """[T, 3] inputs whose every row holds three episodes (EPISODES)."""
    inp = build(op, mode, T, (3,), 0, seed=seed)
    a = inp.args
    if "done" in a:
        a["done"] = np.zeros((T, 3), bool)
        a["done"][[7, 15], :] = True
    else:
        a["terminated"] = np.zeros((T, 3), bool)
        a["terminated"][7, :] = True
        if "truncated" in a:
            a["truncated"] = np.zeros((T, 3), bool)
            a["truncated"][15, :] = True
        else:
            a["terminated"][15, :] = True
    if "gamma" in a:  # per-step parameters, so they too can carry a NaN
        a["gamma"] = np.full((T, 3), 0.9, np.float32)
    if "lambda_" in a:
        a["lambda_"] = np.full((T, 3), 0.95, np.float32)
    return inp


def poison_cases():
    out = []
    for op, mode in OP_MODES:
        names = build(op, mode, 2, (3,), 0).float_names()
        names += [p for p in ("gamma", "lambda_") if p in build(op, mode, 2, (3,), 0).args]
        for name in names:
            episodes = [0, 1, 2]
            if name == "bootstrap_value" or (name == "initial" and mode.startswith("rev")):
                episodes = [2]
            elif name == "initial":
                episodes = [0]
            for ep in episodes:
                out.append(pytest.param(op, mode, name, ep, id=f"{op}-{mode}-{name}-ep{ep}"))
    return out


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize(("op", "mode", "name", "episode"), poison_cases())
def test_nan_and_inf_stay_in_their_episode_and_row(op, mode, name, episode, bad, implementation):
    """A NaN/Inf in one input of one episode of row 1 reaches no other episode and no other row."""
    inp = packed(op, mode)
    clean = call(inp, implementation)
    x = np.array(inp.args[name])
    if name in ("bootstrap_value", "initial"):
        x[1] = bad
    else:
        x[EPISODES[episode], 1] = bad
    out = call(inp, implementation, dict(inp.args, **{name: x}))
    others = np.ones(T, bool)
    others[EPISODES[episode]] = False
    for o, c in zip(out, clean, strict=True):
        o, c = np.asarray(o), np.asarray(c)
        assert_equal(o[:, [0, 2]], c[:, [0, 2]])
        assert_equal(o[others, 1], c[others, 1])
        assert np.isfinite(o[others]).all()


@pytest.mark.parametrize("bad", [np.nan, np.inf], ids=["nan", "inf"])
@pytest.mark.parametrize(
    ("mode", "name"),
    [("fwd-init", "a"), ("fwd-init", "b"), ("fwd-init", "initial"), ("rev-bcast", "a"), ("rev-bcast", "initial")],
    ids=lambda x: x,
)
def test_linear_scan_nan_stays_in_its_row(mode, name, bad, implementation):
    inp = build("linear_scan", mode, T, (3,), 0)
    clean = call(inp, implementation)
    x = np.array(inp.args[name])
    if name == "initial":
        x[1] = bad
    else:
        x[5, 1] = bad
    (out,) = call(inp, implementation, dict(inp.args, **{name: x}))
    assert_equal(np.asarray(out)[:, [0, 2]], np.asarray(clean[0])[:, [0, 2]])
    assert not np.isfinite(np.asarray(out)[:, 1]).all()


# ----------------------------------------------------------------------------- huge next to tiny


@pytest.mark.parametrize("huge_first", [True, False], ids=["huge-then-tiny", "tiny-then-huge"])
@pytest.mark.parametrize(("op", "mode"), OP_MODES, ids=[f"{o}-{m}" for o, m in OP_MODES])
def test_huge_episode_next_to_tiny_episode(op, mode, huge_first, implementation):
    """Rewards ~1e30 in one episode leave the ~1e-3 outputs of the neighbouring episode exact."""
    inp = packed(op, mode, seed=5)
    a = inp.args
    scale = (1e30, 1e-3) if huge_first else (1e-3, 1e30)  # episodes 0 and 1; episode 2 unscaled
    small = EPISODES[1] if huge_first else EPISODES[0]
    for k in inp.float_names():
        if k in ("gamma", "lambda_", "log_rhos", "bootstrap_value"):
            continue  # ratios and parameters keep their scale; the bootstrap belongs to episode 2
        x = np.array(a[k], np.float64)
        if k == "initial":
            if not a.get("reverse"):  # a forward carry belongs to episode 0
                x = x * scale[0]
        else:
            x[EPISODES[0]] *= scale[0]
            x[EPISODES[1]] *= scale[1]
        a[k] = x.astype(np.float32)
    out = call(inp, implementation)
    expected = call_oracle(inp)
    for o, e in zip(out, expected, strict=True):
        o, e = np.asarray(o, np.float64)[small], np.asarray(e)[small]
        assert np.abs(e).max() < 1.0  # the neighbour really is tiny
        np.testing.assert_allclose(o, e, rtol=1e-5, atol=1e-5 * np.abs(e).max())


@pytest.mark.parametrize("with_done", [False, True], ids=["no-done", "done"])
def test_reverse_cumsum_is_exact(with_done, implementation):
    """Suffix sums are computed natively: a huge head never swamps a small tail."""
    x = np.array([1e8, 3.0, 1.0, 1.0, 1.0, 1.0], np.float32)
    done = np.array([0, 0, 0, 1, 0, 0], bool) if with_done else None
    out = np.asarray(rlscan_jax.episodic_cumsum(x, done, reverse=True, implementation=implementation))
    tail = [2.0, 1.0] if with_done else [4.0, 3.0, 2.0, 1.0]
    np.testing.assert_array_equal(out[-len(tail) :], tail)
    out = np.asarray(rlscan_jax.linear_scan(x, np.ones(6, np.float32), reverse=True, implementation=implementation))
    np.testing.assert_array_equal(out[2:], [4.0, 3.0, 2.0, 1.0])
    out = np.asarray(rlscan_jax.discounted_returns(x, gamma=1.0, implementation=implementation))
    np.testing.assert_array_equal(out[2:], [4.0, 3.0, 2.0, 1.0])


def test_forward_cumsum_is_exact_after_a_reset(implementation):
    x = np.array([1.0, 1e8, 1.0, 1.0, 1.0], np.float32)
    done = np.array([0, 1, 0, 0, 0], bool)
    out = np.asarray(rlscan_jax.episodic_cumsum(x, done, implementation=implementation))
    np.testing.assert_array_equal(out[2:], [1.0, 2.0, 3.0])


@pytest.mark.parametrize("op", ["discounted_returns", "gae", "eligibility_traces", "linear_scan"])
def test_no_division_by_powers_of_gamma(op, implementation):
    """γ^t underflows float32 long before T = 400; the outputs must stay finite and accurate."""
    rng = np.random.default_rng(0)
    n = 400
    x = rng.normal(size=n).astype(np.float32)
    v = rng.normal(size=n).astype(np.float32)
    b = np.full(n, 0.25, np.float32)
    kw = {"implementation": implementation}
    if op == "discounted_returns":
        out = rlscan_jax.discounted_returns(x, gamma=0.5, **kw)
        expected = oracle.discounted_returns(x, gamma=0.5)
    elif op == "gae":
        out = rlscan_jax.gae(x, v, bootstrap_value=0.5, gamma=0.5, lambda_=0.5, **kw).advantages
        expected = oracle.gae(x, v, bootstrap_value=0.5, gamma=0.5, lambda_=0.5)[0]
    elif op == "eligibility_traces":
        out = rlscan_jax.eligibility_traces(x, gamma=0.3, lambda_=0.3, **kw)
        expected = oracle.eligibility_traces(x, gamma=0.3, lambda_=0.3)
    else:
        out = rlscan_jax.linear_scan(x, b, reverse=True, **kw)
        expected = oracle.linear_scan(x, b, reverse=True)
    out = np.asarray(out)
    assert np.isfinite(out).all()
    assert_close(out, expected, np.float32)


# ----------------------------------------------------------------------------- fp32 accumulation


def test_bf16_inputs_accumulate_in_fp32(implementation):
    """1000 ones in bfloat16: a bf16 accumulator stalls at 256; an fp32 one is exact and rounds once."""
    n = 1000
    x = np.ones(n, jnp.bfloat16)
    expected = np.arange(1, n + 1, dtype=np.float64).astype(jnp.bfloat16).astype(np.float32)
    for out, want in (
        (rlscan_jax.episodic_cumsum(x, implementation=implementation), expected),
        (rlscan_jax.discounted_returns(x, gamma=1.0, implementation=implementation), expected[::-1]),
        (rlscan_jax.linear_scan(x, np.ones(n, jnp.bfloat16), implementation=implementation), expected),
    ):
        assert out.dtype == jnp.bfloat16
        np.testing.assert_array_equal(np.asarray(out, np.float32), want)


def test_fp16_inputs_accumulate_in_fp32(implementation):
    """1000 × 0.1 in float16: an fp16 accumulator drifts by many ulps past 64; fp32 stays within one."""
    n = 1000
    x = np.full(n, 0.1, np.float16)
    exact = np.cumsum(np.full(n, float(x[0])))
    for out, want in (
        (rlscan_jax.episodic_cumsum(x, implementation=implementation), exact),
        (rlscan_jax.discounted_returns(x, gamma=1.0, implementation=implementation), exact[::-1]),
    ):
        assert out.dtype == jnp.float16
        ulp = np.spacing(np.abs(want).astype(np.float16)).astype(np.float64)
        assert (np.abs(np.asarray(out, np.float64) - want) <= ulp).all()


@pytest.mark.parametrize("op", list(OPS))
def test_large_finite_inputs_stay_finite(op, implementation):
    """Inputs of 1e18 (float32) and log-ratios of ±30 give finite outputs that match the oracle."""
    inp = build(op, "nv" if "nv" in OPS[op].modes else OPS[op].modes[0], 33, (4,), 0, seed=9)
    for k in inp.float_names():
        if k == "log_rhos":
            inp.args[k] = (np.sign(inp.args[k]) * 30.0).astype(np.float32)
        elif k != "b":
            inp.args[k] = inp.args[k] * np.float32(1e18)
    out = call(inp, implementation)
    chex.assert_tree_all_finite(out)
    assert_close(out, call_oracle(inp), np.float32)
