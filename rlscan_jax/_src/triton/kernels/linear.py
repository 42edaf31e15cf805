"""Forward or backward linear scans with optional resets: linear_scan, episodic sums, eligibility traces.

    h_t = a_t + [not reset_t] · b_t · h_{t∓1},   the carry entering the window = initial (or 0)

with a_t = inputs, and
    linear_scan:          b_t = b (loaded), reset_t = reset (loaded; the adjoint pass uses it)
    episodic_cumsum:      b_t = 1, reset_t = done_{t-1} (forward) or done_t (reverse)
    eligibility_traces:   b_t = γλ, reset_t = done_{t-1}
Per-step arrays (done, b, reset, γ, λ) may have FEAT trailing feature elements per value.

Eligibility traces' adjoint (the same kernel scanning the cotangent in reverse, u = h above) also
writes, with DECAY_GRAD, the gradient of their decay γλ at each step t, from the forward pass's
float32 traces e (p_e):

    D_t = [t > 0] [not done_{t-1}] u_t e_{t-1}     (e_{-1} = initial: ops.py keeps u there)

so that d γ_t = λ_t D_t and d λ_t = γ_t D_t (launchers/adjoint._traces).
"""

import triton
import triton.language as tl

from rlscan_jax._src.triton.kernels import common


@triton.jit
def linear_kernel(
    p_x,
    p_b,
    p_reset,
    p_gamma,
    p_lam,
    p_init,
    p_e,
    p_cin,
    N,
    T,
    INNER,
    CPS,
    FEAT,
    p_h,
    p_dd,
    p_sh,
    p_sb,
    p_sync,
    LAYOUT: tl.constexpr,
    VEC: tl.constexpr,
    BIG: tl.constexpr,
    F64: tl.constexpr,
    REVERSE: tl.constexpr,
    HAS_B: tl.constexpr,
    HAS_RESET: tl.constexpr,
    RESET_PREV: tl.constexpr,
    HAS_DECAY: tl.constexpr,
    GAMMA_FULL: tl.constexpr,
    LAMBDA_FULL: tl.constexpr,
    HAS_INITIAL: tl.constexpr,
    HAS_FEAT: tl.constexpr,
    DECAY_GRAD: tl.constexpr,
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
    """b is loaded (HAS_B), γλ (HAS_DECAY) or 1; reset is p_reset at t, or at t-1 (RESET_PREV).
    DECAY_GRAD (eligibility traces' adjoint, module docstring): D written to p_dd, 0 not at all, 1
    at every step (an array of p_x's shape), 2 summed over each program's steps, one value a row
    for each segment of the plan (launch.SegmentSums)."""
    i_b, i_s = common.program(p_sync, T, PHASE, REVERSE, BT)
    o_n = common.rows(i_b, BIG, BB)
    ch, cb = common.init_carry(p_cin, p_init, i_s, o_n, N, PHASE, HAS_INITIAL, F64, FOLD, T, BT, CPS, REVERSE, KP)
    acc = tl.zeros([BT, BB], dtype=tl.float64 if F64 else tl.float32)
    for k in range(CPS):
        c = common.chunk_index(i_s, k, CPS, REVERSE, PHASE, WALK_BACK)
        o_t, off, m, ts = common.offsets(o_n, c, N, T, INNER, LAYOUT, BIG, BT, REVERSE, VEC, CVEC)
        s_off = common.step_offsets(o_t, o_n, T, INNER, FEAT, off, HAS_FEAT)
        b_x = common.load(p_x, off, m, F64)  # [BT, BB]
        if HAS_B:
            b_b = common.load(p_b, s_off, m, F64)
        elif HAS_DECAY:
            s_n = common.step_rows(o_n, INNER, FEAT, HAS_FEAT)
            n_s = N // FEAT  # the per-step arrays' rows
            b_b = common.load_param(p_gamma, s_off, m, GAMMA_FULL, F64, o_t, s_n, n_s, T) * common.load_param(
                p_lam, s_off, m, LAMBDA_FULL, F64, o_t, s_n, n_s, T
            )
        else:
            b_b = 1.0
        # Without an initial value nothing enters at the window edge.
        reset = common.edge(o_t, o_n, T - 1 if REVERSE else 0) & (not HAS_INITIAL)
        if HAS_RESET:
            if RESET_PREV:
                p_off = common.step_offsets(o_t - 1, o_n, T, INNER, FEAT, off - ts, HAS_FEAT)
                reset = reset | common.load_flag(p_reset, p_off, m & (o_t > 0)[:, None])
            else:
                reset = reset | common.load_flag(p_reset, s_off, m)
        A, B = common.scan(b_x, b_b, reset, m, REVERSE, VEC, LAYOUT)
        if PHASE == 3:
            ch = common.lookback(
                A, B, o_t, o_n, N, T, i_b, i_s, p_sh, p_sb, p_sync, p_init, HAS_INITIAL, REVERSE, F64, BT, KP, FENCE
            )
        h = common.apply(A, B, ch, SINGLE)
        if PHASE != 1:
            common.store(p_h, off, h, m, STREAM)
            if DECAY_GRAD:
                kept = m & (o_t > 0)[:, None]  # step t-1 exists, and (below) ended no episode
                if HAS_RESET:
                    d_off = common.step_offsets(o_t - 1, o_n, T, INNER, FEAT, off - ts, HAS_FEAT)
                    kept = kept & ~common.load_flag(p_reset, d_off, kept)
                b_d = tl.where(kept, h * common.load(p_e, off - ts, kept, F64), 0.0)
                if DECAY_GRAD == 1:
                    common.store(p_dd, off, b_d, m, STREAM)
                else:
                    acc += b_d
        if not SINGLE:
            ch, cb = common.advance(A, B, h, ch, cb, o_t, common.exit_time(c, BT, REVERSE), PHASE, WALK_BACK)
    if PHASE == 1:
        common.store_summary(p_sh, p_sb, i_s, o_n, N, ch, cb, FOLD, T, BT, CPS)
    elif DECAY_GRAD == 2:
        common.store_segment_sums(p_dd, i_s, o_n, N, acc, BIG)
