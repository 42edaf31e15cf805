"""Property tests (hypothesis): a packed trajectory equals its episodes run alone; rows never interact."""

from __future__ import annotations

import chex
import numpy as np
import pytest
from cases import OP_NAMES, build, call
from conftest import IMPLEMENTATIONS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rlscan_jax

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
CLOSE = {"rtol": 1e-5, "atol": 1e-5}

unit = st.sampled_from([0.0, 0.5, 0.9, 1.0]) | st.floats(0.0, 1.0, width=32)


@st.composite
def trajectories(draw, min_T=1, max_T=8):
    """A [T] window: episode ends (terminated or truncated) at random steps, plus data."""
    T = draw(st.integers(min_T, max_T))
    ends = draw(st.lists(st.sampled_from(["-", "term", "trunc"]), min_size=T, max_size=T))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    term = np.array([e == "term" for e in ends])
    trunc = np.array([e == "trunc" for e in ends])
    f = {k: rng.normal(size=T).astype(np.float32) for k in ("rewards", "values", "final", "q", "x")}
    f["log_rhos"] = rng.normal(0.0, 0.8, size=T).astype(np.float32)
    boot = np.float32(rng.normal())
    f["boot"] = boot
    # next_values: values[t+1] inside an episode, the final observation's value where it ended,
    # the bootstrap at the window edge.
    shifted = np.append(f["values"][1:], boot)
    f["next_values"] = np.where(term | trunc, f["final"], shifted).astype(np.float32)
    f["initial"] = np.float32(rng.normal())
    return T, term, trunc, f, draw(unit), draw(unit)


def segments(term, trunc):
    """[start, stop) of each episode: split after every ended step and at the window edge."""
    done = term | trunc
    out, start = [], 0
    for t in range(len(done)):
        if done[t] or t == len(done) - 1:
            out.append((start, t + 1))
            start = t + 1
    return out


BACKWARD = ["gae", "vtrace", "retrace", "lambda_returns", "discounted_returns"]


def packed_and_alone(op, T, term, trunc, f, gamma, lam, implementation):
    """The op on the packed window (with next_values) and on each episode alone.

    Alone, an episode gets values[t+1] inside and, as bootstrap_value, the value after its last
    step (next_values there): a truncated end and a window edge look the same; a terminated end
    keeps its flag.
    """
    kw = {"gamma": gamma, "implementation": implementation}
    if op != "discounted_returns":
        kw["lambda_"] = lam
    flags = {"terminated": term, "truncated": trunc}

    def run(sl, alone):
        s = slice(*sl)
        fl = {"terminated": term[s]} if alone else flags
        if alone:
            boot = {"bootstrap_value": f["next_values"][sl[1] - 1]}
        else:
            boot = {"next_values": f["next_values"]}
        if op == "gae":
            return rlscan_jax.gae(f["rewards"][s], f["values"][s], **fl, **boot, **kw)
        if op == "vtrace":
            return rlscan_jax.vtrace(f["rewards"][s], f["values"][s], f["log_rhos"][s], **fl, **boot, **kw)
        if op == "lambda_returns":
            return (rlscan_jax.lambda_returns(f["rewards"][s], f["values"][s], **fl, **boot, **kw),)
        if op == "discounted_returns":
            return (rlscan_jax.discounted_returns(f["rewards"][s], **fl, **boot, **kw),)
        # retrace always takes next_values; alone, the window edge stands for a truncation
        nv = f["next_values"][s]
        return (rlscan_jax.retrace(f["rewards"][s], f["q"][s], nv, f["log_rhos"][s], **fl, **kw),)

    whole = run((0, T), alone=False)
    parts = [run(sl, alone=True) for sl in segments(term, trunc)]
    return whole, [np.concatenate([np.asarray(p[i]) for p in parts]) for i in range(len(whole))]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("op", BACKWARD)
@SETTINGS
@given(traj=trajectories())
def test_packed_trajectory_equals_its_episodes_alone(op, implementation, traj):
    T, term, trunc, f, gamma, lam = traj
    whole, alone = packed_and_alone(op, T, term, trunc, f, gamma, lam, implementation)
    chex.assert_trees_all_close(tuple(np.asarray(w) for w in whole), tuple(alone), **CLOSE)


FORWARD = ["eligibility_traces", "episodic_cumsum", "episodic_cumsum-reverse"]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("op", FORWARD)
@SETTINGS
@given(traj=trajectories())
def test_packed_sums_equal_their_episodes_alone(op, implementation, traj):
    """Forward traces and sums: each episode alone, with the window's initial carry where it enters."""
    _, term, trunc, f, gamma, lam = traj
    done = term | trunc
    reverse = op.endswith("reverse")
    x, initial = f["x"], f["initial"]

    def run(s, d, init):
        if op == "eligibility_traces":
            return rlscan_jax.eligibility_traces(
                x[s], d, gamma=gamma, lambda_=lam, initial=init, implementation=implementation
            )
        return rlscan_jax.episodic_cumsum(x[s], d, initial=init, reverse=reverse, implementation=implementation)

    whole = run(slice(None), done, initial)
    segs = segments(term, trunc)
    parts = []
    for i, (a, b) in enumerate(segs):
        enters = (i == len(segs) - 1) if reverse else (i == 0)
        # Alone, an episode keeps its own last flag: for a reverse sum it blocks the window's carry.
        parts.append(np.asarray(run(slice(a, b), done[a:b], initial if enters else None)))
    chex.assert_trees_all_close(np.asarray(whole), np.concatenate(parts), **CLOSE)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("op", ["linear_scan", "linear_scan-reverse", "eligibility_traces", "episodic_cumsum"])
@SETTINGS
@given(traj=trajectories(min_T=2), cut=st.integers(1, 7))
def test_window_split_with_its_carry(op, implementation, traj, cut):
    """Solving [0, k) then [k, T) with the carry as `initial` equals solving [0, T) at once."""
    T, term, trunc, f, gamma, lam = traj
    k = min(cut, T - 1)
    x, b = f["x"], (f["values"] * 0.9).astype(np.float32)
    done = term | trunc
    kw = {"implementation": implementation}
    if op.startswith("linear_scan"):
        reverse = op.endswith("reverse")
        whole = np.asarray(rlscan_jax.linear_scan(x, b, initial=f["initial"], reverse=reverse, **kw))
        if reverse:
            tail = rlscan_jax.linear_scan(x[k:], b[k:], initial=f["initial"], reverse=True, **kw)
            head = rlscan_jax.linear_scan(x[:k], b[:k], initial=tail[0], reverse=True, **kw)
        else:
            head = rlscan_jax.linear_scan(x[:k], b[:k], initial=f["initial"], **kw)
            tail = rlscan_jax.linear_scan(x[k:], b[k:], initial=head[-1], **kw)
    elif op == "eligibility_traces":
        p = {"gamma": gamma, "lambda_": lam}
        whole = np.asarray(rlscan_jax.eligibility_traces(x, done, initial=f["initial"], **p, **kw))
        head = rlscan_jax.eligibility_traces(x[:k], done[:k], initial=f["initial"], **p, **kw)
        carry = np.where(done[k - 1], 0.0, np.asarray(head[-1])).astype(np.float32)
        tail = rlscan_jax.eligibility_traces(x[k:], done[k:], initial=carry, **p, **kw)
    else:
        whole = np.asarray(rlscan_jax.episodic_cumsum(x, done, initial=f["initial"], **kw))
        head = rlscan_jax.episodic_cumsum(x[:k], done[:k], initial=f["initial"], **kw)
        carry = np.where(done[k - 1], 0.0, np.asarray(head[-1])).astype(np.float32)
        tail = rlscan_jax.episodic_cumsum(x[k:], done[k:], initial=carry, **kw)
    chex.assert_trees_all_close(whole, np.concatenate([np.asarray(head), np.asarray(tail)]), **CLOSE)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("op", OP_NAMES)
@SETTINGS
@given(T=st.sampled_from([1, 5, 9]), row=st.integers(0, 2), seed=st.integers(0, 2**31 - 1))
def test_rows_never_influence_each_other(op, implementation, T, row, seed):
    """Replacing every input of one row (flags included) leaves the other rows bit-for-bit equal."""
    mode = {"eligibility_traces": "feat", "episodic_cumsum": "rev-init", "linear_scan": "fwd-init"}.get(op, "nv")
    inp = build(op, mode, T, (3,), -1, seed=seed % 1000)
    ref = call(inp, implementation)
    other = build(op, mode, T, (3,), -1, seed=seed % 1000 + 1000)
    args = dict(inp.args)
    for k, v in inp.args.items():
        if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == 3:
            x = np.array(v)
            x[row] = other.args[k][row]
            args[k] = x
    out = call(inp, implementation, args)
    keep = [i for i in range(3) if i != row]
    for o, r in zip(out, ref, strict=True):
        np.testing.assert_array_equal(np.asarray(o)[keep], np.asarray(r)[keep])
