"""Would time-major rows of few columns scan faster with K consecutive steps a thread?

Time-major rows of few columns (8 × 131072: [T, 8]) take [BT, C] blocks in which triton gives a
thread one step's C columns (sizePerThread [1, C] or [1, 4]), so `tl.associative_scan` along time
crosses lanes and warps for every element: PHASE 3's [1024, 8] block compiles to 608 shuffles
and 44 barriers for 12 loads (sm_90, triton 3.9), where the batch-major block of the same op, 4
or 8 steps a thread, has 24–52 shuffles. Their device times differ by about that: episodic sums
at 8 × 131072 float32, 17.0 µs time-major against 10.7 batch-major (`h200.json`).

Triton does not let a kernel choose the layout: a block loaded as K sub-blocks and joined
(`tl.join`, `tl.permute`, `tl.reshape`) into [K·R, C] with a thread's K steps in its registers is
converted back to a blocked layout before the scan (`ttg.convert_layout` ahead of `tt.scan`). So
the prototype scans a thread's K steps itself: K sub-blocks [R, C] (rows r·K + j), combined
elementwise in registers, then one `tl.associative_scan` over the [R, C] composites and one more
to shift them to each thread's exclusive prefix (as `common.previous`). Compiled for sm_90 (a
block of 1024 steps × 8 columns, 8 warps): K = 1 as shipped 320 shuffles, 504 `ld.shared`;
K = 4 200 and 156.

Both kernels scan each block of BLOCK steps on its own (no carry between programs: the look-back
and the split are left out, the same for both), h_t = a_t + b_t · h_{t-1} with b = 0 a reset,
float32. Prints the median device µs (the L2 flushed before each window) of each, and of a plain
copy kernel (2 arrays in, 2 out: 4/3 of a scan's bytes), and checks every output against a
float64 numpy scan (the copy against its input).
Usage: python tests/gpu_runs/proto_rows.py [OUT.json]   (CPU: TRITON_INTERPRET=1, small)

Run once (2026-12-07, an H100; tune_h200.md, run 31): copy 7.04 µs, the shipped form 14.18, K = 2
11.55, K = 4 10.59, K = 8 9.34 (1.52×). Built into the kernels in the forty-eighth session in
another form, the rows loaded in thread order (`common.thread_order`; tune_h200.md, run 32). That run's file
(`2026-12-07-h100-s47-proto-rows.json`) predates the header of `benchmarks.run.environment`: it
names the device, jax and triton; the date and jax-triton are in tests/gpu_runs/README.md.
"""

from __future__ import annotations

import json
import os
import statistics
import sys

import jax
import jax.numpy as jnp
import numpy as np
import triton
import triton.language as tl

from benchmarks import devicetime, run
from rlscan_jax._src import dispatch
from rlscan_jax._src.triton import launch
from rlscan_jax._src.triton.kernels import common

WINDOWS = 7


@triton.jit
def copy_kernel(p_a, p_b, p_y, p_z, BLOCK: tl.constexpr, C: tl.constexpr):
    o = (tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)[:, None]) * C + tl.arange(0, C)[None, :]
    tl.store(p_y + o, tl.load(p_a + o))
    tl.store(p_z + o, tl.load(p_b + o))


@triton.jit
def step_kernel(p_a, p_b, p_y, BLOCK: tl.constexpr, C: tl.constexpr):
    """As shipped: a [BLOCK, C] block, scanned along time by tl.associative_scan."""
    o = (tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)[:, None]) * C + tl.arange(0, C)[None, :]
    h, _ = tl.associative_scan((tl.load(p_a + o), tl.load(p_b + o)), 0, common.combine)
    tl.store(p_y + o, h)


@triton.jit
def _fold(p_y, o, h, g, ex, C: tl.constexpr, J: tl.constexpr):
    tl.store(p_y + o + J * C, h + tl.where(g == 0.0, 0.0, g * ex))


@triton.jit
def rows_kernel(p_a, p_b, p_y, BLOCK: tl.constexpr, C: tl.constexpr, K: tl.constexpr):
    """K consecutive steps a thread: sub-block j holds steps r·K + j of the block's R = BLOCK / K
    thread rows. The K steps are scanned in registers, the [R, C] composites across threads."""
    R: tl.constexpr = BLOCK // K
    r = tl.arange(0, R)[:, None]
    o = (tl.program_id(0) * BLOCK + r * K) * C + tl.arange(0, C)[None, :]
    h0 = tl.load(p_a + o)
    g0 = tl.load(p_b + o)
    h1, g1 = common.combine(h0, g0, tl.load(p_a + o + C), tl.load(p_b + o + C))
    hl, gl = h1, g1
    if K >= 4:
        h2, g2 = common.combine(h1, g1, tl.load(p_a + o + 2 * C), tl.load(p_b + o + 2 * C))
        h3, g3 = common.combine(h2, g2, tl.load(p_a + o + 3 * C), tl.load(p_b + o + 3 * C))
        hl, gl = h3, g3
    if K == 8:
        h4, g4 = common.combine(h3, g3, tl.load(p_a + o + 4 * C), tl.load(p_b + o + 4 * C))
        h5, g5 = common.combine(h4, g4, tl.load(p_a + o + 5 * C), tl.load(p_b + o + 5 * C))
        h6, g6 = common.combine(h5, g5, tl.load(p_a + o + 6 * C), tl.load(p_b + o + 6 * C))
        h7, g7 = common.combine(h6, g6, tl.load(p_a + o + 7 * C), tl.load(p_b + o + 7 * C))
        hl, gl = h7, g7
    s, _ = tl.associative_scan((hl, gl), 0, common.combine)
    ex = common.previous(s, tl.zeros_like(s), tl.zeros_like(s) == 0.0)  # the state before this thread's first step
    _fold(p_y, o, h0, g0, ex, C, 0)
    _fold(p_y, o, h1, g1, ex, C, 1)
    if K >= 4:
        _fold(p_y, o, h2, g2, ex, C, 2)
        _fold(p_y, o, h3, g3, ex, C, 3)
    if K == 8:
        _fold(p_y, o, h4, g4, ex, C, 4)
        _fold(p_y, o, h5, g5, ex, C, 5)
        _fold(p_y, o, h6, g6, ex, C, 6)
        _fold(p_y, o, h7, g7, ex, C, 7)


def oracle(a, b, block):
    """float64: each block of `block` steps scanned on its own, b = 0 a reset."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    y = np.empty_like(a64)
    for t in range(a.shape[0]):
        start = t % block == 0
        y[t] = a64[t] if start else a64[t] + np.where(b64[t] == 0.0, 0.0, b64[t] * y[t - 1])
    return y


def variants(block):
    yield "copy", copy_kernel, {}, 2
    yield "step", step_kernel, {}, 1
    for k in (2, 4, 8):
        yield f"rows{k}", rows_kernel, {"K": k}, 1


def main(argv):
    interpret = dispatch.interpret_mode()
    t, c, block, warps = (256, 8, 64, 2) if interpret else (131072, 8, 1024, 8)
    rng = np.random.default_rng(0)
    a = rng.standard_normal((t, c)).astype(np.float32)
    b = np.where(rng.random((t, c)) < 0.01, 0.0, rng.uniform(0.9, 1.0, (t, c))).astype(np.float32)
    want = oracle(a, b, block)
    ja, jb = jnp.asarray(a), jnp.asarray(b)
    out = jax.ShapeDtypeStruct((t, c), jnp.float32)
    rows = []
    for name, kernel, extra, outs in variants(block):

        def fn(x, y, kernel=kernel, extra=extra, outs=outs):
            grid = (t // block,)
            return launch.call(
                kernel, grid=grid, args=(x, y), out_shapes=[out] * outs, num_warps=warps, BLOCK=block, C=c, **extra
            )

        f = jax.jit(fn)
        got = [np.asarray(v) for v in f(ja, jb)]
        if name == "copy":
            err = max(float(np.max(np.abs(got[0] - a))), float(np.max(np.abs(got[1] - b))))
        else:
            err = float(np.max(np.abs(got[0] - want)) / np.max(np.abs(want)))
        row = {"variant": name, "T": t, "C": c, "block": block, "num_warps": warps, "max_err": err}
        if not interpret:
            flush = devicetime.cache_flush(256 << 20)
            s = devicetime.run([devicetime.Job("w", lambda f=f: f(ja, jb), WINDOWS)], before_window=flush)
            totals = [sum(d for _, d, _ in w) for w in s.windows["w"]]
            row.update(device_us=statistics.median(totals), spread=[min(totals), max(totals)])
        rows.append(row)
        print(json.dumps(row), flush=True)
    bad = [r["variant"] for r in rows if not r["max_err"] <= 1e-5]
    if len(argv) > 1:
        with open(argv[1], "w") as fh:
            json.dump({"header": run.environment(), "rows": rows}, fh, indent=1)
    if bad:
        print("FAILED the oracle:", bad)
    return 1 if bad else 0


if __name__ == "__main__":
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    sys.exit(main(sys.argv))
