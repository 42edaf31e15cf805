"""The backward passes of V-trace and Retrace(λ), each one kernel (see adjoint.py for the others).

Both forward passes are backward scans h_t = a_t + [cont_t] b_t h_{t+1}, cont_t = not done_t and
t < T-1, whose adjoint is the forward scan over the cotangent g_h of h

    u_t = g_h_t + [cont_{t-1}] b_{t-1} u_{t-1},   nothing entering at t = 0,

with da_t = u_t and db_t = [cont_t] u_t h_{t+1}. Below ρ_t = exp(log_rhos_t), and d min(x, c)/dx
is [x < c] + ½[x = c] (`_dmin`: jnp.minimum's rule; ρ = 1 = the clip is the on-policy case).

V-trace (b_t = γ_t c_t, c_t = λ_t min(c̄, ρ_t), ρ̄_t = min(ρ̄, ρ_t), π_t = min(ρ̄_pg, ρ_t);
g, g2: the cotangents of vs and pg). vs_t = V_t + h_t, pg_t = π_t (r_t + [not term_t] γ_t w_t - V_t)
with w_t = vs_{t+1} where cont_t, else v'_t. With e_t = [cont_t] γ_t π_t g2_t (pg_t's weight on
vs_{t+1}) and k_t = [not term_t] γ_t (ρ̄_t u_t + [not cont_t] π_t g2_t) (v'_t's gradient):

    g_h_t = g_t + e_{t-1}
    d rewards_t = ρ̄_t u_t + π_t g2_t
    d next_values_t = k_t;   d bootstrap_value = k_{T-1}
    d values_t = g_h_t - ρ̄_t u_t - π_t g2_t + k_{t-1} [t > 0, v' from values_{t+1}]
    d log_rhos_t = ρ_t (u_t δ_t dmin(ρ_t, ρ̄) + db_t γ_t λ_t dmin(ρ_t, c̄) + g2_t δ'_t dmin(ρ_t, ρ̄_pg))

with δ_t = r_t + [not term_t] γ_t v'_t - V_t and δ'_t = pg_t / π_t.

Retrace (a_t = r_t + [not term_t] γ_t v'_t - [cont_t] γ_t c_{t+1} q_{t+1}, b_t = γ_t c_{t+1},
G = h). With s_t = [cont_{t-1}] γ_{t-1} u_{t-1} (0 at t = 0):

    d rewards_t = u_t,   d next_values_t = [not term_t] γ_t u_t,   d q_values_t = -c_t s_t
    d log_rhos_t = s_t (h_t - q_t) λ_t ρ_t dmin(ρ_t, c̄)
    d γ_t = [not term_t] u_t v'_t + [cont_t] u_t c_{t+1} (h_{t+1} - q_{t+1})
    d λ_t = s_t (h_t - q_t) min(c̄, ρ_t)

u_{t-1} is the previous row of the block, and across a chunk's start the carry entering it
(`common.previous`, a shift as a scan). Flags select, never multiply. u is written (in
float32 or float64) only with STORE_U, for the parameters' gradients (ops.py).
"""

import triton
import triton.language as tl

from rlscan_jax._src.triton.kernels import common
from rlscan_jax._src.triton.kernels.adjoint import _flags


@triton.jit
def _dmin(x, c):
    """d min(x, c) / dx as jnp.minimum differentiates it: 1 below c, ½ at c, 0 above."""
    return tl.where(x < c, 1.0, tl.where(x == c, 0.5, 0.0))


@triton.jit
def _previous(u, ch, m, VEC: tl.constexpr, LAYOUT: tl.constexpr):
    """u_{t-1} [BT, BB]: the row before in the block, and the carry `ch` across the chunk's start."""
    return common.previous(u, tl.zeros_like(u) + ch[None, :], m, False, VEC, LAYOUT)


@triton.jit
def vtrace_adjoint_kernel(
    p_g,
    p_g2,
    p_r,
    p_v,
    p_lr,
    p_nv,
    p_boot,
    p_h,
    p_term,
    p_trunc,
    p_gamma,
    p_lam,
    p_rho_clip,
    p_c_clip,
    p_pg_clip,
    p_cin,
    N,
    T,
    INNER,
    CPS,
    p_dr,
    p_dv,
    p_dlr,
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
    HAS_TERM: tl.constexpr,
    HAS_TRUNC: tl.constexpr,
    HAS_G: tl.constexpr,
    HAS_G2: tl.constexpr,
    HAS_NEXT: tl.constexpr,
    DR: tl.constexpr,
    DV: tl.constexpr,
    DLR: tl.constexpr,
    DNV: tl.constexpr,
    DBOOT: tl.constexpr,
    STORE_U: tl.constexpr,
    GAMMA_GRAD: tl.constexpr,
    LAMBDA_GRAD: tl.constexpr,
    GAMMA_FULL: tl.constexpr,
    LAMBDA_FULL: tl.constexpr,
    RHO_CLIP_FULL: tl.constexpr,
    C_CLIP_FULL: tl.constexpr,
    PG_CLIP_FULL: tl.constexpr,
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
    """HAS_NEXT: v' from next_values, else from values and the bootstrap. HAS_G, HAS_G2: vs's and
    pg's cotangents are read (else that output is unused, its cotangent 0). DR, DV, DLR, DNV and
    DBOOT: the gradients of rewards, values, log_rhos, next_values and bootstrap_value written (each
    only where the differentiation involves that input, ops.SELECTIVE); d log_rhos alone reads
    rewards, values, v' and h.

    GAMMA_GRAD and LAMBDA_GRAD: γ's and λ's gradients, from the forward pass's float32 h and v',
    as adjoint_kernel writes them (0 not written, 1 one a step, 2 one a row for each segment of
    the plan, summed over each program's steps), with no u written:

        d γ_t = [not term_t] (ρ̄_t u_t v'_t + π_t g2_t w_t) + c_t db_t,   d λ_t = γ_t min(c̄, ρ_t) db_t."""
    i_b, i_s = common.program(p_sync, T, PHASE, False, BT)
    o_n = common.rows(i_b, BIG, BB)
    ch, cb = common.init_carry(p_cin, p_cin, i_s, o_n, N, PHASE, False, F64, FOLD, T, BT, CPS, False, KP)
    PARAMS: tl.constexpr = GAMMA_GRAD + LAMBDA_GRAD > 0
    acc_g = tl.zeros([BT, BB], dtype=tl.float64 if F64 else tl.float32)
    acc_l = acc_g
    for k in range(CPS):
        c = common.chunk_index(i_s, k, CPS, False, PHASE, WALK_BACK)
        o_t, off, m, ts = common.offsets(o_n, c, N, T, INNER, LAYOUT, BIG, BT, False, VEC, CVEC)
        # Step t-1 (none at t = 0): its flags, γ, c and e enter u_t.
        m_p = m & (o_t > 0)[:, None]
        term_p, done_p = _flags(p_term, p_trunc, off - ts, m_p, HAS_TERM, HAS_TRUNC)
        b_g_p = common.load_param(p_gamma, off - ts, m_p, GAMMA_FULL, F64, o_t - 1, o_n, N, T)
        b_rho_p = tl.exp(common.load(p_lr, off - ts, m_p, F64))
        b_c_p = common.load_param(p_lam, off - ts, m_p, LAMBDA_FULL, F64, o_t - 1, o_n, N, T) * tl.minimum(
            common.load_param(p_c_clip, off - ts, m_p, C_CLIP_FULL, F64, o_t - 1, o_n, N, T), b_rho_p
        )
        if HAS_G:
            b_gh = common.load(p_g, off, m, F64)
        else:
            b_gh = tl.zeros(off.shape, dtype=tl.float64 if F64 else tl.float32)
        if HAS_G2:
            b_pgw_p = tl.minimum(
                common.load_param(p_pg_clip, off - ts, m_p, PG_CLIP_FULL, F64, o_t - 1, o_n, N, T), b_rho_p
            ) * common.load(p_g2, off - ts, m_p, F64)  # π_{t-1} g2_{t-1}
            b_gh += tl.where(m_p & ~done_p, b_g_p * b_pgw_p, 0.0)
        A, B = common.scan(b_gh, b_g_p * b_c_p, common.edge(o_t, o_n, 0) | done_p, m, False, VEC, LAYOUT)
        if PHASE == 3:
            ch = common.lookback(
                A, B, o_t, o_n, N, T, i_b, i_s, p_sh, p_sb, p_sync, p_cin, False, False, F64, BT, KP, FENCE
            )
        u = common.apply(A, B, ch, SINGLE)
        if PHASE != 1:
            if STORE_U:
                common.store(p_u, off, u, m, STREAM)
            term, done = _flags(p_term, p_trunc, off, m, HAS_TERM, HAS_TRUNC)
            last = common.edge(o_t, o_n, T - 1)
            cont = ~(done | last)
            b_rho = tl.exp(common.load(p_lr, off, m, F64))
            b_g = common.load_param(p_gamma, off, m, GAMMA_FULL, F64, o_t, o_n, N, T)
            rho_clip = common.load_param(p_rho_clip, off, m, RHO_CLIP_FULL, F64, o_t, o_n, N, T)
            b_ru = tl.minimum(rho_clip, b_rho) * u
            if HAS_G2:
                pg_clip = common.load_param(p_pg_clip, off, m, PG_CLIP_FULL, F64, o_t, o_n, N, T)
                b_g2 = common.load(p_g2, off, m, F64)
                b_pgw = tl.minimum(pg_clip, b_rho) * b_g2
                b_k = tl.where(term, 0.0, b_g * (b_ru + tl.where(cont, 0.0, b_pgw)))
            else:
                b_k = tl.where(term, 0.0, b_g * b_ru)
            if DLR or PARAMS:
                m1 = m & ~last  # t+1 exists
                c_clip = common.load_param(p_c_clip, off, m, C_CLIP_FULL, F64, o_t, o_n, N, T)
                b_h1 = common.load(p_h, off + ts, m1, F64)  # h_{t+1}
                b_v1 = common.load(p_v, off + ts, m1, F64)  # V_{t+1}
                if HAS_NEXT:
                    b_nv = common.load(p_nv, off, m, F64)
                else:
                    b_boot = common.load(p_boot, o_n, o_n < N, F64)
                    b_nv = tl.where(last, b_boot[None, :], b_v1)
                b_db = tl.where(cont, u * b_h1, 0.0)
                b_lam = common.load_param(p_lam, off, m, LAMBDA_FULL, F64, o_t, o_n, N, T)
                if HAS_G2:
                    b_w = tl.where(cont, b_v1 + b_h1, b_nv)  # pg's v' (vs_{t+1} where the scan goes on)
            if DLR:
                b_r = common.load(p_r, off, m, F64)
                b_v = common.load(p_v, off, m, F64)
                delta = b_r + tl.where(term, 0.0, b_g * b_nv) - b_v
                b_s = u * delta * _dmin(b_rho, rho_clip) + b_db * b_g * b_lam * _dmin(b_rho, c_clip)
                if HAS_G2:
                    delta_pg = b_r + tl.where(term, 0.0, b_g * b_w) - b_v
                    b_s += b_g2 * delta_pg * _dmin(b_rho, pg_clip)
                common.store(p_dlr, off, b_rho * b_s, m, STREAM)
            if PARAMS:
                b_cd = tl.minimum(c_clip, b_rho) * b_db  # min(c̄, ρ_t) db_t
                if GAMMA_GRAD:
                    b_pv = b_ru * b_nv
                    if HAS_G2:
                        b_pv += b_pgw * b_w
                    b_pg = tl.where(m, tl.where(term, 0.0, b_pv) + b_lam * b_cd, 0.0)
                    if GAMMA_GRAD == 1:
                        common.store(p_dgam, off, b_pg, m, STREAM)
                    else:
                        acc_g += b_pg
                if LAMBDA_GRAD:
                    b_pl = tl.where(m, b_g * b_cd, 0.0)
                    if LAMBDA_GRAD == 1:
                        common.store(p_dlam, off, b_pl, m, STREAM)
                    else:
                        acc_l += b_pl
            if DR:
                b_dr = b_ru
                if HAS_G2:
                    b_dr += b_pgw
                common.store(p_dr, off, b_dr, m, STREAM)
            if HAS_NEXT:
                if DNV:
                    common.store(p_dnv, off, b_k, m, STREAM)
            elif DBOOT:
                m_last = (o_n < N) & (tl.sum(last.to(tl.int32), axis=0) > 0)  # the chunk holds T-1
                tl.store(p_dboot + o_n, common.row(b_k, o_t, T - 1).to(p_dboot.dtype.element_ty), mask=m_last)
            if DV:
                b_dv = b_gh - b_ru
                if HAS_G2:
                    b_dv -= b_pgw
                if not HAS_NEXT:
                    # k_{t-1}: v'_{t-1} is V_t.
                    b_ru_p = tl.minimum(
                        common.load_param(p_rho_clip, off - ts, m_p, RHO_CLIP_FULL, F64, o_t - 1, o_n, N, T), b_rho_p
                    )
                    b_k_p = b_ru_p * _previous(u, ch, m, VEC, LAYOUT)
                    if HAS_G2:
                        b_k_p += tl.where(done_p, b_pgw_p, 0.0)
                    b_dv += tl.where(m_p & ~term_p, b_g_p * b_k_p, 0.0)
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
def retrace_adjoint_kernel(
    p_g,
    p_q,
    p_lr,
    p_h,
    p_nv,
    p_term,
    p_trunc,
    p_gamma,
    p_lam,
    p_c_clip,
    p_cin,
    N,
    T,
    INNER,
    CPS,
    p_dr,
    p_dq,
    p_dnv,
    p_dlr,
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
    HAS_TERM: tl.constexpr,
    HAS_TRUNC: tl.constexpr,
    DR: tl.constexpr,
    DQ: tl.constexpr,
    DNV: tl.constexpr,
    DLR: tl.constexpr,
    STORE_U: tl.constexpr,
    GAMMA_GRAD: tl.constexpr,
    LAMBDA_GRAD: tl.constexpr,
    GAMMA_FULL: tl.constexpr,
    LAMBDA_FULL: tl.constexpr,
    C_CLIP_FULL: tl.constexpr,
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
    """p_h: the forward pass's G (its own output; in float32 where GAMMA_GRAD or LAMBDA_GRAD). DR,
    DQ, DNV and DLR: the gradients of rewards, q_values, next_values and log_rhos written (each only
    where the differentiation involves that input, ops.SELECTIVE).

    GAMMA_GRAD and LAMBDA_GRAD: γ's and λ's gradients (module docstring), as vtrace_adjoint_kernel
    writes them (0 not written, 1 one a step, 2 one a row for each segment of the plan), with no u
    written; γ's reads v' (p_nv) and step t+1's G, q, log ρ, λ and c̄."""
    i_b, i_s = common.program(p_sync, T, PHASE, False, BT)
    o_n = common.rows(i_b, BIG, BB)
    ch, cb = common.init_carry(p_cin, p_cin, i_s, o_n, N, PHASE, False, F64, FOLD, T, BT, CPS, False, KP)
    acc_g = tl.zeros([BT, BB], dtype=tl.float64 if F64 else tl.float32)
    acc_l = acc_g
    for k in range(CPS):
        c = common.chunk_index(i_s, k, CPS, False, PHASE, WALK_BACK)
        o_t, off, m, ts = common.offsets(o_n, c, N, T, INNER, LAYOUT, BIG, BT, False, VEC, CVEC)
        m_p = m & (o_t > 0)[:, None]  # step t-1 exists
        _, done_p = _flags(p_term, p_trunc, off - ts, m_p, HAS_TERM, HAS_TRUNC)
        b_g_p = common.load_param(p_gamma, off - ts, m_p, GAMMA_FULL, F64, o_t - 1, o_n, N, T)
        b_rho = tl.exp(common.load(p_lr, off, m, F64))
        c_clip = common.load_param(p_c_clip, off, m, C_CLIP_FULL, F64, o_t, o_n, N, T)
        b_lam = common.load_param(p_lam, off, m, LAMBDA_FULL, F64, o_t, o_n, N, T)
        b_c = b_lam * tl.minimum(c_clip, b_rho)
        A, B = common.scan(
            common.load(p_g, off, m, F64), b_g_p * b_c, common.edge(o_t, o_n, 0) | done_p, m, False, VEC, LAYOUT
        )
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
            if DNV:
                term, _ = _flags(p_term, p_trunc, off, m, HAS_TERM, HAS_TRUNC)
                b_g = common.load_param(p_gamma, off, m, GAMMA_FULL, F64, o_t, o_n, N, T)
                common.store(p_dnv, off, tl.where(term, 0.0, b_g * u), m, STREAM)
            if DQ or DLR or LAMBDA_GRAD:
                b_s = tl.where(m_p & ~done_p, b_g_p * _previous(u, ch, m, VEC, LAYOUT), 0.0)
            if DQ:
                common.store(p_dq, off, -(b_c * b_s), m, STREAM)
            if DLR or LAMBDA_GRAD:
                b_hq = common.load(p_h, off, m, F64) - common.load(p_q, off, m, F64)  # h_t - q_t
            if DLR:
                common.store(p_dlr, off, b_s * b_hq * b_lam * b_rho * _dmin(b_rho, c_clip), m, STREAM)
            if LAMBDA_GRAD:
                b_pl = tl.where(m, b_s * b_hq * tl.minimum(c_clip, b_rho), 0.0)
                if LAMBDA_GRAD == 1:
                    common.store(p_dlam, off, b_pl, m, STREAM)
                else:
                    acc_l += b_pl
            if GAMMA_GRAD:
                term, done = _flags(p_term, p_trunc, off, m, HAS_TERM, HAS_TRUNC)
                last = common.edge(o_t, o_n, T - 1)
                m1 = m & ~(done | last)  # cont_t: step t+1 enters h_t
                b_c1 = common.load_param(p_lam, off + ts, m1, LAMBDA_FULL, F64, o_t + 1, o_n, N, T) * tl.minimum(
                    common.load_param(p_c_clip, off + ts, m1, C_CLIP_FULL, F64, o_t + 1, o_n, N, T),
                    tl.exp(common.load(p_lr, off + ts, m1, F64)),
                )
                b_hq1 = common.load(p_h, off + ts, m1, F64) - common.load(p_q, off + ts, m1, F64)
                b_pg = tl.where(term, 0.0, common.load(p_nv, off, m, F64)) + tl.where(m1, b_c1 * b_hq1, 0.0)
                b_pg = tl.where(m, u * b_pg, 0.0)
                if GAMMA_GRAD == 1:
                    common.store(p_dgam, off, b_pg, m, STREAM)
                else:
                    acc_g += b_pg
        if not SINGLE:
            ch, cb = common.advance(A, B, u, ch, cb, o_t, common.exit_time(c, BT, False), PHASE, WALK_BACK)
    if PHASE == 1:
        common.store_summary(p_sh, p_sb, i_s, o_n, N, ch, cb, FOLD, T, BT, CPS)
    else:
        if GAMMA_GRAD == 2:
            common.store_segment_sums(p_dgam, i_s, o_n, N, acc_g, BIG)
        if LAMBDA_GRAD == 2:
            common.store_segment_sums(p_dlam, i_s, o_n, N, acc_l, BIG)
