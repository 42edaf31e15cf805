"""GAE: a_t = r_t + γ(1-term_t) v'_t - V_t, b_t = γλ, reset at done_t (see reference/gae.py)."""

import triton
import triton.language as tl

from rlscan_jax._src.triton.kernels import common


@triton.jit
def gae_kernel(
    p_r,
    p_v,
    p_nv,
    p_boot,
    p_term,
    p_trunc,
    p_gamma,
    p_lam,
    p_cin,
    N,
    T,
    INNER,
    CPS,
    p_adv,
    p_ret,
    p_sh,
    p_sb,
    p_sync,
    LAYOUT: tl.constexpr,
    VEC: tl.constexpr,
    BIG: tl.constexpr,
    F64: tl.constexpr,
    HAS_TERM: tl.constexpr,
    HAS_TRUNC: tl.constexpr,
    HAS_NEXT: tl.constexpr,
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
    i_b, i_s = common.program(p_sync, T, PHASE, True, BT)
    o_n = common.rows(i_b, BIG, BB)
    ch, cb = common.init_carry(p_cin, p_cin, i_s, o_n, N, PHASE, False, F64, FOLD, T, BT, CPS, True, KP)
    for k in range(CPS):
        c = common.chunk_index(i_s, k, CPS, True, PHASE, WALK_BACK)
        o_t, off, m, ts = common.offsets(o_n, c, N, T, INNER, LAYOUT, BIG, BT, True, VEC, CVEC)
        last = common.edge(o_t, o_n, T - 1)
        b_r = common.load(p_r, off, m, F64)  # [BT, BB]
        b_v = common.load(p_v, off, m, F64)
        if HAS_NEXT:
            b_nv = common.load(p_nv, off, m, F64)
        else:
            b_boot = common.load(p_boot, o_n, o_n < N, F64)  # [BB]
            b_nv = tl.where(last, b_boot[None, :], common.load(p_v, off + ts, m & ~last, F64))
        b_g = common.load_param(p_gamma, off, m, GAMMA_FULL, F64, o_t, o_n, N, T)
        b_l = common.load_param(p_lam, off, m, LAMBDA_FULL, F64, o_t, o_n, N, T)
        b_disc = b_g * b_nv
        done = last  # nothing enters at the window edge
        if HAS_TERM:
            term = common.load_flag(p_term, off, m)
            b_disc = tl.where(term, 0.0, b_disc)
            done = done | term
        if HAS_TRUNC:
            done = done | common.load_flag(p_trunc, off, m)
        A, B = common.scan(b_r + b_disc - b_v, b_g * b_l, done, m, True, VEC, LAYOUT)
        if PHASE == 3:
            ch = common.lookback(
                A, B, o_t, o_n, N, T, i_b, i_s, p_sh, p_sb, p_sync, p_cin, False, True, F64, BT, KP, FENCE
            )
        h = common.apply(A, B, ch, SINGLE)
        if PHASE != 1:
            common.store(p_adv, off, h, m, STREAM)
            common.store(p_ret, off, h + b_v, m, STREAM)
        if not SINGLE:
            ch, cb = common.advance(A, B, h, ch, cb, o_t, common.exit_time(c, BT, True), PHASE, WALK_BACK)
    if PHASE == 1:
        common.store_summary(p_sh, p_sb, i_s, o_n, N, ch, cb, FOLD, T, BT, CPS)
