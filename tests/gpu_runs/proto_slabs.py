"""Prototype: time-major GAE in warp slabs, one launch, inputs read once (not the library's kernel).

Usage: python tests/gpu_runs/proto_slabs.py OUT.json          (on the GPU: check, then time)
       python tests/gpu_runs/proto_slabs.py --ptx K W BB PF   (here: sm_90 PTX instruction counts)

The library's time-major blocks [BT, BB] put one column in each lane and spread a chunk's
time steps over the warps by repetition, so a thread holds steps w, w + W, w + 2W, ...: the
scan along time crosses lanes and warps at every level (shared memory, barriers, shuffles:
tune_h200.md, run 3). Rows of 512+ steps therefore split in three launches, and read their
inputs twice.

Here a chunk is a 3-d block [K, W, BB]: warp w holds the K consecutive steps w·K … w·K + K − 1
of BB columns, one column a lane. The scan along K is sequential in each thread (no shuffles, no
shared memory); the W slabs' composites are combined across warps in one small scan that also
yields each slab's exclusive prefix (`combine_excl`); a program walks its columns' chunks in scan
order, carrying the state, with the next chunk's loads issued before the current one is scanned
(PF). One launch, every input read once.
"""

import json
import os
import sys

import triton
import triton.language as tl

from rlscan_jax._src.triton.kernels import common


@triton.jit
def combine_excl(pa1, pb1, ea1, eb1, pa2, pb2, ea2, eb2):
    """(inclusive, exclusive) composites: the exclusive one of a span is its left part's inclusive
    composite followed by its right part's exclusive one."""
    pa, pb = common.combine(pa1, pb1, pa2, pb2)
    ea, eb = common.combine(pa1, pb1, ea2, eb2)
    return pa, pb, ea, eb


@triton.jit
def _chunk(p_r, p_v, p_term, boot, o_n, c, N, T, K: tl.constexpr, W: tl.constexpr, CVEC: tl.constexpr):
    """Loads chunk c (reverse scan order: position q = w·K + k is time c·BT + BT − 1 − q)."""
    BT: tl.constexpr = K * W
    q = tl.arange(0, W)[None, :] * K + tl.arange(0, K)[:, None]  # [K, W]
    t = (c * BT + BT - 1 - q)[:, :, None]  # [K, W, 1]
    if CVEC > 1:
        N = (N // CVEC) * CVEC
    m = (t >= 0) & (t < T) & (o_n < N)[None, None, :]
    off = t * N + o_n[None, None, :]
    last = (t == T - 1) & (o_n >= 0)[None, None, :]
    r = tl.load(p_r + off, mask=m, other=0.0).to(tl.float32)
    v = tl.load(p_v + off, mask=m, other=0.0).to(tl.float32)
    v1 = tl.load(p_v + off + N, mask=m & ~last, other=0.0).to(tl.float32)
    term = tl.load(p_term + off, mask=m, other=0) != 0
    nv = tl.where(last, boot[None, None, :], v1)
    return r, v, nv, term, last, m, off


@triton.jit
def gae_slab_kernel(
    p_r,
    p_v,
    p_boot,
    p_term,
    N,
    T,
    p_adv,
    p_ret,
    GAMMA: tl.constexpr,
    LAM: tl.constexpr,
    K: tl.constexpr,
    W: tl.constexpr,
    BB: tl.constexpr,
    PF: tl.constexpr,
    CVEC: tl.constexpr,
):
    BT: tl.constexpr = K * W
    i_b = tl.program_id(0)
    o_n = i_b * BB + tl.arange(0, BB)
    boot = tl.load(p_boot + o_n, mask=o_n < N, other=0.0).to(tl.float32)
    o_k = tl.arange(0, K)[:, None, None]
    o_w = tl.arange(0, W)[:, None]
    nch = tl.cdiv(T, BT)
    ch = tl.zeros([BB], dtype=tl.float32)
    if PF:
        r_n, v_n, nv_n, term_n, last_n, m_n, off_n = _chunk(p_r, p_v, p_term, boot, o_n, nch - 1, N, T, K, W, CVEC)
    for j in range(nch):
        c = nch - 1 - j
        if PF:
            r, v, nv, term, last, m, off = r_n, v_n, nv_n, term_n, last_n, m_n, off_n
            r_n, v_n, nv_n, term_n, last_n, m_n, off_n = _chunk(p_r, p_v, p_term, boot, o_n, c - 1, N, T, K, W, CVEC)
        else:
            r, v, nv, term, last, m, off = _chunk(p_r, p_v, p_term, boot, o_n, c, N, T, K, W, CVEC)
        a = r + tl.where(term, 0.0, GAMMA * nv) - v
        b = tl.where(term | last, 0.0, GAMMA * LAM)
        a = tl.where(m, a, 0.0)
        b = tl.where(m, b, 1.0)
        A, B = tl.associative_scan((a, b), 0, common.combine)  # along K: inside each thread
        ca = tl.sum(tl.where(o_k == K - 1, A, 0.0), axis=0)  # [W, BB]: each slab's composite
        cb = tl.sum(tl.where(o_k == K - 1, B, 0.0), axis=0)
        pa, pb, ea, eb = tl.associative_scan((ca, cb, ca * 0.0, cb * 0.0 + 1.0), 0, combine_excl)
        e = ea + tl.where(eb == 0.0, 0.0, eb * ch[None, :])  # the state entering each slab
        h = A + tl.where(B == 0.0, 0.0, B * e[None, :, :])
        tl.store(p_adv + off, h.to(p_adv.dtype.element_ty), mask=m)
        tl.store(p_ret + off, (h + v).to(p_ret.dtype.element_ty), mask=m)
        ta = tl.sum(tl.where(o_w == W - 1, pa, 0.0), axis=0)
        tb = tl.sum(tl.where(o_w == W - 1, pb, 0.0), axis=0)
        ch = ta + tl.where(tb == 0.0, 0.0, tb * ch)


@triton.jit
def gae_slab_lb_kernel(
    p_r,
    p_v,
    p_boot,
    p_term,
    N,
    T,
    p_adv,
    p_ret,
    p_agg_a,
    p_agg_b,
    p_sync,
    GAMMA: tl.constexpr,
    LAM: tl.constexpr,
    K: tl.constexpr,
    W: tl.constexpr,
    BB: tl.constexpr,
    KP: tl.constexpr,
    CVEC: tl.constexpr,
    FENCE: tl.constexpr,
):
    """One chunk [K, W, BB] a program, the carry from the chunks before it by the look-back."""
    BT: tl.constexpr = K * W
    nseg = tl.cdiv(T, BT)
    ticket = tl.atomic_add(p_sync, 1, sem="relaxed")
    i_b = ticket // nseg
    c = nseg - 1 - ticket % nseg  # reverse: tickets in scan order
    o_n = i_b * BB + tl.arange(0, BB)
    boot = tl.load(p_boot + o_n, mask=o_n < N, other=0.0).to(tl.float32)
    o_k = tl.arange(0, K)[:, None, None]
    o_w = tl.arange(0, W)[:, None]
    r, v, nv, term, last, m, off = _chunk(p_r, p_v, p_term, boot, o_n, c, N, T, K, W, CVEC)
    a = r + tl.where(term, 0.0, GAMMA * nv) - v
    b = tl.where(term | last, 0.0, GAMMA * LAM)
    a = tl.where(m, a, 0.0)
    b = tl.where(m, b, 1.0)
    A, B = tl.associative_scan((a, b), 0, common.combine)
    ca = tl.sum(tl.where(o_k == K - 1, A, 0.0), axis=0)
    cb = tl.sum(tl.where(o_k == K - 1, B, 0.0), axis=0)
    pa, pb, ea, eb = tl.associative_scan((ca, cb, ca * 0.0, cb * 0.0 + 1.0), 0, combine_excl)
    ta = tl.sum(tl.where(o_w == W - 1, pa, 0.0), axis=0)
    tb = tl.sum(tl.where(o_w == W - 1, pb, 0.0), axis=0)
    # publish, then wait for the chunks after c (earlier in scan order) and fold them in order
    base = i_b.to(tl.int64) * nseg
    o_r = tl.arange(0, BB)
    tl.store(p_agg_a + (base + c) * BB + o_r, ta)
    tl.store(p_agg_b + (base + c) * BB + o_r, tb)
    tl.debug_barrier()
    tl.atomic_xchg(p_sync + 1 + base + c, 1, sem="release", scope="gpu")
    o_q = KP - 1 - tl.arange(0, KP)  # slots in scan order: descending chunks
    before = (o_q > c) & (o_q < nseg)
    p_flags = p_sync + 1 + base + o_q
    need = tl.sum(before.to(tl.int32), axis=0)
    seen = tl.sum(tl.load(p_flags, mask=before, other=0, volatile=True), axis=0)
    while seen < need:
        seen = tl.sum(tl.load(p_flags, mask=before, other=0, volatile=True), axis=0)
    if FENCE:
        tl.inline_asm_elementwise("fence.acq_rel.gpu;\n\tmov.u32 $0, 0;", "=r", [], tl.int32, False, 1)
    else:
        tl.atomic_add(p_flags, 0, mask=before, sem="acquire", scope="gpu")
    tl.debug_barrier()
    mf = before[:, None] & (o_r >= 0)[None, :]
    offf = (base + o_q)[:, None] * BB + o_r[None, :]
    fa = tl.load(p_agg_a + offf, mask=mf, other=0.0, volatile=True)
    fb = tl.where(mf, tl.load(p_agg_b + offf, mask=mf, other=0.0, volatile=True), 1.0)
    fa, fb = tl.associative_scan((fa, fb), 0, common.combine)
    # the fold's last row in scan order holds every earlier chunk; masked rows are identities
    ch = tl.sum(tl.where((tl.arange(0, KP) == KP - 1)[:, None], fa, 0.0), axis=0)
    e = ea + tl.where(eb == 0.0, 0.0, eb * ch[None, :])
    h = A + tl.where(B == 0.0, 0.0, B * e[None, :, :])
    tl.store(p_adv + off, h.to(p_adv.dtype.element_ty), mask=m)
    tl.store(p_ret + off, (h + v).to(p_ret.dtype.element_ty), mask=m)


def ptx_counts(K, W, BB, PF, CVEC=1):
    import re

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler import compile as compile_kernel

    fn = gae_slab_kernel
    types = ["*fp32", "*fp32", "*fp32", "*i1", "i32", "i32", "*fp32", "*fp32"]
    constexprs = dict(GAMMA=0.99, LAM=0.95, K=K, W=W, BB=BB, PF=PF, CVEC=CVEC)
    params = [p for p in fn.arg_names if p not in constexprs]
    signature = dict(zip(params, types))
    signature.update({k: "constexpr" for k in constexprs})
    attrs = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(types) if t.startswith("*")}
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    compiled = compile_kernel(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": W})
    ptx = compiled.asm["ptx"]
    counts = {
        k: len(re.findall(k, ptx))
        for k in ["ld.global", "st.global", "ld.shared", "st.shared", "bar.sync", "shfl.sync"]
    }
    layouts = sorted(set(re.findall(r"#ttg\.blocked<\{[^}]*\}>", compiled.asm["ttgir"])))
    return counts, compiled.n_regs if hasattr(compiled, "n_regs") else None, compiled.metadata.shared, layouts


SHAPES = [(1024, 4096), (512, 16384), (128, 16384), (128, 4096), (4096, 1024), (4096, 512), (1024, 1024)]  # [T, N]
CONFIGS = [  # K, W, BB, PF (-1, -2: the look-back; -2 with one fence), CVEC
    (16, 4, 32, -2, 1),
    (16, 8, 32, -2, 1),
    (8, 8, 32, -2, 1),
    (8, 4, 32, -2, 1),
    (32, 4, 32, -2, 1),
    (16, 2, 32, -2, 1),
    (32, 8, 32, -2, 1),
    (16, 4, 64, -2, 2),
    (8, 8, 64, -2, 2),
    (16, 4, 32, -1, 1),
    (16, 4, 32, 1, 1),  # run 15a's best chunk loop, for reference
]


def slab_gae(r, v, done, boot, K, W, BB, PF, CVEC):
    import jax
    import jax.numpy as jnp

    from rlscan_jax._src.triton import launch

    T, N = r.shape
    out = [jax.ShapeDtypeStruct(r.shape, r.dtype)] * 2
    if PF < 0:  # the look-back: one chunk a program
        nseg = launch.cdiv(T, K * W)
        nb = launch.cdiv(N, BB)
        scratch = [jax.ShapeDtypeStruct((nb * nseg * BB,), jnp.float32)] * 2
        scratch.append(jax.ShapeDtypeStruct((1 + nb * nseg,), jnp.int32))
        adv, ret, *_ = launch.call(
            gae_slab_lb_kernel,
            grid=(nb * nseg,),
            args=[r, v, boot, done, N, T],
            out_shapes=out + scratch,
            num_warps=W,
            zeroed=(4,),
            GAMMA=0.99,
            LAM=0.95,
            K=K,
            W=W,
            BB=BB,
            KP=max(2, 1 << (nseg - 1).bit_length()),
            CVEC=CVEC,
            FENCE=PF == -2,
        )
        return adv, ret
    adv, ret = launch.call(
        gae_slab_kernel,
        grid=(launch.cdiv(N, BB),),
        args=[r, v, boot, done, N, T],
        out_shapes=out,
        num_warps=W,
        GAMMA=0.99,
        LAM=0.95,
        K=K,
        W=W,
        BB=BB,
        PF=PF,
        CVEC=CVEC,
    )
    return adv, ret


def inputs(shape):
    import jax
    import jax.numpy as jnp

    key = jax.random.split(jax.random.PRNGKey(0), 3)
    dtype = jnp.dtype(os.environ.get("PROTO_DTYPE", "float32"))
    r = jax.random.normal(key[0], shape, jnp.float32).astype(dtype)
    v = jax.random.normal(key[1], shape, jnp.float32).astype(dtype)
    done = jax.random.bernoulli(key[2], 0.02, shape)
    boot = jax.random.normal(key[0], shape[1:], jnp.float32)
    return r, v, done, boot


def main(out, shapes=SHAPES, configs=CONFIGS, time_it=True):
    import jax
    import numpy as np

    import rlscan_jax

    records = []
    if time_it:
        from benchmarks import devicetime
        from benchmarks.run import environment

        x = jax.numpy.ones((1 << 29,), jax.numpy.float32)
        cp = jax.jit(lambda x: x * 1.0000001)
        jax.block_until_ready(cp(x))
        s = devicetime.run([devicetime.Job("copy", lambda: cp(x), windows=5)])
        bw = 2 * x.nbytes / float(np.median(devicetime.per_call_us(s.windows["copy"], 1)[0])) / 1e3
        del x
        flush = devicetime.cache_flush(256 << 20)
        env = environment()
        print(f"copy {bw:.0f} GB/s", flush=True)
    for shape in shapes:
        args = inputs(shape)
        nbytes = args[0].size * (4 * args[0].dtype.itemsize + 1)
        fns = {}
        for impl in ("triton", "associative"):
            f = jax.jit(
                lambda r, v, d, b, impl=impl: tuple(
                    rlscan_jax.gae(r, v, terminated=d, bootstrap_value=b, implementation=impl)
                )
            )
            fns[impl] = f
        for cfg in configs:
            if cfg[2] > shape[1] or shape[1] % cfg[4]:
                continue
            fns[cfg] = jax.jit(lambda r, v, d, b, cfg=cfg: slab_gae(r, v, d, b, *cfg))
        ref = [np.asarray(o) for o in fns["associative"](*args)]
        errs = {}
        for name, f in fns.items():
            got = f(*args)
            errs[name] = max(
                float(
                    np.max(np.abs(np.asarray(g, np.float32) - e.astype(np.float32)))
                    / max(1.0, np.max(np.abs(e.astype(np.float32))))
                )
                for g, e in zip(got, ref)
            )
        if not time_it:
            records.append(dict(shape=shape, errs={str(k): e for k, e in errs.items()}))
            print(shape, errs, flush=True)
            continue
        for f in fns.values():
            jax.block_until_ready(f(*args))
        jobs = [devicetime.Job(str(i), (lambda f=f, a=args: f(*a)), windows=7) for i, f in enumerate(fns.values())]
        s = devicetime.run(jobs, before_window=flush)
        for job, name in zip(jobs, fns):
            us = float(np.median(devicetime.per_call_us(s.windows[job.name], 1)[0]))
            frac = nbytes / (us * 1e-6) / (bw * 1e9)
            rec = dict(shape=shape, cfg=name if isinstance(name, str) else dict(zip("K W BB PF CVEC".split(), name)))
            rec.update(us=us, frac=frac, err=errs[name], dtype=str(args[0].dtype))
            records.append(rec)
            print(f"[T, N] {shape} {name}: {us:.1f} us {100 * frac:.0f}% err {errs[name]:.1e}", flush=True)
        with open(out, "w") as f:
            json.dump({**env, "copy_bw_gbps": bw, "records": records}, f)
    return records


if __name__ == "__main__":
    if sys.argv[1] == "--interpret":
        main(
            None,
            shapes=[(40, 64), (37, 96), (64, 32)],
            configs=[(4, 2, 32, 1, 1), (2, 4, 32, 0, 1), (4, 2, 64, 1, 2), (4, 2, 32, -1, 1), (2, 2, 64, -1, 2)],
            time_it=False,
        )
    elif sys.argv[1] != "--ptx":
        main(sys.argv[1])
    else:
        K, W, BB, PF = (int(x) for x in sys.argv[2:6])
        counts, regs, shared, layouts = ptx_counts(K, W, BB, PF)
        print(json.dumps(dict(K=K, W=W, BB=BB, PF=PF, counts=counts, shared=shared)))
        for lay in layouts:
            print(lay)
