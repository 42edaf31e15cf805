"""Retrace: a_t = r_t + γ(1-term_t) v'_t - [cont_t] γ c_{t+1} q_{t+1}, b_t = γ c_{t+1}, reset at done_t."""

import triton
import triton.language as tl

from rlscan_jax._src.triton.kernels import common


@triton.jit
def retrace_kernel(
    p_r,
    p_q,
    p_nv,
    p_lr,
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
    p_g,
    p_sh,
    p_sb,
    p_sync,
    LAYOUT: tl.constexpr,
    VEC: tl.constexpr,
    BIG: tl.constexpr,
    F64: tl.constexpr,
    HAS_TERM: tl.constexpr,
    HAS_TRUNC: tl.constexpr,
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
    i_b, i_s = common.program(p_sync, T, PHASE, True, BT)
    o_n = common.rows(i_b, BIG, BB)
    ch, cb = common.init_carry(p_cin, p_cin, i_s, o_n, N, PHASE, False, F64, FOLD, T, BT, CPS, True, KP)
    for k in range(CPS):
        c = common.chunk_index(i_s, k, CPS, True, PHASE, WALK_BACK)
        o_t, off, m, ts = common.offsets(o_n, c, N, T, INNER, LAYOUT, BIG, BT, True, VEC, CVEC)
        last = common.edge(o_t, o_n, T - 1)
        m1 = m & ~last  # t+1 exists
        b_r = common.load(p_r, off, m, F64)  # [BT, BB]
        b_nv = common.load(p_nv, off, m, F64)
        b_q1 = common.load(p_q, off + ts, m1, F64)
        b_g = common.load_param(p_gamma, off, m, GAMMA_FULL, F64, o_t, o_n, N, T)
        b_l1 = common.load_param(p_lam, off + ts, m1, LAMBDA_FULL, F64, o_t + 1, o_n, N, T)
        b_c1 = b_l1 * tl.minimum(
            common.load_param(p_c_clip, off + ts, m1, C_CLIP_FULL, F64, o_t + 1, o_n, N, T),
            tl.exp(common.load(p_lr, off + ts, m1, F64)),
        )
        b_disc = b_g * b_nv
        done = last
        if HAS_TERM:
            term = common.load_flag(p_term, off, m)
            b_disc = tl.where(term, 0.0, b_disc)
            done = done | term
        if HAS_TRUNC:
            done = done | common.load_flag(p_trunc, off, m)
        b_trace = tl.where(done, 0.0, b_g * b_c1 * b_q1)
        A, B = common.scan(b_r + b_disc - b_trace, b_g * b_c1, done, m, True, VEC, LAYOUT)
        if PHASE == 3:
            ch = common.lookback(
                A, B, o_t, o_n, N, T, i_b, i_s, p_sh, p_sb, p_sync, p_cin, False, True, F64, BT, KP, FENCE
            )
        h = common.apply(A, B, ch, SINGLE)
        if PHASE != 1:
            common.store(p_g, off, h, m, STREAM)
        if not SINGLE:
            ch, cb = common.advance(A, B, h, ch, cb, o_t, common.exit_time(c, BT, True), PHASE, WALK_BACK)
    if PHASE == 1:
        common.store_summary(p_sh, p_sb, i_s, o_n, N, ch, cb, FOLD, T, BT, CPS)
