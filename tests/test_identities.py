"""The identities of DESIGN.md §2: relations between the estimators, no oracle needed."""

from __future__ import annotations

import chex
import numpy as np
import pytest
from cases import MAIN_MODE, OP_NAMES, assert_equal, build, call, episode_flags

import rlscan_jax

# (T, batch, time_axis)
LAYOUTS = [(63, (3, 4), 0), (17, (5,), -1)]
LAYOUT_IDS = ["T63-B3x4-ax0", "T17-B5-ax-1"]
F32 = {"rtol": 2e-5, "atol": 1e-4}


class Data:
    """A realistic batch: next_values[t] = values[t+1] inside an episode, the final observation's
    value where the episode ended at t, and the bootstrap value at t = T-1."""

    def __init__(self, T, batch, axis, seed=0):
        rng = np.random.default_rng(seed)
        tm = (T, *batch)
        term, trunc = episode_flags(rng, T, batch, truncation=True)
        rewards = rng.normal(size=tm)
        values = rng.normal(size=tm)
        final = rng.normal(size=tm)  # V of the final observation where an episode ended
        boot = rng.normal(size=batch)
        shifted = np.concatenate([values[1:], boot[None]], axis=0)
        next_values = np.where(term | trunc, final, shifted)
        q = rng.normal(size=tm)
        q_next = np.where(term | trunc, final, np.concatenate([q[1:], boot[None]], axis=0))
        p = axis % len(tm)

        def lay(x, dtype=np.float32):
            return np.moveaxis(x, 0, p).astype(dtype)

        self.axis = axis
        self.rewards, self.values, self.next_values = lay(rewards), lay(values), lay(next_values)
        self.q_values, self.q_next = lay(q), lay(q_next)
        self.terminated, self.truncated = lay(term, bool), lay(trunc, bool)
        self.bootstrap_value = boot.astype(np.float32)
        # Only terminations: values[t+1] and bootstrap_value give v'_t.
        self.term_only = lay(rng.random(tm) < 0.15, bool)

    def flags(self):
        return {"terminated": self.terminated, "truncated": self.truncated}


@pytest.fixture(params=LAYOUTS, ids=LAYOUT_IDS)
def data(request):
    T, batch, axis = request.param
    return Data(T, batch, axis)


def test_lambda_returns_at_one_are_discounted_returns(data, implementation):
    kw = {"time_axis": data.axis, "implementation": implementation, "gamma": 0.97}
    # with next_values, truncations and terminations
    lam = rlscan_jax.lambda_returns(data.rewards, next_values=data.next_values, lambda_=1.0, **data.flags(), **kw)
    disc = rlscan_jax.discounted_returns(data.rewards, next_values=data.next_values, **data.flags(), **kw)
    chex.assert_trees_all_close(lam, disc, **F32)
    # with values[t+1] and bootstrap_value
    lam = rlscan_jax.lambda_returns(
        data.rewards,
        data.values,
        terminated=data.term_only,
        bootstrap_value=data.bootstrap_value,
        lambda_=1.0,
        **kw,
    )
    disc = rlscan_jax.discounted_returns(
        data.rewards, terminated=data.term_only, bootstrap_value=data.bootstrap_value, **kw
    )
    chex.assert_trees_all_close(lam, disc, **F32)


@pytest.mark.parametrize("lambda_", [0.0, 0.8, 1.0])
def test_gae_returns_are_lambda_returns(data, lambda_, implementation):
    kw = {"time_axis": data.axis, "implementation": implementation, "gamma": 0.95, "lambda_": lambda_}
    out = rlscan_jax.gae(data.rewards, data.values, next_values=data.next_values, **data.flags(), **kw)
    lam = rlscan_jax.lambda_returns(data.rewards, next_values=data.next_values, **data.flags(), **kw)
    chex.assert_trees_all_close(out.returns, lam, **F32)
    out = rlscan_jax.gae(
        data.rewards, data.values, terminated=data.term_only, bootstrap_value=data.bootstrap_value, **kw
    )
    lam = rlscan_jax.lambda_returns(
        data.rewards, data.values, terminated=data.term_only, bootstrap_value=data.bootstrap_value, **kw
    )
    chex.assert_trees_all_close(out.returns, lam, **F32)


def test_gae_at_lambda_one_is_discounted_return_minus_values(data, implementation):
    kw = {"time_axis": data.axis, "implementation": implementation, "gamma": 0.9}
    out = rlscan_jax.gae(data.rewards, data.values, next_values=data.next_values, lambda_=1.0, **data.flags(), **kw)
    disc = rlscan_jax.discounted_returns(data.rewards, next_values=data.next_values, **data.flags(), **kw)
    chex.assert_trees_all_close(out.advantages, disc - data.values, **F32)
    out = rlscan_jax.gae(
        data.rewards,
        data.values,
        terminated=data.term_only,
        bootstrap_value=data.bootstrap_value,
        lambda_=1.0,
        **kw,
    )
    disc = rlscan_jax.discounted_returns(
        data.rewards, terminated=data.term_only, bootstrap_value=data.bootstrap_value, **kw
    )
    chex.assert_trees_all_close(out.advantages, disc - data.values, **F32)


@pytest.mark.parametrize("clip", [1.0, 2.5, None], ids=lambda c: f"clip{c}")
def test_vtrace_on_policy_is_lambda_returns(data, clip, implementation):
    """log ρ = 0, clips ≥ 1, λ = 1: vs = λ-returns at λ = 1 and pg = vs-style advantage G - V."""
    kw = {"time_axis": data.axis, "implementation": implementation, "gamma": 0.9}
    clips = {"rho_clip": clip, "c_clip": clip, "pg_rho_clip": clip}
    zeros = np.zeros_like(data.rewards)
    out = rlscan_jax.vtrace(
        data.rewards, data.values, zeros, next_values=data.next_values, lambda_=1.0, **clips, **data.flags(), **kw
    )
    lam = rlscan_jax.lambda_returns(data.rewards, next_values=data.next_values, lambda_=1.0, **data.flags(), **kw)
    chex.assert_trees_all_close(out.vs, lam, **F32)
    chex.assert_trees_all_close(out.pg_advantages, lam - data.values, **F32)
    out = rlscan_jax.vtrace(
        data.rewards,
        data.values,
        zeros,
        terminated=data.term_only,
        bootstrap_value=data.bootstrap_value,
        lambda_=1.0,
        **clips,
        **kw,
    )
    lam = rlscan_jax.lambda_returns(
        data.rewards,
        data.values,
        terminated=data.term_only,
        bootstrap_value=data.bootstrap_value,
        lambda_=1.0,
        **kw,
    )
    chex.assert_trees_all_close(out.vs, lam, **F32)
    chex.assert_trees_all_close(out.pg_advantages, lam - data.values, **F32)


@pytest.mark.parametrize("c_clip", [1.0, None], ids=lambda c: f"clip{c}")
def test_retrace_on_policy_is_discounted_return(data, c_clip, implementation):
    """log ρ = 0, λ = 1, next_values = the next q inside an episode: G = discounted return."""
    kw = {"time_axis": data.axis, "implementation": implementation, "gamma": 0.9}
    zeros = np.zeros_like(data.rewards)
    g = rlscan_jax.retrace(
        data.rewards, data.q_values, data.q_next, zeros, lambda_=1.0, c_clip=c_clip, **data.flags(), **kw
    )
    disc = rlscan_jax.discounted_returns(data.rewards, next_values=data.q_next, **data.flags(), **kw)
    chex.assert_trees_all_close(g, disc, **F32)


# ----------------------------------------------------------------------------- independence

# One row of three episodes: steps 0-7 (terminated at 7), 8-15 (truncated at 15), 16-23 (window edge).
T_IND = 24
EPISODES = [slice(0, 8), slice(8, 16), slice(16, 24)]


def _independence_inputs(op):
    inp = build(op, MAIN_MODE[op], T_IND, (3,), 0)
    a = inp.args
    if "done" in a:
        a["done"] = np.zeros((T_IND, 3), bool)
        a["done"][[7, 15], :] = True
    if "terminated" in a:
        a["terminated"] = np.zeros((T_IND, 3), bool)
        a["terminated"][7, :] = True
        if "truncated" in a:
            a["truncated"] = np.zeros((T_IND, 3), bool)
            a["truncated"][15, :] = True
        else:
            a["terminated"][15, :] = True
    return inp


@pytest.mark.parametrize("episode", [0, 1, 2], ids=lambda e: f"ep{e}")
@pytest.mark.parametrize("op", OP_NAMES)
def test_outputs_never_depend_on_another_episode_or_row(op, episode, implementation):
    """Replacing every input of one episode of row 1 changes nothing outside that episode."""
    inp = _independence_inputs(op)
    ref = call(inp, implementation)
    rng = np.random.default_rng(episode)
    args = dict(inp.args)
    steps = EPISODES[episode] if op != "linear_scan" else slice(None)
    for k in inp.float_names():
        x = np.array(args[k])
        if k in ("bootstrap_value", "initial"):
            owner = 2 if k == "bootstrap_value" or args.get("reverse") else 0
            if owner == episode or op == "linear_scan":
                x[1] = rng.normal(size=x[1].shape) * 10
        elif x.ndim >= 2:
            x[steps, 1] = rng.normal(size=x[steps, 1].shape) * 10
        args[k] = x
    out = call(inp, implementation, args)
    for o, r in zip(out, ref, strict=True):
        o, r = np.asarray(o), np.asarray(r)
        assert_equal(o[:, [0, 2]], r[:, [0, 2]])
        if op != "linear_scan":
            others = np.ones(T_IND, bool)
            others[EPISODES[episode]] = False
            assert_equal(o[others, 1], r[others, 1])
            assert not np.array_equal(o[EPISODES[episode], 1], r[EPISODES[episode], 1])
