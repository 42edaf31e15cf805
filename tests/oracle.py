"""An independent sequential oracle for every public function, written from DESIGN.md §2.

Plain loops over time, one step at a time, exactly as the formulas read. Nothing here imports
rlscan_jax or shares code with it. Time is axis 0 and any number of batch axes may follow.

Every function takes `xp` (NumPy by default, in float64). Passing `xp=jax.numpy` runs the same
loops in JAX, which gives an independent autodiff gradient for the gradient tests (run it with
x64 enabled to keep float64). Flags are never differentiated and are always read with NumPy.

The terms γ(1 - term_t)·x are written as where(term_t, 0, γ·x): identical for finite x, and they
keep a NaN of the next episode out of a terminated step, as the formulas mean.
"""

from __future__ import annotations

import numpy as np


def _float(x, xp):
    if xp is np:
        return np.asarray(x, dtype=np.float64)
    return xp.asarray(x)


def _flag(x, shape) -> np.ndarray:
    if x is None:
        return np.zeros(shape, dtype=bool)
    x = np.asarray(x)
    if x.shape != shape:
        raise ValueError(f"flag shape {x.shape} != {shape}")
    return x != 0


def _per_step(p, shape, xp):
    """gamma / lambda_: a scalar or an array broadcastable to the per-step shape [T, *B]."""
    return xp.broadcast_to(_float(p, xp), shape)


def _clip(c, xp):
    return _float(np.inf if c is None else c, xp)


def _next_state_values(values, next_values, bootstrap_value, shape, xp):
    """v'_t: next_values[t] if given; else values[t+1], and bootstrap_value (or 0) at t = T-1."""
    if next_values is not None:
        nv = _float(next_values, xp)
        if nv.shape != shape:
            raise ValueError(f"next_values shape {nv.shape} != {shape}")
        return [nv[t] for t in range(shape[0])]
    boot = _float(0.0 if bootstrap_value is None else bootstrap_value, xp)
    boot = xp.broadcast_to(boot, shape[1:])
    if values is None:
        later = [xp.zeros(shape[1:]) for _ in range(shape[0] - 1)]
    else:
        later = [values[t + 1] for t in range(shape[0] - 1)]
    return [*later, boot]


def _discount_unless(term_t, gamma_t, x, xp):
    return xp.where(term_t, 0.0, gamma_t * x)


def gae(
    rewards,
    values,
    terminated=None,
    truncated=None,
    next_values=None,
    bootstrap_value=None,
    gamma=0.99,
    lambda_=0.95,
    xp=np,
):
    """Returns (advantages, returns), each [T, *B]."""
    r = _float(rewards, xp)
    v = _float(values, xp)
    shape = r.shape
    T = shape[0]
    term = _flag(terminated, shape)
    done = term | _flag(truncated, shape)
    g = _per_step(gamma, shape, xp)
    lam = _per_step(lambda_, shape, xp)
    nv = _next_state_values(v, next_values, bootstrap_value, shape, xp)
    adv = [None] * T
    for t in reversed(range(T)):
        delta = r[t] + _discount_unless(term[t], g[t], nv[t], xp) - v[t]
        if t == T - 1:
            adv[t] = delta  # A_T = 0
        else:
            adv[t] = delta + xp.where(done[t], 0.0, g[t] * lam[t] * adv[t + 1])
    adv = xp.stack(adv)
    return adv, adv + v


def vtrace(
    rewards,
    values,
    log_rhos,
    terminated=None,
    truncated=None,
    next_values=None,
    bootstrap_value=None,
    gamma=0.99,
    lambda_=1.0,
    rho_clip=1.0,
    c_clip=1.0,
    pg_rho_clip=1.0,
    xp=np,
):
    """Returns (vs, pg_advantages), each [T, *B]."""
    r = _float(rewards, xp)
    v = _float(values, xp)
    shape = r.shape
    T = shape[0]
    term = _flag(terminated, shape)
    done = term | _flag(truncated, shape)
    g = _per_step(gamma, shape, xp)
    lam = _per_step(lambda_, shape, xp)
    rho = xp.exp(_float(log_rhos, xp))
    rho_bar = xp.minimum(_clip(rho_clip, xp), rho)
    c = lam * xp.minimum(_clip(c_clip, xp), rho)
    pg_rho = xp.minimum(_clip(pg_rho_clip, xp), rho)
    nv = _next_state_values(v, next_values, bootstrap_value, shape, xp)
    diff = [None] * T  # vs - V
    for t in reversed(range(T)):
        delta = rho_bar[t] * (r[t] + _discount_unless(term[t], g[t], nv[t], xp) - v[t])
        if t == T - 1:
            diff[t] = delta
        else:
            diff[t] = delta + xp.where(done[t], 0.0, g[t] * c[t] * diff[t + 1])
    vs = [v[t] + diff[t] for t in range(T)]
    pg = []
    for t in range(T):
        w = nv[t] if t == T - 1 else xp.where(done[t], nv[t], vs[t + 1])
        pg.append(pg_rho[t] * (r[t] + _discount_unless(term[t], g[t], w, xp) - v[t]))
    return xp.stack(vs), xp.stack(pg)


def retrace(
    rewards,
    q_values,
    next_values,
    log_rhos,
    terminated=None,
    truncated=None,
    gamma=0.99,
    lambda_=1.0,
    c_clip=1.0,
    xp=np,
):
    """Returns q_targets [T, *B]."""
    r = _float(rewards, xp)
    q = _float(q_values, xp)
    nv = _float(next_values, xp)
    shape = r.shape
    T = shape[0]
    term = _flag(terminated, shape)
    done = term | _flag(truncated, shape)
    g = _per_step(gamma, shape, xp)
    lam = _per_step(lambda_, shape, xp)
    c = lam * xp.minimum(_clip(c_clip, xp), xp.exp(_float(log_rhos, xp)))
    out = [None] * T
    for t in reversed(range(T)):
        target = r[t] + _discount_unless(term[t], g[t], nv[t], xp)
        if t == T - 1:
            out[t] = target  # the trace term is 0 at the window edge
        else:
            trace = g[t] * c[t + 1] * (out[t + 1] - q[t + 1])
            out[t] = target + xp.where(done[t], 0.0, trace)
    return xp.stack(out)


def lambda_returns(
    rewards,
    values=None,
    terminated=None,
    truncated=None,
    next_values=None,
    bootstrap_value=None,
    gamma=0.99,
    lambda_=0.95,
    xp=np,
):
    """Returns G [T, *B]."""
    r = _float(rewards, xp)
    shape = r.shape
    T = shape[0]
    v = None if values is None else _float(values, xp)
    term = _flag(terminated, shape)
    done = term | _flag(truncated, shape)
    g = _per_step(gamma, shape, xp)
    lam = _per_step(lambda_, shape, xp)
    nv = _next_state_values(v, next_values, bootstrap_value, shape, xp)
    out = [None] * T
    for t in reversed(range(T)):
        if t == T - 1:
            out[t] = r[t] + _discount_unless(term[t], g[t], nv[t], xp)
        else:
            mixed = (1.0 - lam[t]) * nv[t] + lam[t] * out[t + 1]
            out[t] = r[t] + _discount_unless(term[t], g[t], xp.where(done[t], nv[t], mixed), xp)
    return xp.stack(out)


def discounted_returns(
    rewards,
    terminated=None,
    truncated=None,
    next_values=None,
    bootstrap_value=None,
    gamma=0.99,
    xp=np,
):
    """Returns G [T, *B]; the bootstrap is zero unless next_values or bootstrap_value is given."""
    r = _float(rewards, xp)
    shape = r.shape
    T = shape[0]
    term = _flag(terminated, shape)
    done = term | _flag(truncated, shape)
    g = _per_step(gamma, shape, xp)
    nv = _next_state_values(None, next_values, bootstrap_value, shape, xp)
    out = [None] * T
    for t in reversed(range(T)):
        if t == T - 1:
            follow = nv[t]
        else:
            follow = xp.where(done[t], nv[t], out[t + 1])
        out[t] = r[t] + _discount_unless(term[t], g[t], follow, xp)
    return xp.stack(out)


def _expand(x, ndim, xp):
    """Adds trailing unit axes so a per-step quantity broadcasts over feature axes."""
    return xp.reshape(x, x.shape + (1,) * (ndim - x.ndim))


def eligibility_traces(inputs, done=None, gamma=0.9, lambda_=0.9, initial=None, xp=np):
    """Returns e [T, *B, *F]: e_t = x_t + γ_t λ_t (1 - done_{t-1}) e_{t-1}, e_{-1} = initial."""
    x = _float(inputs, xp)
    step_shape = x.shape if done is None else np.shape(done)
    d = _flag(done, step_shape)
    decay = _per_step(gamma, step_shape, xp) * _per_step(lambda_, step_shape, xp)
    decay = _expand(decay, x.ndim, xp)
    prev = xp.broadcast_to(_float(0.0 if initial is None else initial, xp), x.shape[1:])
    out = []
    for t in range(x.shape[0]):
        keep = True if t == 0 else _expand(~d[t - 1], x.ndim - 1, np)
        e = x[t] + xp.where(keep, decay[t] * prev, 0.0)
        out.append(e)
        prev = e
    return xp.stack(out)


def episodic_cumsum(inputs, done=None, initial=None, reverse=False, xp=np):
    """Forward c_t = x_t + (1 - done_{t-1}) c_{t-1}; reverse c_t = x_t + (1 - done_t) c_{t+1}."""
    x = _float(inputs, xp)
    T = x.shape[0]
    step_shape = x.shape if done is None else np.shape(done)
    d = _flag(done, step_shape)
    carry = xp.broadcast_to(_float(0.0 if initial is None else initial, xp), x.shape[1:])
    out = [None] * T
    order = reversed(range(T)) if reverse else range(T)
    for t in order:
        if reverse:
            keep = _expand(~d[t], x.ndim - 1, np)
        else:
            keep = True if t == 0 else _expand(~d[t - 1], x.ndim - 1, np)
        out[t] = x[t] + xp.where(keep, carry, 0.0)
        carry = out[t]
    return xp.stack(out)


def linear_scan(a, b, initial=None, reverse=False, xp=np):
    """Forward h_t = a_t + b_t h_{t-1}, h_{-1} = initial; reverse h_t = a_t + b_t h_{t+1}, h_T = initial."""
    a = _float(a, xp)
    b = xp.broadcast_to(_float(b, xp), a.shape)
    T = a.shape[0]
    carry = xp.broadcast_to(_float(0.0 if initial is None else initial, xp), a.shape[1:])
    out = [None] * T
    order = reversed(range(T)) if reverse else range(T)
    for t in order:
        out[t] = a[t] + b[t] * carry
        carry = out[t]
    return xp.stack(out)
