"""The backward pass of GAE, λ-returns and discounted returns as one kernel (KIND selects), and
of linear_scan (linear_adjoint_kernel, at the end).

The forward pass is a backward scan, h_t = a_t + [not done_t] b_t h_{t+1} (nothing enters at
T-1). Its adjoint is a forward scan over the output cotangent g (GAE: of advantages plus returns):

    u_t = g_t + [not done_{t-1}] b_{t-1} u_{t-1},   nothing entering at t = 0,

with b_t = γ_t λ_t (GAE, λ-returns) or γ_t (discounted returns). With a_t = r_t + k_t v'_t
(- V_t for GAE), where, selected to 0 at terminated steps,

    k_t = γ_t · 1                                   GAE
        = γ_t · (1 if done_t or t = T-1 else 1-λ_t)  λ-returns
        = γ_t · (1 if done_t or t = T-1 else 0)      discounted returns,

the inputs' gradients follow from u alone, and are written in the inputs' dtypes:

    d rewards_t = u_t
    d next_values_t = k_t u_t                      (v'_t from next_values)
    d bootstrap_value = k_{T-1} u_{T-1}             (v'_{T-1} from bootstrap_value)
    d values_t = k_{t-1} u_{t-1} [t > 0]            (v'_t from values_{t+1})
               - u_t + d returns_t                  (GAE: a_t has -V_t, returns = A_t + V_t).

The coefficients are built from the raw flags in registers, as the forward kernels do: no array
of b, of the shifted flags or of u is written (u only with STORE_U, for the parameters'
gradients, ops.py).
"""

import triton
import triton.language as tl

from rlscan_jax._src.triton.kernels import common


@triton.jit
def _flags(p_term, p_trunc, off, m, HAS_TERM: tl.constexpr, HAS_TRUNC: tl.constexpr):
    """(terminated, done) at `off` as int1 blocks (false outside m and where a flag is absent)."""
    term = m & False
    if HAS_TERM:
        term = common.load_flag(p_term, off, m)
    done = term
    if HAS_TRUNC:
        done = done | common.load_flag(p_trunc, off, m)
    return term, done


@triton.jit
def _bootstrap_grad(u, term, end, b_g, b_l, KIND: tl.constexpr):
    """k_t · u_t (module docstring); `end`: done_t or t = T-1. Selected, never multiplied, to 0."""
    if KIND == 0:
        x = b_g * u
    elif KIND == 1:
        x = tl.where(end, b_g * u, b_g * (1.0 - b_l) * u)
    else:
        x = tl.where(end, b_g * u, 0.0)
    return tl.where(term, 0.0, x)


@triton.jit
def adjoint_kernel(
    p_g,
    p_g2,
    p_term,
    p_trunc,
    p_gamma,
    p_lam,
    p_h,
    p_v,
    p_nv,
    p_boot,
    p_cin,
    N,
    T,
    INNER,
    CPS,
    p_dr,
    p_dv,
    p_dnv,
    p_dboot,
    p_u,
    p_dgam,
    p_dlam,
    p_sh,
    p_sb,
    p_sync,
    LAYOUT: tl.constexpr,
    VEC: tl.constexpr,
    BIG: tl.constexpr,
    F64: tl.constexpr,
    KIND: tl.constexpr,
    HAS_TERM: tl.constexpr,
    HAS_TRUNC: tl.constexpr,
    HAS_G: tl.constexpr,
    HAS_G2: tl.constexpr,
    HAS_NEXT: tl.constexpr,
    HAS_BOOT: tl.constexpr,
    DR: tl.constexpr,
    DV: tl.constexpr,
    DNV: tl.constexpr,
    DBOOT: tl.constexpr,
    STORE_U: tl.constexpr,
    GAMMA_GRAD: tl.constexpr,
    LAMBDA_GRAD: tl.constexpr,
    GAMMA_FULL: tl.constexpr,
    LAMBDA_FULL: tl.constexpr,
    PHASE: tl.constexpr,
    SINGLE: tl.constexpr,
    BT: tl.constexpr,
    BB: tl.constexpr,
    KP: tl.constexpr,
    FOLD: tl.constexpr,
    FENCE: tl.constexpr,
    WALK_BACK: tl.constexpr,
    STREAM: tl.constexpr,
    CVEC: tl.constexpr,
    MAXNREG: tl.constexpr,  # registers a thread, applied when the launch compiles (custom_call.max_registers)
):
    """KIND 0 GAE (p_g, p_g2: the advantages' and the returns' cotangents, each read where HAS_G,
    HAS_G2: an unused output's is not), 1 λ-returns, 2 discounted returns (HAS_G). HAS_NEXT: v'
    comes from next_values, else from values a step later (GAE, λ-returns) and, where HAS_BOOT,
    the bootstrap value at T-1. DR, DV, DNV and DBOOT: the gradients of rewards, values,
    next_values and bootstrap_value written (each only where the differentiation involves that
    input, ops.SELECTIVE).

    GAMMA_GRAD and LAMBDA_GRAD: the parameter's gradient (`_param_grads`), from the forward pass's
    float32 h (p_h) and v' (p_v, p_nv, p_boot): 0 not written, 1 one a step (p_dgam, p_dlam of the
    steps' shape, for γ of one value a step or per step), 2 one a row for each segment of the plan
    ([nseg, N]: for γ of one value or one a row, summed by the launcher over the segments)."""
    i_b, i_s = common.program(p_sync, T, PHASE, False, BT)
    o_n = common.rows(i_b, BIG, BB)
    ch, cb = common.init_carry(p_cin, p_cin, i_s, o_n, N, PHASE, False, F64, FOLD, T, BT, CPS, False, KP)
    PARAMS: tl.constexpr = GAMMA_GRAD + LAMBDA_GRAD > 0
    acc_g = tl.zeros([BT, BB], dtype=tl.float64 if F64 else tl.float32)
    acc_l = acc_g
    for k in range(CPS):
        c = common.chunk_index(i_s, k, CPS, False, PHASE, WALK_BACK)
        o_t, off, m, ts = common.offsets(o_n, c, N, T, INNER, LAYOUT, BIG, BT, False, VEC, CVEC)
        m_p = m & (o_t > 0)[:, None]  # step t-1 exists
        if HAS_G:
            b_gh = common.load(p_g, off, m, F64)  # [BT, BB]
            if KIND == 0 and HAS_G2:
                b_gh += common.load(p_g2, off, m, F64)
        else:
            b_gh = common.load(p_g2, off, m, F64)
        term_p, done_p = _flags(p_term, p_trunc, off - ts, m_p, HAS_TERM, HAS_TRUNC)
        b_g_p = common.load_param(p_gamma, off - ts, m_p, GAMMA_FULL, F64, o_t - 1, o_n, N, T)
        b_l_p = b_g_p
        if KIND == 2:
            b_b = b_g_p
        else:
            b_l_p = common.load_param(p_lam, off - ts, m_p, LAMBDA_FULL, F64, o_t - 1, o_n, N, T)
            b_b = b_g_p * b_l_p
        # Nothing enters at t = 0 (the forward pass starts from zero at T-1).
        A, B = common.scan(b_gh, b_b, common.edge(o_t, o_n, 0) | done_p, m, False, VEC, LAYOUT)
        if PHASE == 3:
            ch = common.lookback(
                A, B, o_t, o_n, N, T, i_b, i_s, p_sh, p_sb, p_sync, p_cin, False, False, F64, BT, KP, FENCE
            )
        u = common.apply(A, B, ch, SINGLE)
        if PHASE != 1:
            if DR:
                common.store(p_dr, off, u, m, STREAM)
            if STORE_U:
                common.store(p_u, off, u, m, STREAM)
            if DNV or DBOOT or PARAMS:
                term, done = _flags(p_term, p_trunc, off, m, HAS_TERM, HAS_TRUNC)
                last = common.edge(o_t, o_n, T - 1)
                b_g = common.load_param(p_gamma, off, m, GAMMA_FULL, F64, o_t, o_n, N, T)
                b_l = b_g
                if KIND == 1 or (KIND == 0 and PARAMS):
                    b_l = common.load_param(p_lam, off, m, LAMBDA_FULL, F64, o_t, o_n, N, T)
            if PARAMS:
                m_n = m & (o_t < T - 1)[:, None]  # step t+1 exists
                h_n = common.load(p_h, off + ts, m_n, F64)
                v_n = _next_value(p_v, p_nv, p_boot, off, ts, m, m_n, o_n, N, last, KIND, HAS_NEXT, HAS_BOOT, F64)
                b_pg, b_pl = _param_grads(u, h_n, v_n, m, term, done, last, b_g, b_l, KIND)
                if GAMMA_GRAD == 1:
                    common.store(p_dgam, off, b_pg, m, STREAM)
                else:
                    acc_g += b_pg
                if LAMBDA_GRAD == 1:
                    common.store(p_dlam, off, b_pl, m, STREAM)
                else:
                    acc_l += b_pl
            if DNV or DBOOT:
                b_k = _bootstrap_grad(u, term, done | last, b_g, b_l, KIND)
                if DNV:
                    common.store(p_dnv, off, b_k, m, STREAM)
                else:
                    m_last = (o_n < N) & (tl.sum(last.to(tl.int32), axis=0) > 0)  # the chunk holds T-1
                    tl.store(p_dboot + o_n, common.row(b_k, o_t, T - 1).to(p_dboot.dtype.element_ty), mask=m_last)
            if DV:
                b_dv = tl.zeros_like(u)
                if not HAS_NEXT:
                    # u_{t-1}: the row before in the block, and the carry across the chunk's start.
                    u_p = common.previous(u, tl.zeros_like(u) + ch[None, :], m, False, VEC, LAYOUT)
                    b_dv = tl.where(m_p, _bootstrap_grad(u_p, term_p, done_p, b_g_p, b_l_p, KIND), 0.0)
                if KIND == 0:
                    b_dv -= u
                    if HAS_G2:
                        b_dv += common.load(p_g2, off, m, F64)
                common.store(p_dv, off, b_dv, m, STREAM)
        if not SINGLE:
            ch, cb = common.advance(A, B, u, ch, cb, o_t, common.exit_time(c, BT, False), PHASE, WALK_BACK)
    if PHASE == 1:
        common.store_summary(p_sh, p_sb, i_s, o_n, N, ch, cb, FOLD, T, BT, CPS)
    else:
        if GAMMA_GRAD == 2:
            common.store_segment_sums(p_dgam, i_s, o_n, N, acc_g, BIG)
        if LAMBDA_GRAD == 2:
            common.store_segment_sums(p_dlam, i_s, o_n, N, acc_l, BIG)


@triton.jit
def _next_value(
    p_v,
    p_nv,
    p_boot,
    off,
    ts,
    m,
    m_n,
    o_n,
    N,
    last,
    KIND: tl.constexpr,
    HAS_NEXT: tl.constexpr,
    HAS_BOOT: tl.constexpr,
    F64: tl.constexpr,
):
    """v'_t (common.next_state_value): next_values_t, else values_{t+1} (m_n: t+1 exists) and the
    bootstrap value at T-1; discounted returns without next_values bootstrap at T-1 alone."""
    if HAS_NEXT:
        v_n = common.load(p_nv, off, m, F64)
    elif KIND == 2:
        v_n = tl.zeros(off.shape, dtype=tl.float64 if F64 else tl.float32)
    else:
        v_n = common.load(p_v, off + ts, m_n, F64)
    if HAS_BOOT and not HAS_NEXT:
        v_n = tl.where(last, common.load(p_boot, o_n, o_n < N, F64)[None, :], v_n)
    return v_n


@triton.jit
def _param_grads(u, h_n, v_n, m, term, done, last, b_g, b_l, KIND: tl.constexpr):
    """γ's and λ's gradients at each step of the block (0 outside m), the reference's
    d a_t · ∂a_t/∂p + d b_t · ∂b_t/∂p with d a_t = u_t and d b_t = [not done_t] u_t h_{t+1}:

        d γ_t = u_t · k_t / γ_t · v'_t + λ_t · d b_t      (discounted returns: λ_t = 1)
        d λ_t = γ_t · d b_t                               (GAE)
              = γ_t · d b_t - [not end_t] γ_t u_t v'_t     (λ-returns; end_t: done_t or t = T-1)

    (k_t: the module docstring's). h_n: h_{t+1}, the forward pass's float32 state a step later (0
    at T-1, where nothing enters); v_n: v'_t. Terms are selected away, never multiplied by 0, where
    a step is done or terminated: the state beyond an episode's end may be anything, NaN included."""
    d_b = tl.where(m & ~done, u * h_n, 0.0)
    uv = u * v_n
    d_g = tl.where(m, _bootstrap_grad(uv, term, done | last, 1.0, b_l, KIND), 0.0)
    if KIND == 2:
        return d_g + d_b, d_b
    elif KIND == 0:
        return d_g + b_l * d_b, b_g * d_b
    else:
        return d_g + b_l * d_b, b_g * (d_b - tl.where(m & ~(done | last), uv, 0.0))


@triton.jit
def linear_adjoint_kernel(
    p_g,
    p_b,
    p_h,
    p_init,
    p_cin,
    N,
    T,
    INNER,
    CPS,
    p_da,
    p_db,
    p_dinit,
    p_sh,
    p_sb,
    p_sync,
    LAYOUT: tl.constexpr,
    VEC: tl.constexpr,
    BIG: tl.constexpr,
    F64: tl.constexpr,
    REVERSE: tl.constexpr,
    HAS_INITIAL: tl.constexpr,
    B_FULL: tl.constexpr,
    HAS_DB: tl.constexpr,
    PHASE: tl.constexpr,
    SINGLE: tl.constexpr,
    BT: tl.constexpr,
    BB: tl.constexpr,
    KP: tl.constexpr,
    FOLD: tl.constexpr,
    FENCE: tl.constexpr,
    WALK_BACK: tl.constexpr,
    STREAM: tl.constexpr,
    CVEC: tl.constexpr,
    MAXNREG: tl.constexpr,  # registers a thread, applied when the launch compiles (custom_call.max_registers)
):
    """linear_scan's backward pass. Its forward pass h_t = a_t + b_t h_{t-1} (h_{-1} = initial, or
    0) has the adjoint u_t = g_t + b_{t+1} u_{t+1} (u_T = 0), a reverse scan, and

        d a_t = u_t,   d b_t = u_t h_{t-1},   d initial = b_0 u_0;

    a reverse forward pass (h_t = a_t + b_t h_{t+1}, h_T = initial) the same with t+1 and t-1
    exchanged and T-1 for 0. REVERSE is the adjoint's direction (the forward pass's other).
    b at t±1 and h at t∓1 are read at the neighbouring offsets: no shifted copy is written.
    b is an array of a's shape, or a parameter of a smaller shape (B_FULL, common.load_param),
    whose gradient the launcher sums from d b. HAS_DB: 0, h is not read and d b not written; 1, d b
    written at every step (p_db of a's shape); 2, summed over each program's steps, one value a row
    for each segment of the plan ([nseg, N]: b of one value or one a row)."""
    i_b, i_s = common.program(p_sync, T, PHASE, REVERSE, BT)
    o_n = common.rows(i_b, BIG, BB)
    m_n = o_n < N
    ch, cb = common.init_carry(p_cin, p_cin, i_s, o_n, N, PHASE, False, F64, FOLD, T, BT, CPS, REVERSE, KP)
    acc = tl.zeros([BT, BB], dtype=tl.float64 if F64 else tl.float32)
    for k in range(CPS):
        c = common.chunk_index(i_s, k, CPS, REVERSE, PHASE, WALK_BACK)
        o_t, off, m, ts = common.offsets(o_n, c, N, T, INNER, LAYOUT, BIG, BT, REVERSE, VEC, CVEC)
        # d: the offset from step t to the step the adjoint comes from (the forward pass's next);
        # the forward pass came from the other side, and its window edge is t_edge.
        if REVERSE:
            d = ts
            dt = 1
            m_next = m & (o_t < T - 1)[:, None]
            m_prev = m & (o_t > 0)[:, None]
            t_edge = 0
        else:
            d = -ts
            dt = -1
            m_next = m & (o_t > 0)[:, None]
            m_prev = m & (o_t < T - 1)[:, None]
            t_edge = T - 1
        # b of the step the adjoint comes from; 0 (nothing enters) where there is none.
        b_b = common.load_param(p_b, off + d, m_next, B_FULL, F64, o_t + dt, o_n, N, T)
        A, B = common.scan(common.load(p_g, off, m, F64), b_b, m & False, m, REVERSE, VEC, LAYOUT)
        if PHASE == 3:
            ch = common.lookback(
                A, B, o_t, o_n, N, T, i_b, i_s, p_sh, p_sb, p_sync, p_cin, False, REVERSE, F64, BT, KP, FENCE
            )
        u = common.apply(A, B, ch, SINGLE)
        if PHASE != 1:
            common.store(p_da, off, u, m, STREAM)
            at_edge = common.edge(o_t, o_n, t_edge) & m
            if HAS_DB:
                b_h = common.load(p_h, off - d, m_prev, F64)  # h of the step the forward pass came from
                if HAS_INITIAL:
                    b_h = tl.where(at_edge, common.load(p_init, o_n, m_n, F64)[None, :], b_h)
            if HAS_INITIAL:
                b_b0 = common.load_param(p_b, off, at_edge, B_FULL, F64, o_t, o_n, N, T)  # b at the edge alone
                m_e = m_n & (tl.sum(at_edge.to(tl.int32), axis=0) > 0)  # the chunk holds the edge
                tl.store(p_dinit + o_n, common.row(b_b0 * u, o_t, t_edge).to(p_dinit.dtype.element_ty), mask=m_e)
            if HAS_DB == 1:
                common.store(p_db, off, u * b_h, m, STREAM)
            elif HAS_DB == 2:
                acc += tl.where(m, u * b_h, 0.0)
        if not SINGLE:
            ch, cb = common.advance(A, B, u, ch, cb, o_t, common.exit_time(c, BT, REVERSE), PHASE, WALK_BACK)
    if PHASE == 1:
        common.store_summary(p_sh, p_sb, i_s, o_n, N, ch, cb, FOLD, T, BT, CPS)
    elif HAS_DB == 2:
        common.store_segment_sums(p_db, i_s, o_n, N, acc, BIG)
