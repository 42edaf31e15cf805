"""Shared @triton.jit machinery: offsets, loads, the reset-aware affine combine, chunk carries.

Every kernel views its per-step arrays as [OUTER, T, INNER] (contiguous; rows n = o·INNER + i,
N = OUTER·INNER) and works on register blocks [BT, BB] of BT time steps × BB rows.

    LAYOUT 0: time-major  [T, N]      (OUTER = 1)   offset t·N + n
    LAYOUT 1: batch-major [N, T]      (INNER = 1)   offset n·T + t
    LAYOUT 2: general     [OUTER, T, INNER]          offset o·T·INNER + t·INNER + i

A row's time axis is split into chunks of BT steps; a program walks the chunks of one
segment in scan order, carrying the state between them. With one segment per row (PHASE 0)
that is the whole scan. Long rows are split into segments scanned in parallel, in one of two
ways:
- PHASE 3 (one launch, inputs read once): one chunk per program. Programs take tickets in scan
  order, publish their chunk's composite (A, B) with a flag, wait until every earlier chunk of
  their rows has published, and fold those composites in a fixed order (so the result does
  not depend on timing: bitwise deterministic). A program waits only on tickets taken before
  its own, by programs already running, so the wait always ends.
- PHASE 1 writes each segment's composite (h, b), `carry_kernel` chains them into each
  segment's incoming carry, and PHASE 2 rescans each segment from that carry (three launches;
  used where a row has too many chunks for PHASE 3's fold).

The carry entering a segment maps to the state h at each position as
    h_t = A_t + B_t · carry
with (A, B) the inclusive scan of the chunk. A reset step (an episode end, the window edge)
enters the scan as b = 0, and b = 0 is *selected* (the carry is dropped), never multiplied:
0 · NaN is NaN, so a NaN behind a boundary never crosses it. A genuine b = 0 (γ = 0) is the
same recurrence for finite values. The backward pass does not differentiate these kernels
(ops.py), so folding the reset into b costs no gradient.
"""

import triton
import triton.language as tl


@triton.jit
def combine(a1, b1, a2, b2):
    """(a1, b1) then (a2, b2), in processing order; b2 = 0 is a boundary, selected, never multiplied."""
    a = a2 + tl.where(b2 == 0.0, 0.0, b2 * a1)
    return a, tl.where(b2 == 0.0, 0.0, b2 * b1)


@triton.jit
def combine_next(h1, s1, k1, h2, s2, k2):
    """A shift as a scan: the result at t holds (h_t, h at the next position processed before t)."""
    return h2, tl.where(k2, s2, h1), k1 | True


@triton.jit
def previous(x, first, m, REVERSE: tl.constexpr = False, VEC: tl.constexpr = 1, LAYOUT: tl.constexpr = 1):
    """x [BT, BB] at the position processed just before each t in scan order, and `first` (a
    block of x's shape: the carry across the chunk's edge) at the block's first position. The
    block's rows are in `offsets`' order for (LAYOUT, REVERSE, VEC): scan order, vector order (runs
    of VEC reversed, see `scan`), or thread order (`thread_order`)."""
    if LAYOUT != 1 and VEC > 1:
        return _thread_previous(x, first, VEC)
    if REVERSE and VEC > 1:
        x = vector_order(x, VEC)
        first = vector_order(first, VEC)
    _, x_p, _ = tl.associative_scan((x, first, m & False), 0, combine_next)
    if REVERSE and VEC > 1:
        x_p = vector_order(x_p, VEC)
    return x_p


@triton.jit
def vector_order(x, VEC: tl.constexpr):
    """x [BT, BB] with each run of VEC rows reversed: between `offsets`' vector order of a reverse
    scan and scan order, both ways. A thread holding whole runs reverses them in its registers
    (no instruction: the compiler renames them). Reshaped as [BB, BT / VEC, VEC], rows first:
    as [BT / VEC, VEC, BB], blocks of one row ([1024, 1]) went through shared memory (tune_h200.md,
    runs 21 and 22)."""
    BT: tl.constexpr = x.shape[0]
    BB: tl.constexpr = x.shape[1]
    y = tl.flip(tl.reshape(tl.trans(x), (BB, BT // VEC, VEC)), 2)
    return tl.trans(tl.reshape(y, (BB, BT)))


@triton.jit
def thread_order(i, BT: tl.constexpr, VEC: tl.constexpr):
    """The scan-order position of row i of a block of BT rows in thread order (time-major and
    general rows with VEC > 1, launch.THREAD_STEPS_TIME_MAJOR): (i mod R)·VEC + i div R, R = BT /
    VEC. Row i is then run i mod R, step i div R of its run of VEC consecutive steps, and the block
    reshaped as [VEC, R, BB] holds run r at [:, r, :]. Triton lays a time-major block out with a
    thread's rows R or more apart (sizePerThread [1, CVEC]), so a thread holding VEC rows or more
    holds whole runs, and scans each in registers: no shuffles (`_thread_scan`)."""
    return (i % (BT // VEC)) * VEC + i // (BT // VEC)


@triton.jit
def _runs(x, VEC: tl.constexpr):
    """x [BT, BB] in thread order as [VEC, R, BB]: run r at [:, r, :], its steps along axis 0."""
    return tl.reshape(x, (VEC, x.shape[0] // VEC, x.shape[1]))


@triton.jit
def _run_step(x3, k):
    """Step k of every run of x3 [VEC, R, BB] as [1, R, BB] (by selection: the thread's own registers)."""
    at = tl.arange(0, x3.shape[0])[:, None, None] == k
    return tl.sum(tl.where(at, x3, 0.0), axis=0, keep_dims=True)


@triton.jit
def combine_next2(h1, g1, s1, r1, k1, h2, g2, s2, r2, k2):
    """`combine_next` of a pair: the result at t holds the pair (s, r) at the position before t."""
    return h2, g2, tl.where(k2, s2, h1), tl.where(k2, r2, g1), k1 | True


@triton.jit
def _thread_scan(a, b, VEC: tl.constexpr):
    """`scan` of a block in thread order: each run of VEC steps in the registers of its thread, the
    runs' composites across threads (R positions, not BT), then each run from the composite of
    the runs before it."""
    A3, B3 = tl.associative_scan((_runs(a, VEC), _runs(b, VEC)), 0, combine)
    ga, gb = tl.associative_scan((_run_step(A3, VEC - 1), _run_step(B3, VEC - 1)), 1, combine)
    none = ga != ga  # a flag block of ga's shape; only its falsity at the first run matters
    _, _, ea, eb, _ = tl.associative_scan(
        (ga, gb, tl.zeros_like(ga), tl.zeros_like(gb) + 1.0, none & False), 1, combine_next2
    )  # the composite of the runs before each run; the identity (0, 1) before the first
    A, B = combine(ea, eb, A3, B3)
    return tl.reshape(A, a.shape), tl.reshape(B, b.shape)


@triton.jit
def _thread_previous(x, first, VEC: tl.constexpr):
    """`previous` of a block in thread order: within a run from the thread's own registers, at a
    run's first step the last step of the run before (across threads), at the block's first
    position `first`'s value there."""
    x3 = _runs(x, VEC)
    last = _run_step(x3, VEC - 1)
    none = last != last
    _, before, _ = tl.associative_scan((last, _run_step(_runs(first, VEC), 0), none & False), 1, combine_next)
    _, x_p, _ = tl.associative_scan((x3, tl.broadcast_to(before, x3.shape), (x3 != x3) & False), 0, combine_next)
    return tl.reshape(x_p, x.shape)


@triton.jit
def program(p_sync, T, PHASE: tl.constexpr, REVERSE: tl.constexpr, BT: tl.constexpr):
    """(row block, segment) of this program; PHASE 3 takes a ticket, handed out in scan order."""
    if PHASE == 3:
        nseg = tl.cdiv(T, BT)
        ticket = tl.atomic_add(p_sync, 1, sem="relaxed")
        i_b = ticket // nseg
        k = ticket % nseg
        if REVERSE:
            return i_b, nseg - 1 - k
        else:
            return i_b, k
    else:
        return tl.program_id(0), tl.program_id(1)


@triton.jit
def chunk_index(i_s, k, CPS, REVERSE: tl.constexpr, PHASE: tl.constexpr = 0, BACK: tl.constexpr = False):
    """The chunk that segment i_s processes at its k-th step: in scan order, or (PHASE 1 with BACK,
    launch.SUMMARY_WALK_BACK) against it, so that the chunks PHASE 1 reads last are the ones PHASE 2
    reads first, and may still be in the L2 (`advance` composes the chunks in that order)."""
    if PHASE == 1:
        if BACK:
            k = CPS - 1 - k
    if REVERSE:
        return (i_s + 1) * CPS - 1 - k
    else:
        return i_s * CPS + k


@triton.jit
def rows(i_b, BIG: tl.constexpr, BB: tl.constexpr):
    """The program's rows o_n [BB] (int64 where N·T may pass 2^31)."""
    o_n = i_b * BB + tl.arange(0, BB)
    if BIG:
        o_n = o_n.to(tl.int64)
    return o_n


@triton.jit
def offsets(
    o_n,
    c,
    N,
    T,
    INNER,
    LAYOUT: tl.constexpr,
    BIG: tl.constexpr,
    BT: tl.constexpr,
    REVERSE: tl.constexpr,
    VEC: tl.constexpr = 1,
    CVEC: tl.constexpr = 1,
):
    """Returns o_t [BT], the element offsets [BT, BB], their mask, and the time stride.

    The block's rows are in scan order: time descending for a reverse scan (see `scan`). With
    VEC > 1 (batch-major rows whose length T is a multiple of VEC, checked by the launcher) the
    compiler learns that each row starts on a multiple of VEC elements, so it loads VEC
    consecutive steps a thread with one vector instruction; a reverse scan's rows are then in
    vector order (runs of VEC ascending steps, the runs descending; `scan` reverses each run into
    scan order and back). With
    CVEC > 1 (time-major rows, N a multiple of CVEC, checked by the launcher: launch.COLUMN_VEC)
    the compiler learns that each time row starts on a multiple of CVEC elements, so a thread
    loads CVEC neighbouring columns with one instruction. With VEC > 1 outside batch-major rows
    (launch.THREAD_STEPS_TIME_MAJOR) the rows are in thread order (`thread_order`): runs of VEC
    consecutive positions in scan order, each held by one thread, which `scan` and `previous`
    scan in its registers.
    """
    i = tl.arange(0, BT)
    if LAYOUT != 1 and VEC > 1:  # thread order
        i = thread_order(i, BT, VEC)
        if REVERSE:
            i = BT - 1 - i
    elif REVERSE and VEC > 1:  # vector order (`scan`)
        i = BT - VEC * (1 + i // VEC) + i % VEC
    elif REVERSE:
        i = BT - 1 - i
    o_t = c * BT + i
    if LAYOUT == 1 and VEC > 1:
        T = (T // VEC) * VEC  # the same value; written so, it is known to be a multiple of VEC
    if CVEC > 1:
        N = (N // CVEC) * CVEC  # likewise: each time row starts on a multiple of CVEC
    if BIG:
        o_t = o_t.to(tl.int64)
    m = (o_t < T)[:, None] & (o_n < N)[None, :]
    if LAYOUT == 0:
        off = o_t[:, None] * N + o_n[None, :]
        ts = N
    elif LAYOUT == 1:
        off = o_n[None, :] * T + o_t[:, None]
        ts = 1
    else:
        o_o = o_n // INNER
        o_i = o_n % INNER
        off = o_o[None, :] * T * INNER + o_t[:, None] * INNER + o_i[None, :]
        ts = INNER
    return o_t, off, m, ts


@triton.jit
def step_offsets(o_t, o_n, T, INNER, FEAT, off, HAS_FEAT: tl.constexpr):
    """Offsets into a per-step array whose rows are groups of FEAT trailing feature elements."""
    if HAS_FEAT:
        inner = INNER // FEAT
        o_o = o_n // INNER
        o_i = (o_n % INNER) // FEAT
        return o_o[None, :] * T * inner + o_t[:, None] * inner + o_i[None, :]
    else:
        return off


@triton.jit
def step_rows(o_n, INNER, FEAT, HAS_FEAT: tl.constexpr):
    """The rows [BB] of a per-step array whose rows are groups of FEAT trailing feature elements."""
    if HAS_FEAT:
        return (o_n // INNER) * (INNER // FEAT) + (o_n % INNER) // FEAT
    else:
        return o_n


@triton.jit
def edge(o_t, o_n, t):
    """A [BT, BB] int1 block, true on time row t."""
    return (o_t == t)[:, None] & (o_n >= 0)[None, :]


@triton.jit
def load(p, off, m, F64: tl.constexpr, volatile: tl.constexpr = False):
    x = tl.load(p + off, mask=m, other=0.0, volatile=volatile)
    if F64:
        return x.to(tl.float64)
    else:
        return x.to(tl.float32)


@triton.jit
def load_flag(p, off, m):
    """A flag of any dtype as int1 (non-zero is true; outside the mask false)."""
    return tl.load(p + off, mask=m, other=0) != 0


@triton.jit
def load_param(p, off, m, FULL: tl.constexpr, F64: tl.constexpr, o_t, o_n, N, T):
    """A parameter of the block [BT, BB] at offsets `off` (steps o_t, rows o_n), by its form
    (launch.param): 0 (False) one value; 1 (True) a per-step array of the rows' layout; 2 one
    value a step shared by the rows ([T], read at o_t) as a [BT, BB] block of addresses; 4 the
    same values loaded once a step as a [BT] vector and broadcast over the rows in registers
    (launch.STEP_VECTOR_KERNELS); 3 one value a row shared by the steps ([N], read at o_n). The
    shared forms are read from arrays of T or N values, never broadcast to the per-step shape in
    memory; their loads hit the cache."""
    if FULL == 2:
        return load(p, tl.broadcast_to(o_t[:, None], off.shape), m, F64)
    elif FULL == 4:  # o_t may step off the window (o_t - 1, o_t + 1): those lanes are masked by m
        return tl.where(m, load(p, o_t, (o_t >= 0) & (o_t < T), F64)[:, None], 0.0)
    elif FULL == 3:
        return tl.where(m, load(p, o_n, o_n < N, F64)[None, :], 0.0)
    elif FULL:
        return load(p, off, m, F64)
    else:
        x = tl.load(p)
        if F64:
            return x.to(tl.float64)
        else:
            return x.to(tl.float32)


@triton.jit
def scan(a, b, reset, m, REVERSE: tl.constexpr = False, VEC: tl.constexpr = 1, LAYOUT: tl.constexpr = 1):
    """Inclusive scan of a chunk in scan order, reset steps as b = 0; masked positions are identities.

    The scan runs forward along the block where it can: triton 3.6 lowers
    `associative_scan(reverse=True)` with warp shuffles even along an axis each thread holds whole
    (2.6x the instructions of the forward scan for an [8, 128] block at one warp;
    tests/gpu_runs/tune_h200.md, run 4), and turns a warp's lanes around with five chained
    shuffles a value where triton 3.9 uses one (run 20b). The rows are in scan order (`offsets`),
    or with REVERSE and VEC > 1 in vector order, whose runs of VEC steps a thread holds are
    reversed in its registers (`vector_order`) before the scan and after it: in blocks of several
    rows 1.02-1.29x faster at 16384x512 (run 21), in blocks of one row 1.00-1.50x at 4096x1024 to
    1x1048576 (run 22), against a reverse scan of ascending rows. Outside batch-major rows, VEC > 1
    is thread order (`offsets`): each thread scans its runs of VEC steps in registers, and only the
    runs' composites cross threads (`_thread_scan`).
    """
    a = tl.where(m, a, 0.0)
    b = tl.where(m, tl.where(reset, 0.0, b), 1.0)
    if LAYOUT != 1 and VEC > 1:
        return _thread_scan(a, b, VEC)
    elif REVERSE and VEC > 1:
        A, B = tl.associative_scan((vector_order(a, VEC), vector_order(b, VEC)), 0, combine)
        return vector_order(A, VEC), vector_order(B, VEC)
    else:
        return tl.associative_scan((a, b), 0, combine)


@triton.jit
def row(x, o_t, t):
    """x[t, :] of a block [BT, BB] as [BB], by selection (NaN elsewhere never leaks in)."""
    return tl.sum(tl.where((o_t == t)[:, None], x, 0.0), axis=0)


@triton.jit
def exit_time(c, BT: tl.constexpr, REVERSE: tl.constexpr):
    """The time index whose state carries into the next chunk in scan order."""
    if REVERSE:
        return c * BT
    else:
        return c * BT + BT - 1


@triton.jit
def segments(T, BT: tl.constexpr, CPS):
    """The segments of a row split in CPS chunks of BT steps each (the launcher's Plan.nseg)."""
    return tl.cdiv(tl.cdiv(T, BT), CPS)


@triton.jit
def init_carry(
    p_cin,
    p_init,
    i_s,
    o_n,
    N,
    PHASE: tl.constexpr,
    HAS_INITIAL: tl.constexpr,
    F64: tl.constexpr,
    FOLD: tl.constexpr = False,
    T=1,
    BT: tl.constexpr = 1,
    CPS=1,
    REVERSE: tl.constexpr = False,
    KP: tl.constexpr = 1,
):
    """The carry (h, b) entering a segment: the window-edge value, zero, or from carry_kernel.

    With FOLD (PHASE 2 of the two-launch split, launch.FOLD_CARRY_ELEMS), p_cin holds every
    segment's composite as PHASE 1 wrote it ([2, nseg, N]: h, then b) and the program folds
    those of the segments before its own, KP at a time, in scan order: no carry_kernel launch.
    """
    m_n = o_n < N
    zero = tl.zeros(o_n.shape, dtype=tl.float64 if F64 else tl.float32)
    ch = zero
    if PHASE == 2 and FOLD:
        if HAS_INITIAL:
            ch = load(p_init, o_n, m_n, F64)
        ch = _fold_segments(p_cin, i_s, o_n, N, segments(T, BT, CPS), ch, F64, REVERSE, KP)
    elif PHASE == 2:
        ch = load(p_cin, i_s * N + o_n, m_n, F64)
    elif PHASE == 0:
        if HAS_INITIAL:
            ch = load(p_init, o_n, m_n, F64)
    return ch, zero + 1.0


@triton.jit
def _fold_segments(p_sum, i_s, o_n, N, nseg, x, F64: tl.constexpr, REVERSE: tl.constexpr, KP: tl.constexpr):
    """The state x [BB] carried through the composites of the segments before i_s in scan order."""
    if REVERSE:
        before = nseg - 1 - i_s
    else:
        before = i_s
    fa = tl.zeros(o_n.shape, dtype=tl.float64 if F64 else tl.float32)
    fb = fa + 1.0
    for r in range(tl.cdiv(before, KP)):
        o_k = r * KP + tl.arange(0, KP)  # positions in scan order
        if REVERSE:
            seg = nseg - 1 - o_k
        else:
            seg = o_k
        m = (o_k < before)[:, None] & (o_n < N)[None, :]
        off = seg.to(tl.int64)[:, None] * N + o_n[None, :]
        a = load(p_sum, off, m, F64)
        b = tl.where(m, load(p_sum, off + nseg.to(tl.int64) * N, m, F64), 1.0)
        ga, gb = tl.associative_scan((a, b), 0, combine)
        last = r * KP + KP - 1  # masked rows are identities: the last row holds the round's fold
        fa, fb = combine(fa, fb, row(ga, o_k, last), row(gb, o_k, last))
    return fa + tl.where(fb == 0.0, 0.0, fb * x)


@triton.jit
def advance(A, B, h, ch, cb, o_t, t_exit, PHASE: tl.constexpr, BACK: tl.constexpr = False):
    """The carry after a chunk: the state at its exit row, and (PHASE 1) the composite map.

    PHASE 3 programs scan one chunk and hand nothing on: the carry is returned unchanged. PHASE 1
    with BACK walks the segment against scan order (`chunk_index`): (ch, cb) is then the composite
    of the chunks after this one in scan order, and the chunk's own (A, B at its exit row) goes
    before it.
    """
    if PHASE == 3:
        return ch, cb
    elif PHASE == 1 and BACK:
        return combine(row(A, o_t, t_exit), row(B, o_t, t_exit), ch, cb)
    else:
        if PHASE == 1:
            b_e = row(B, o_t, t_exit)
            cb = tl.where(b_e == 0.0, 0.0, b_e * cb)
        return row(h, o_t, t_exit), cb


@triton.jit
def lookback(
    A,
    B,
    o_t,
    o_n,
    N,
    T,
    i_b,
    i_s,
    p_agg_a,
    p_agg_b,
    p_sync,
    p_init,
    HAS_INITIAL: tl.constexpr,
    REVERSE: tl.constexpr,
    F64: tl.constexpr,
    BT: tl.constexpr,
    KP: tl.constexpr,
    FENCE: tl.constexpr = False,
):
    """PHASE 3: the carry [BB] entering chunk i_s, from the composites of the chunks before it.

    Publishes this chunk's composite (A, B at its exit row) at slot (i_b, i_s) and raises its
    flag (release); waits for the flags of the chunks before it in scan order; folds their
    composites in scan order and applies the fold to the window's initial carry. The flags are
    acquired with one fence.acq_rel after the volatile (relaxed) reads that saw them raised (FENCE,
    launch.LOOKBACK_FENCE, on a GPU: PTX's acquire pattern, one fence a program), else with an
    acquire RMW on each flag (the interpreter, which has no inline PTX).
    """
    BB: tl.constexpr = A.shape[1]
    nseg = tl.cdiv(T, BT)
    base = i_b.to(tl.int64) * nseg
    o_r = tl.arange(0, BB)
    t_exit = exit_time(i_s, BT, REVERSE)
    tl.store(p_agg_a + (base + i_s) * BB + o_r, row(A, o_t, t_exit).to(p_agg_a.dtype.element_ty))
    tl.store(p_agg_b + (base + i_s) * BB + o_r, row(B, o_t, t_exit).to(p_agg_b.dtype.element_ty))
    tl.debug_barrier()  # every thread's composite is written before the flag goes up
    tl.atomic_xchg(p_sync + 1 + base + i_s, 1, sem="release", scope="gpu")
    if REVERSE:  # slots in scan order, as the rows of a block (see `scan`)
        o_k = KP - 1 - tl.arange(0, KP)
        before = (o_k > i_s) & (o_k < nseg)
        last = i_s + 1
    else:
        o_k = tl.arange(0, KP)
        before = o_k < i_s
        last = i_s - 1
    p_flags = p_sync + 1 + base + o_k
    # A scalar loop-carried count: triton 3.6 fails to compile a loop carrying the flag block.
    need = tl.sum(before.to(tl.int32), axis=0)
    seen = tl.sum(tl.load(p_flags, mask=before, other=0, volatile=True), axis=0)
    while seen < need:
        seen = tl.sum(tl.load(p_flags, mask=before, other=0, volatile=True), axis=0)
    if FENCE:
        tl.inline_asm_elementwise("fence.acq_rel.gpu;\n\tmov.u32 $0, 0;", "=r", [], tl.int32, False, 1)
    else:
        tl.atomic_add(p_flags, 0, mask=before, sem="acquire", scope="gpu")
    tl.debug_barrier()  # every thread's reads below come after the acquires (bar.sync orders them)
    m = before[:, None] & (o_r >= 0)[None, :]
    off = (base + o_k)[:, None] * BB + o_r[None, :]
    # volatile: read through to L2 (a line cached in L1 may predate the flag)
    a = load(p_agg_a, off, m, F64, volatile=True)
    b = tl.where(m, load(p_agg_b, off, m, F64, volatile=True), 1.0)
    fa, fb = tl.associative_scan((a, b), 0, combine)
    fa = row(fa, o_k, last)
    fb = tl.where((last >= 0) & (last < nseg), row(fb, o_k, last), 1.0)
    x = tl.zeros([BB], dtype=tl.float64 if F64 else tl.float32)
    if HAS_INITIAL:
        x = load(p_init, o_n, o_n < N, F64)
    return fa + tl.where(fb == 0.0, 0.0, fb * x)


@triton.jit
def apply(A, B, ch, SINGLE: tl.constexpr):
    """h = A + B · carry (selected away where B = 0); a single chunk with nothing entering is A."""
    if SINGLE:
        return A
    else:
        return A + tl.where(B == 0.0, 0.0, B * ch[None, :])


@triton.jit
def store_summary(p_sh, p_sb, i_s, o_n, N, ch, cb, FOLD: tl.constexpr = False, T=1, BT: tl.constexpr = 1, CPS=1):
    """PHASE 1: the segment's composite (h, b) at [i_s, N] of p_sh and p_sb, or with FOLD both in
    p_sh as [2, nseg, N] (h, then b), the one buffer that PHASE 2 reads as p_cin."""
    m_n = o_n < N
    if FOLD:
        off = i_s.to(tl.int64) * N + o_n
        nseg = segments(T, BT, CPS)
        tl.store(p_sh + off, ch.to(p_sh.dtype.element_ty), mask=m_n)
        tl.store(p_sh + nseg.to(tl.int64) * N + off, cb.to(p_sh.dtype.element_ty), mask=m_n)
    else:
        tl.store(p_sh + i_s * N + o_n, ch.to(p_sh.dtype.element_ty), mask=m_n)
        tl.store(p_sb + i_s * N + o_n, cb.to(p_sb.dtype.element_ty), mask=m_n)


@triton.jit
def store_segment_sums(p, i_s, o_n, N, acc, BIG: tl.constexpr):
    """The program's block of per-step values `acc` [BT, BB] summed over its steps, at [i_s, N] of p
    (one value a row for each segment of the plan: launch.SegmentSums)."""
    if BIG:
        i_s = i_s.to(tl.int64)
    tl.store(p + i_s * N + o_n, tl.sum(acc, axis=0).to(p.dtype.element_ty), mask=o_n < N)


@triton.jit
def store(p, off, x, m, STREAM: tl.constexpr = False):
    """STREAM (PHASE 2, launch.STREAM_STORES): a streaming store (st.global.cs), first to leave the
    L2, so the outputs do not push out the inputs that PHASE 1 left there for PHASE 2."""
    if STREAM:
        tl.store(p + off, x.to(p.dtype.element_ty), mask=m, cache_modifier=".cs")
    else:
        tl.store(p + off, x.to(p.dtype.element_ty), mask=m)


@triton.jit
def carry_kernel(
    p_sh,
    p_sb,
    p_init,
    N,
    NSEG,
    p_cin,
    HAS_INITIAL: tl.constexpr,
    REVERSE: tl.constexpr,
    F64: tl.constexpr,
    BB: tl.constexpr,
    KC: tl.constexpr,
):
    """Chains the segments' composites [NSEG, N] into each segment's incoming carry [NSEG, N].

    KC segments at a time, in scan order: their composites are loaded together and scanned (one
    memory round trip per KC segments, not per segment); the carry leaving the k-th is the one
    entering the (k+1)-th.
    """
    i_b = tl.program_id(0)
    o_n = i_b * BB + tl.arange(0, BB)
    m_n = o_n < N
    x = tl.zeros([BB], dtype=tl.float64 if F64 else tl.float32)
    if HAS_INITIAL:
        x = load(p_init, o_n, m_n, F64)
    for k0 in range(0, NSEG, KC):
        o_k = k0 + tl.arange(0, KC)  # positions in scan order
        if REVERSE:
            s = NSEG - 1 - o_k
        else:
            s = o_k
        m = (o_k < NSEG)[:, None] & m_n[None, :]
        off = s[:, None] * N + o_n[None, :]
        first = k0 * N + o_n
        if REVERSE:
            first = (NSEG - 1 - k0) * N + o_n
        tl.store(p_cin + first, x.to(p_cin.dtype.element_ty), mask=m_n)
        sh = tl.where(m, load(p_sh, off, m, F64), 0.0)
        sb = tl.where(m, load(p_sb, off, m, F64), 1.0)
        A, B = tl.associative_scan((sh, sb), 0, combine)
        h = A + tl.where(B == 0.0, 0.0, B * x[None, :])  # the carry leaving each segment
        if REVERSE:
            nxt = off - N
        else:
            nxt = off + N
        tl.store(p_cin + nxt, h.to(p_cin.dtype.element_ty), mask=m & (o_k + 1 < NSEG)[:, None])
        x = row(h, o_k, k0 + KC - 1)
