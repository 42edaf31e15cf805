"""Block-size / warp / split tuning on the GPU: device time of each launch configuration.

Usage: python tests/gpu_runs/tune.py OUT.json [ops] [MODE]
MODE: time_major|columns|vector|fence|carry|vec8|segments|combos|cvec|narrow|fill|tm128|blocks16
(time_major: only the time-major shapes; columns: only time-major rows of 256 steps or more,
and only the column-block configurations; vector: only batch-major rows of a multiple of 4
steps and single rows, and only the configurations of VEC_BATCH_MAJOR, SINGLE_ROW_BATCH_MAJOR and
VECTOR_SPLIT_ELEMS; fence: every shape, the configurations of LOOKBACK_FENCE and the look-back
plans they are compared with; carry: the shapes of columns, only carry_kernel's blocks and the two-launch split;
vec8: batch-major rows of 128+ steps, a multiple of 8, and VEC_BATCH_MAJOR = 8; segments: the rows
that split in three launches, and the configurations of more segments a row (SEGMENTS); combos:
the same rows, and SEGMENTS' winners together (COMBOS); cvec: time-major rows of 256+ steps, and
vector loads across the column blocks' columns (CVEC); narrow: time-major rows of N not a multiple
of 16, 8 x 131072 batch-major and single rows, and vector loads across few columns and the
two-launch split (NARROW); fill: splits of few blocks, and smaller blocks for them (FILL); tm128:
time-major rows of up to 128 steps (TM128); blocks16: batch-major rows of 128-1024 steps scanned
whole, and more steps a thread (BLOCKS16)).
TUNE_DTYPE=bfloat16 rounds the floating inputs to bfloat16 (default float32).
The windowed look-back's configurations
and the modes window and columns_window that tune run 6 used are in commit adb761d.
For each shape and configuration (overrides of the launch constants in
rlscan_jax/_src/triton/launch.py), the op's forward is compiled, checked against the associative
reference, and timed from the profiler trace (kernel time only, all launches of a call).
Prints the best configuration per shape. The first configuration is the shipped one.

Several processes may tune side by side on one GPU (`tune_all.sh`: one per op): with
TUNE_LOCK=PATH set, each holds an exclusive lock on PATH (flock) whenever it runs anything on
the GPU (inputs, the bandwidth copy, the correctness check, the timed windows) and compiles
without it, so compilation runs in parallel and timings never overlap.
"""

import contextlib
import fcntl
import json
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

import rlscan_jax
from benchmarks import devicetime
from benchmarks.run import environment
from rlscan_jax._src.triton import batching, launch, ops

SHAPES = [  # (shape, time_axis): N×T as in the benchmark grid
    ((128, 4096), 0),
    ((4096, 128), 1),
    ((128, 16384), 0),
    ((16, 65536), 0),
    ((65536, 16), 1),
    ((8, 32768), 0),
    ((1024, 4096), 0),
    ((512, 16384), 0),
    ((4096, 512), 0),
    ((4096, 1024), 1),
    ((4096, 1024), 0),
    ((131072, 8), 0),
    ((8, 131072), 1),
    ((1 << 20,), 0),
    ((1024, 4096), 1),
    ((512, 4096), 1),
    ((128, 1000), 0),  # 1000 environments time-major: N not a multiple of 16 (TIME_MAJOR_CVEC), rows whole
    ((65536,), 0),  # a single row of 32 segments: the two-launch split (FOLD_CARRY_ELEMS)
    ((4096, 4), 0),  # 4 columns time-major: CVEC 4 in the look-back
    # (run 15) splits of few programs (SPLIT_FILL_PROGRAMS)
    ((16384, 4), 0),
    ((262144,), 0),
    ((64, 2048), 1),
    ((8192, 16), 0),
    ((32768, 2), 0),
    # (run 19) batch-major rows of 128-1024 steps scanned whole, as the benchmark grid has them
    ((16384, 128), 1),
    ((16384, 512), 1),
]
# TUNE_SHAPES (e.g. "128x1000@0,65536@0"): only these shapes, as `shape@time_axis`.
_ONLY = {s for s in os.environ.get("TUNE_SHAPES", "").split(",") if s}


def _carry(rows, warps, segments):
    """carry_kernel in blocks of `rows` rows at `warps` warps, `segments` a round, at every row."""
    return dict(
        CARRY_BLOCK_ROWS=rows,
        CARRY_WARPS=warps,
        CARRY_SEGMENTS=segments,
        CARRY_LONG_BLOCK_ROWS=rows,
        CARRY_LONG_SEGMENTS=segments,
    )


# The kernel each op runs, for whether its PHASE 1 walks back (launch.SUMMARY_WALK_BACK names the
# kernels that do).
KERNEL = {
    "gae": "gae_kernel",
    "vtrace": "vtrace_kernel",
    "retrace": "retrace_kernel",
    "discounted_returns": "returns_kernel",
    "eligibility_traces": "linear_kernel",
}
# PHASE 1 walking back in every kernel (in runs 11a and 11b a flag for all of them, as this is).
_ALL = tuple(KERNEL.values())

SEGMENTS = [
    # More segments a row, now that carry_kernel chains up to CARRY_LONG_SEGMENTS of them in one
    # round trip (run 10b): the column blocks' segment counts were tuned (runs 5-6) when every
    # 16 segments cost carry_kernel another round. Nsight Compute on GAE 1024x4096 time-major
    # (run 10): PHASE 1 and 2 at 0.65 and 0.48 waves, 47 % achieved occupancy.
    {"COLUMN_MAX_SEGMENTS": 256, "CARRY_LONG_SEGMENTS": 256},
    {"COLUMN_TARGET_PROGRAMS": 1056},
    {"COLUMN_TARGET_PROGRAMS": 1056, "COLUMN_MAX_SEGMENTS": 256, "CARRY_LONG_SEGMENTS": 256},
    {"COLUMN_TARGET_PROGRAMS": 2112, "COLUMN_MAX_SEGMENTS": 256, "CARRY_LONG_SEGMENTS": 256},
    {"COLUMN_SEGMENT_CHUNKS": 4, "COLUMN_MAX_SEGMENTS": 256, "CARRY_LONG_SEGMENTS": 256},
    {"COLUMN_MAX_SEGMENTS": 256, "CARRY_LONG_SEGMENTS": 256, "CARRY_LONG_BLOCK_ROWS": 2},
    # ... and the vectorised split of long batch-major rows in smaller blocks (2 x the segments).
    {"CARRY_LONG_SEGMENTS": 256},
    {"VECTOR_SPLIT_ELEMS": 2048, "CARRY_LONG_SEGMENTS": 256},
    {"VECTOR_SPLIT_ELEMS": 2048, "CARRY_LONG_SEGMENTS": 512, "CARRY_LONG_BLOCK_ROWS": 1},
    # The second read of the three-launch split from the L2: PHASE 1 walking each segment against
    # scan order (its last reads are PHASE 2's first), PHASE 2's outputs in streaming stores.
    {"SUMMARY_WALK_BACK": _ALL},
    {"STREAM_STORES": True},
    {"SUMMARY_WALK_BACK": _ALL, "STREAM_STORES": True},
    {"SUMMARY_WALK_BACK": _ALL, "STREAM_STORES": True, "COLUMN_MAX_SEGMENTS": 256, "CARRY_LONG_SEGMENTS": 256},
    {"SUMMARY_WALK_BACK": _ALL, "STREAM_STORES": True, "COLUMN_SEGMENT_CHUNKS": 16, "COLUMN_TARGET_PROGRAMS": 264},
]  # tune.py's segments mode (run 11a)

_LONG = {"COLUMN_MAX_SEGMENTS": 256, "CARRY_LONG_SEGMENTS": 256, "CARRY_LONG_BLOCK_ROWS": 2}
_L2 = {"SUMMARY_WALK_BACK": _ALL, "STREAM_STORES": True}
COMBOS = [
    # Run 11a's winners together: 256 segments for rows of 4096 steps in carry blocks of 2 rows,
    # long batch-major rows in blocks of 2048 (2 x the segments), the L2 order (walk back and
    # streaming stores), each alone and together.
    {"SUMMARY_WALK_BACK": _ALL},
    {"STREAM_STORES": True},
    _LONG,
    {**_LONG, "STREAM_STORES": True},
    {**_LONG, **_L2},
    {**_LONG, "VECTOR_SPLIT_ELEMS": 2048},
    {**_LONG, "VECTOR_SPLIT_ELEMS": 2048, "STREAM_STORES": True},
    {**_LONG, "VECTOR_SPLIT_ELEMS": 2048, **_L2},
    {**_LONG, "VECTOR_SPLIT_ELEMS": 2048, "CARRY_LONG_SEGMENTS": 512, **_L2},
    {**_LONG, "VECTOR_SPLIT_ELEMS": 2048, "CARRY_LONG_SEGMENTS": 512, "CARRY_LONG_BLOCK_ROWS": 1, **_L2},
]  # tune.py's combos mode (run 11b)


# Vector loads across time-major columns (launch.COLUMN_VEC, COLUMN_VEC_16BIT, by op): a thread
# loads 2 or 4 neighbouring columns at once, in every op here, in blocks of 256 columns (fewer
# warps) or 512. Run 13 chose the shipped tables from these.
def _cvec(width, **more):
    return {"COLUMN_VEC": dict.fromkeys(KERNEL, width), "COLUMN_VEC_16BIT": dict.fromkeys(KERNEL, width), **more}


CVEC = [
    _cvec(1),
    _cvec(2),
    _cvec(4),
    _cvec(2, COLUMNS_TIME_MAJOR=512),
    _cvec(4, COLUMNS_TIME_MAJOR=512),
]  # tune.py's cvec mode (run 13)


# Time-major rows of N columns not a multiple of 16 outside the column blocks (8 x 131072): vector
# loads across their columns (launch.TIME_MAJOR_CVEC; 1 is the plan before run 14), in the look-back
# and in the vectorised three-launch split (TIME_MAJOR_VECTOR_SPLIT, by op), at 8 warps
# (MAX_WARPS_TIME_MAJOR_CVEC) or 16 and in blocks of 1024-4096 elements. And for these and the other
# long rows that split in few blocks (8 x 131072 batch-major, 1 x 1048576), the two-launch split
# (FOLD_CARRY_ELEMS: PHASE 2 folds the segments' composites, no carry_kernel; 0 before run 14),
# FOLD_CARRY_ROUND elements a round. Run 14 ran these as they were then: TIME_MAJOR_VECTOR_SPLIT a
# flag for every op (here tuple(KERNEL)), MAX_WARPS_TIME_MAJOR 8 where it now reads
# MAX_WARPS_TIME_MAJOR_CVEC 8 (shipped), FOLD_CARRY_ELEMS 0 shipped.
_TM_SPLIT = {"TIME_MAJOR_VECTOR_SPLIT": tuple(KERNEL)}
NARROW = [
    {"TIME_MAJOR_CVEC": 1},
    {"TIME_MAJOR_CVEC": 4},
    {"SPLIT_BLOCK_ELEMS_FEW_ROWS": 4096},
    {"MAX_WARPS_TIME_MAJOR_CVEC": 16},
    _TM_SPLIT,
    {**_TM_SPLIT, "MAX_WARPS_TIME_MAJOR_CVEC": 16},
    {**_TM_SPLIT, "VECTOR_SPLIT_ELEMS": 4096},
    {**_TM_SPLIT, "VECTOR_SPLIT_ELEMS": 1024},
    {**_TM_SPLIT, "TIME_MAJOR_CVEC": 4},
    {"FOLD_CARRY_ELEMS": 0},
    {"FOLD_CARRY_ELEMS": 1024},
    {"FOLD_CARRY_ELEMS": 1024, "FOLD_CARRY_ROUND": 1024},
    {**_TM_SPLIT, "FOLD_CARRY_ELEMS": 4096},
    {**_TM_SPLIT, "FOLD_CARRY_ELEMS": 4096, "FOLD_CARRY_ROUND": 4096},
    {"MAX_WARPS_TIME_MAJOR": 8},  # (after run 14) rows scanned whole at 8 warps, with vectors or not
    # (run 15) rows scanned whole at 1000 columns: wider blocks, fewer threads along the columns idle
    {"MIN_ROWS_TIME_MAJOR_WHOLE": 32},
    {"MIN_ROWS_TIME_MAJOR_WHOLE": 32, "MAX_WARPS_TIME_MAJOR": 8},
    {"MIN_ROWS_TIME_MAJOR_WHOLE": 64, "MAX_WARPS_TIME_MAJOR": 8},
    {"MIN_ROWS_TIME_MAJOR_WHOLE": 32, "TIME_MAJOR_CVEC": 1},
]  # tune.py's narrow mode (runs 14 and 15)


# Splits of few programs: blocks halved along time until the programs come to SPLIT_FILL_PROGRAMS,
# down to SPLIT_FILL_MIN_ELEMS elements (0 before run 15); with the vectorised split for every op's
# time-major rows of few columns too.
FILL = [
    {"SPLIT_FILL_PROGRAMS": 0},
    {"SPLIT_FILL_PROGRAMS": 128, "SPLIT_FILL_MIN_ELEMS": 512},
    {"SPLIT_FILL_PROGRAMS": 128, "SPLIT_FILL_MIN_ELEMS": 256},
    {"SPLIT_FILL_PROGRAMS": 256, "SPLIT_FILL_MIN_ELEMS": 256},
    {"SPLIT_FILL_PROGRAMS": 256, "SPLIT_FILL_MIN_ELEMS": 512},
    {"SPLIT_FILL_PROGRAMS": 128, "SPLIT_FILL_MIN_ELEMS": 512, **_TM_SPLIT},
    {"SPLIT_FILL_PROGRAMS": 256, "SPLIT_FILL_MIN_ELEMS": 256, **_TM_SPLIT},
    {"SPLIT_FILL_PROGRAMS": 512, "SPLIT_FILL_MIN_ELEMS": 256},
]  # tune.py's fill mode (run 15)


# Time-major rows of up to 128 steps scanned whole (the PPO shapes 4096x128 and 16384x128, 18-41 %
# of the limit with the L2 flushed, against 37-80 % batch-major): narrower blocks and fewer warps, so
# that more blocks are resident an SM and one block's scan overlaps another's loads; the column
# blocks (a thread a column, split in three launches) with their inputs inside the L2.
TM128 = [
    {"MIN_ROWS_TIME_MAJOR_WHOLE": 8},
    {"MIN_ROWS_TIME_MAJOR_WHOLE": 8, "THREADS_PER_ELEM": 1 / 8},
    {"MIN_ROWS_TIME_MAJOR_WHOLE": 8, "MAX_WARPS_TIME_MAJOR": 8},
    {"MIN_ROWS_TIME_MAJOR_WHOLE": 16, "THREADS_PER_ELEM": 1 / 8},
    {"MIN_ROWS_TIME_MAJOR_WHOLE": 16, "THREADS_PER_ELEM": 1 / 16},
    {"MIN_ROWS_TIME_MAJOR_WHOLE": 16, "MAX_WARPS_TIME_MAJOR": 8},
    {"MIN_ROWS_TIME_MAJOR_WHOLE": 16, "FILL_WARPS": 0},
    {"MIN_ROWS_TIME_MAJOR_WHOLE": 32, "MAX_WARPS_TIME_MAJOR": 8},
    {"MIN_ROWS_TIME_MAJOR_WHOLE": 32, "FILL_WARPS": 1 << 30},
    {"THREADS_PER_ELEM": 1 / 8},
    {"THREADS_PER_ELEM": 1 / 2},
    {"COLUMN_MIN_T": 1},
    {"COLUMN_MIN_T": 1, "COLUMN_TARGET_PROGRAMS": 1056},
    {"COLUMN_MIN_T": 1, "COLUMNS_TIME_MAJOR": 128},
]  # tune.py's tm128 mode (run 16)


# Batch-major rows of 128-1024 steps scanned whole in blocks of BLOCK_ELEMS elements at 4 a thread
# (THREADS_PER_ELEM): a thread loads 4 consecutive steps, 16 bytes of float32 but 8 of bfloat16
# (ld.global.v2.b32 in sm_90 PTX, triton 3.9). 8 or 16 steps a thread: fewer warps for the same
# block, or larger blocks at the same warps. Since run 19 the light kernels' 16-bit rows take
# launch.BLOCK_ELEMS_16BIT's blocks whatever BLOCK_ELEMS says; its empty table is the plan before.
BLOCKS16 = [
    {"BLOCK_ELEMS_16BIT": {}},
    {"THREADS_PER_ELEM": 1 / 8},
    {"BLOCK_ELEMS": 2048},
    {"BLOCK_ELEMS": 4096},
    {"BLOCK_ELEMS": 2048, "THREADS_PER_ELEM": 1 / 16},
]  # tune.py's blocks16 mode (run 19)


CONFIGS = [  # overrides of launch's constants; the first is the shipped configuration
    {},
    {"LOOKBACK_FOLD": 0},  # the three-launch split only
    {"LOOKBACK_FOLD": 1000},  # the look-back wherever a row splits
    {"BLOCK_ELEMS": 2048},
    {"BLOCK_ELEMS": 512},
    {"SPLIT_BLOCK_ELEMS": 2048},
    {"SPLIT_BT_TIME_MAJOR": 128, "MAX_BT_TIME_MAJOR": 256},
    {"THREADS_PER_ELEM": 1 / 8},
    {"SPLIT_ROWS_BATCH_MAJOR": 1},  # batch-major long rows: one row per block
    {"SPLIT_ROWS_BATCH_MAJOR": 16, "SPLIT_BLOCK_ELEMS": 8192},
    {"MAX_BT": 4096},  # batch-major rows up to 4096 steps in one block
    # Time-major [128, 32] blocks need 178 registers a thread at 8 warps: one block per SM
    # (benchmarks/results/kernel_resources_sm90.md). More warps, fewer elements per thread:
    {"MAX_WARPS": 16},
    {"MAX_WARPS": 32},
    {"MAX_WARPS": 16, "MIN_ROWS_TIME_MAJOR": 64},
    {"MIN_ROWS_TIME_MAJOR": 16},  # [128, 16]: 8 elements a thread at 8 warps
    # Batch-major rows of a multiple of 4 steps: vector loads (PHASE 0-2 only).
    {"VEC_BATCH_MAJOR": 1},  # scalar loads (the shipped plan before run 6)
    {"VEC_BATCH_MAJOR": 4, "LOOKBACK_FOLD": 0},
    # Shipped after run 7: single rows planned as batch-major (SINGLE_ROW_BATCH_MAJOR), vectorised long
    # rows split in three launches in blocks of VECTOR_SPLIT_ELEMS, time-major blocks up to 16 warps.
    {"SINGLE_ROW_BATCH_MAJOR": False},
    {"VECTOR_SPLIT_ELEMS": 0},  # the look-back for them (V-trace's launcher asks for 2048 regardless)
    {"VECTOR_SPLIT_ELEMS": 2048},
    {"VECTOR_SPLIT_ELEMS": 8192},
    {"MAX_WARPS_TIME_MAJOR": 8},
    # The two-launch split (prepared in the eighth session): PHASE 2 folds the segments' carries,
    # no carry_kernel launch, where blocks x segments come to at most FOLD_CARRY_ELEMS.
    {"FOLD_CARRY_ELEMS": 1024},
    {"FOLD_CARRY_ELEMS": 1024, "FOLD_CARRY_ROUND": 64},
    {"FOLD_CARRY_ELEMS": 1024, "VECTOR_SPLIT_ELEMS": 2048},
    {"MAX_WARPS": 16, "LOOKBACK_FOLD": 1000},
    {"MAX_WARPS": 16, "SPLIT_BT_TIME_MAJOR": 32},
    # The carries of a three-launch split chained one segment at a time (before run 5).
    {"CARRY_SEGMENTS": 1},
    # Time-major column blocks, a thread for each column (run 5; the shipped plan since then).
    {"COLUMNS_TIME_MAJOR": 0},  # the time-major blocks before run 5
    {"COLUMN_BT": 2},
    {"COLUMN_BT": 8},
    {"COLUMNS_TIME_MAJOR": 128},
    {"COLUMN_SEGMENT_CHUNKS": 4},
    {"COLUMN_SEGMENT_CHUNKS": 16},
    {"COLUMN_MAX_SEGMENTS": 64},
    {"COLUMN_TARGET_PROGRAMS": 1056},
    {"COLUMN_MIN_T": 1},  # column blocks for rows of 128 steps or fewer too
    # Rows of 8 steps in one [8, 256] column block a program, one pass: the plan that won at
    # 32768x8 time-major in run 6 for discounted returns, eligibility traces and Retrace (1.12-1.27x).
    {"COLUMN_MIN_T": 1, "COLUMN_BT": 8},
    {"FILL_WARPS": 1 << 30},  # time-major blocks up to 16 warps however many programs (16384x128)
    # PHASE 3's flags acquired by an acquire RMW each (before run 8c), with the plans that take it.
    # The column look-back that run 8b measured and its configurations are in commit 2315614.
    {"LOOKBACK_FENCE": False},
    {"LOOKBACK_FENCE": False, "VECTOR_SPLIT_ELEMS": 0},
    {"LOOKBACK_FENCE": False, "LOOKBACK_FOLD": 1000},
    # carry_kernel's blocks (5.8 us of GAE 4096x1024 time-major at 6 % occupancy, run 8), the same
    # at every number of segments (rows, warps, segments a round; 32, 1, 32 shipped before run 10),
    # then 64-128 segments in one round trip in narrower blocks (run 10: carry_kernel 8.9 us of
    # GAE 1024x4096 time-major's 52, four dependent rounds of 32 programs at 2 % occupancy).
    *(_carry(*c) for c in ((32, 1, 32), (64, 2, 32), (128, 4, 32), (64, 1, 8), (16, 1, 64), (8, 1, 128))),
    {"CARRY_LONG_BLOCK_ROWS": 8},
    {"CARRY_LONG_BLOCK_ROWS": 2},
    # ... or no carry_kernel: the two-launch split at the column blocks' 256 columns x 16-128
    # segments, PHASE 2 folding 8 or 4 composites a round.
    {"FOLD_CARRY_ELEMS": 1 << 16, "FOLD_CARRY_ROUND": 2048},
    {"FOLD_CARRY_ELEMS": 1 << 16, "FOLD_CARRY_ROUND": 1024},
    # Batch-major float32 rows 8 steps a thread (two 16-byte loads; 16-bit rows get 8 with
    # VEC_BATCH_MAJOR_16BIT, one 16-byte load), in the blocks of VEC_MIN_BT steps or more.
    {"VEC_BATCH_MAJOR": 8},
    {"VEC_BATCH_MAJOR": 8, "VECTOR_SPLIT_ELEMS": 8192},
    # The fused split (PHASE 4; tune run 10a: 1.2-4.7x slower than the three-launch split) and its
    # configurations are in commit c6e7eb5.
    *SEGMENTS,
    *COMBOS,
    *CVEC,
    *NARROW,
    *FILL,
    *TM128,
    *BLOCKS16,
]


SHIPPED = {name: getattr(launch, name) for name in {k for c in CONFIGS for k in c}}
# What each op's launcher passes to the plan besides the shape (as rlscan_jax/_src/triton/launchers).
PLAN_ARGS = {"vtrace": lambda: (launch.SPLIT_BLOCK_ELEMS, 2048, 16)}


def inputs(op, shape, axis):
    """The op's inputs on the device (GPU work: run under the lock) and its bytes_min."""
    key = jax.random.split(jax.random.PRNGKey(0), 3)
    r = jax.random.normal(key[0], shape, jnp.float32)
    v = jax.random.normal(key[1], shape, jnp.float32)
    done = jax.random.bernoulli(key[2], 0.02, shape)
    dtype = jnp.dtype(os.environ.get("TUNE_DTYPE", "float32"))
    r, v = r.astype(dtype), v.astype(dtype)
    size = dtype.itemsize
    batch = tuple(s for i, s in enumerate(shape) if i != axis)
    boot = jnp.zeros(batch, jnp.float32)
    if op == "gae":
        return (r, v, done, boot), r.size * (4 * size + 1)
    if op in ("vtrace", "retrace"):
        return (r, v, v * 0.5, v * 0.1, done, boot), r.size * (5 * size + 1)
    return (r, done), r.size * (2 * size + 1)


# A plan passes when its outputs are within TOLERANCE of associative's on the same inputs: absolute
# for float32, relative to the output's largest magnitude (at least 1) for 16-bit inputs, whose
# outputs round to 8 bits of mantissa (the tests' bfloat16 tolerance).
def tolerance(dtype) -> float:
    return 1.6e-2 if jnp.dtype(dtype).itemsize == 2 else 1e-3


TOLERANCE = tolerance(os.environ.get("TUNE_DTYPE", "float32"))


def _error(a, b):
    err = jnp.max(jnp.abs(a.astype(jnp.float32) - b.astype(jnp.float32)))
    if a.dtype.itemsize == 2:
        err = err / jnp.maximum(1.0, jnp.max(jnp.abs(b.astype(jnp.float32))))
    return float(err)


def make(op, args, axis, impl):
    """The op's forward, compiled now from the inputs' shapes (no GPU work): later changes to the
    launch constants cannot retrace it. Returns a function of no arguments."""
    if op == "gae":
        f = lambda r, v, done, boot: rlscan_jax.gae(
            r, v, terminated=done, bootstrap_value=boot, time_axis=axis, implementation=impl
        )
    elif op == "vtrace":
        f = lambda r, v, v5, v1, done, boot: rlscan_jax.vtrace(
            r, v, v1, terminated=done, bootstrap_value=boot, time_axis=axis, implementation=impl
        )
    elif op == "retrace":
        f = lambda r, v, v5, v1, done, boot: rlscan_jax.retrace(
            r, v, v5, v1, terminated=done, time_axis=axis, implementation=impl
        )
    elif op == "eligibility_traces":
        f = lambda r, done: rlscan_jax.eligibility_traces(
            r, done, gamma=0.99, lambda_=0.9, time_axis=axis, implementation=impl
        )
    else:
        f = lambda r, done: rlscan_jax.discounted_returns(r, terminated=done, time_axis=axis, implementation=impl)
    specs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args]
    compiled = jax.jit(f).lower(*specs).compile()
    return lambda: compiled(*args)


@contextlib.contextmanager
def gpu_lock():
    """Exclusive use of the GPU among the tune processes sharing TUNE_LOCK (none without it)."""
    path = os.environ.get("TUNE_LOCK")
    if not path:
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _selected(cfg, mode):
    if mode == "columns":
        return not cfg or any(k.startswith("COLUMN") for k in cfg)
    if mode == "vector":
        keys = ("VEC_BATCH_MAJOR", "SINGLE_ROW_BATCH_MAJOR", "VECTOR_SPLIT_ELEMS", "FOLD_CARRY_ELEMS")
        return not cfg or any(k in cfg for k in keys)
    if mode == "carry":
        return not cfg or any(k.startswith("CARRY_") for k in cfg) or "FOLD_CARRY_ELEMS" in cfg
    if mode == "vec8":
        return not cfg or cfg.get("VEC_BATCH_MAJOR") == 8
    if mode == "segments":
        return not cfg or cfg in SEGMENTS
    if mode == "combos":
        return not cfg or cfg in COMBOS
    if mode == "cvec":
        return not cfg or cfg in CVEC
    if mode == "narrow":
        return not cfg or cfg in NARROW
    if mode == "fill":
        return not cfg or cfg in FILL
    if mode == "tm128":
        return (
            not cfg
            or cfg in TM128
            or cfg
            in (
                {"MAX_WARPS": 16},
                {"MAX_WARPS_TIME_MAJOR": 8},
                {"FILL_WARPS": 1 << 30},
                {"BLOCK_ELEMS": 2048},
                {"BLOCK_ELEMS": 512},
                {"COLUMN_MIN_T": 1, "COLUMN_BT": 8},
            )
        )
    if mode == "blocks16":
        return not cfg or cfg in BLOCKS16
    if mode == "fence":
        return cfg in ({}, {"VECTOR_SPLIT_ELEMS": 0}, {"LOOKBACK_FOLD": 1000}) or "LOOKBACK_FENCE" in cfg
    return True


def _shape_selected(shape, axis, mode):
    if _ONLY and f"{'x'.join(map(str, shape))}@{axis}" not in _ONLY:
        return False
    time_major = axis == 0 and len(shape) > 1
    if mode == "time_major":
        return time_major
    if mode in ("columns", "carry", "cvec"):
        return time_major and shape[0] >= 256
    if mode == "fill":  # the splits of few blocks (run 15's shapes)
        return shape in ((4096, 4), (16384, 4), (65536,), (262144,), (64, 2048), (8192, 16), (32768, 2), (131072, 8))
    if mode == "blocks16":  # batch-major rows of 128-1024 steps, scanned whole
        return axis == 1 and len(shape) == 2 and 128 <= shape[1] <= 1024
    if mode == "tm128":  # time-major rows of up to 128 steps, scanned whole
        return time_major and shape[0] <= 128 and shape[1] >= 4096
    if mode == "narrow":  # few columns time-major, and the long rows of few blocks
        return (time_major and shape[1] % 16 != 0) or len(shape) == 1 or (axis == 1 and shape[0] <= 8)
    if mode == "vector":
        return (axis == 1 and shape[1] % 4 == 0) or len(shape) == 1
    if mode == "vec8":
        return axis == 1 and shape[1] % 8 == 0 and shape[1] >= 128
    if mode in ("segments", "combos"):  # the rows that split in three launches: time-major 256+ steps, long rows
        return (time_major and shape[0] >= 256) or len(shape) == 1 or shape[-1] >= 131072
    return True


def configure(cfg):
    for name, value in {**SHIPPED, **cfg}.items():
        setattr(launch, name, value)
    jax.clear_caches()
    batching.launcher.cache_clear()
    ops._op.cache_clear()


def main(out, ops_=("gae",), mode=None):
    with gpu_lock():
        x = jnp.ones((1 << 29,), jnp.float32)
        cp = jax.jit(lambda x: x * 1.0000001)
        jax.block_until_ready(cp(x))
        s = devicetime.run([devicetime.Job("copy", lambda: cp(x), windows=5)])
        flush = devicetime.cache_flush(256 << 20)  # before each window: inputs from DRAM, not L2
    copy_us = float(np.median(devicetime.per_call_us(s.windows["copy"], 1)[0]))
    bw = 2 * x.nbytes / copy_us / 1e3
    print(f"copy {bw:.0f} GB/s", flush=True)
    env = environment()  # the device, versions and date of the run, for the output
    records = []
    for op in ops_:
        for shape, axis in SHAPES:
            if not _shape_selected(shape, axis, mode):
                continue
            with gpu_lock():
                args, nbytes = inputs(op, shape, axis)
                jax.block_until_ready(args)
            ref_fn = make(op, args, axis, "associative")
            fns, seen = [], {}
            for cfg in [c for c in CONFIGS if _selected(c, mode)]:
                configure(cfg)
                g = launch.geometry(shape, axis % len(shape))  # after configure: it reads the constants too
                narrow = launch.narrow_rows(g, args)
                wide = launch.wide_blocks(KERNEL[op], g, narrow)
                p = launch.plan(g, *PLAN_ARGS.get(op, lambda: (None, None, 0))(), narrow, op, block_elems=wide)
                split = p.nseg > 1 and not p.lookback  # PHASE 1 and 2
                # the launch differs in the vector hint and the carry chain too (KC < 0: the
                # two-launch split, folding -KC composites a round; else carry_kernel's segments
                # a round, rows a block and warps)
                p = (
                    p,
                    launch.vector_width(g, p, narrow),
                    -launch.fold_rounds(p)
                    or (
                        (*launch.carry_blocks(p.nseg, g.N), launch.CARRY_WARPS) if p.nseg > 1 and not p.lookback else 0
                    ),
                    g.layout,
                    p.lookback and launch.LOOKBACK_FENCE,
                    split and KERNEL[op] in launch.SUMMARY_WALK_BACK and p.cps > 1,
                    split and launch.STREAM_STORES,
                )
                if p in seen:
                    continue
                try:
                    fn = make(op, args, axis, "triton")
                except Exception as e:  # a compiler failure is a result too
                    print(f"{op} {shape} ax{axis} {cfg}: FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
                    continue
                seen[p] = cfg
                fns.append(fn)
            with gpu_lock():
                ref = jax.tree.leaves(ref_fn())
                errs = []
                for fn in fns:
                    got = jax.tree.leaves(fn())
                    errs.append(max(_error(a, b) for a, b in zip(got, ref)))
                jobs = [devicetime.Job(str(i), fn, windows=7) for i, fn in enumerate(fns)]
                s = devicetime.run(jobs, before_window=flush)
            shape_recs = []
            for job, err, ((p, vec, kc, layout, fence, back, stream), cfg) in zip(jobs, errs, seen.items()):
                samples, nev = devicetime.per_call_us(s.windows[job.name], 1)
                us = float(np.median(samples))
                frac = nbytes / (us * 1e-6) / (bw * 1e9)
                plan = {**p._asdict(), "VEC": vec, "KC": kc, "LAYOUT": layout, "FENCE": fence}
                plan.update(WALK_BACK=back, STREAM=stream)
                shape_recs.append(
                    dict(op=op, shape=shape, axis=axis, cfg=cfg, plan=plan, us=us, frac=frac, err=err, events=nev)
                    | {"dtype": str(args[0].dtype)}
                )
            records += shape_recs
            for r in shape_recs:
                print(f"    {r['cfg']} {r['plan']} {r['us']:.1f}us err {r['err']:.1e}", flush=True)
            ok = [r for r in shape_recs if r["err"] < TOLERANCE]
            best = min(ok, key=lambda r: r["us"])
            print(
                f"{op} {shape} ax{axis}: {len(shape_recs)} plans, best {best['cfg']} {best['plan']} "
                f"{best['us']:.1f}us {100 * best['frac']:.0f}%; shipped {shape_recs[0]['us']:.1f}us; "
                f"worst {max(r['us'] for r in shape_recs):.1f}us; bad {len(shape_recs) - len(ok)}",
                flush=True,
            )
            with open(out, "w") as f:  # after every shape: a run cut short keeps what it measured
                json.dump({**env, "argv": sys.argv[1:], "copy_bw_gbps": bw, "records": records}, f)


def summary(paths):
    """One line per (op, shape): the shipped plan's time and the best one's, from tune outputs."""
    for path in paths:
        with open(path) as f:
            d = json.load(f)
        print(f"{path}: copy {d['copy_bw_gbps']:.0f} GB/s, {d['device']}, {d['date']}")
        by = {}
        for r in d["records"]:
            by.setdefault((r["op"], tuple(r["shape"]), r["axis"]), []).append(r)
        for (op, shape, axis), rs in by.items():
            ok = [r for r in rs if r["err"] < tolerance(r.get("dtype", "float32"))]
            best = min(ok, key=lambda r: r["us"]) if ok else None
            name = f"{op} {'x'.join(map(str, shape))} ax{axis}"
            if best is None:
                print(f"  {name:34s} no plan within tolerance")
                continue
            print(
                f"  {name:34s} shipped {rs[0]['us']:7.1f}  best {best['us']:7.1f} ({100 * best['frac']:3.0f}%)"
                f"  x{rs[0]['us'] / best['us']:.2f} {best['cfg']}"
            )


if __name__ == "__main__" and sys.argv[1] == "--summary":
    summary(sys.argv[2:])
elif __name__ == "__main__":
    main(
        sys.argv[1],
        tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else ("gae",),
        sys.argv[3] if len(sys.argv) > 3 else None,
    )
