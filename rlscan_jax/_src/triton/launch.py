"""Launching a Triton kernel from JAX: `jax_triton.triton_call` on a GPU, the interpreter on a CPU.

Kernel parameters are ordered inputs, then scalars, then outputs, with every constexpr passed
by keyword: with outputs after every input and scalar, jax-triton 0.3.x (outputs follow all
positional arguments) and 0.4.x (outputs fill the parameters left unfilled) bind alike.

With TRITON_INTERPRET=1 set before import, the same kernel source runs on the CPU inside a
`jax.pure_callback`, on NumPy buffers, so CI exercises the kernels without a GPU.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from rlscan_jax._src import dispatch
from rlscan_jax._src.triton import custom_call

# Triton dtypes of the NumPy buffers handed to the interpreter.
_TL_DTYPES = {
    "float64": "float64",
    "float32": "float32",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "bool": "int1",
    "int8": "int8",
    "uint8": "uint8",
    "int16": "int16",
    "uint16": "uint16",
    "int32": "int32",
    "uint32": "uint32",
    "int64": "int64",
    "uint64": "uint64",
}


class _HostBuffer:
    """A NumPy buffer as the interpreter sees a tensor: a data pointer and a Triton dtype."""

    def __init__(self, array: np.ndarray):
        import triton.language as tl

        self.array = array
        self.dtype = getattr(tl, _TL_DTYPES[array.dtype.name])

    def data_ptr(self) -> int:
        return self.array.ctypes.data


@contextlib.contextmanager
def _host_buffers():
    """The interpreter copies device tensors to the host and back; ours already are host memory."""
    from triton.runtime import interpreter

    executor = interpreter.GridExecutor
    saved = executor._init_args_hst, executor._restore_args_dev
    executor._init_args_hst = lambda self, args, kwargs: (args, kwargs)
    executor._restore_args_dev = lambda self, *args: None
    try:
        yield
    finally:
        executor._init_args_hst, executor._restore_args_dev = saved


def _interpret(kernel, grid, args, out_shapes, constexprs):
    arrays = [a for a in args if isinstance(a, jax.Array)]

    def host(*host_arrays):
        it = iter(host_arrays)
        bufs = [np.ascontiguousarray(next(it)) if isinstance(a, jax.Array) else a for a in args]
        outs = [np.zeros(s.shape, s.dtype) for s in out_shapes]
        call_args = [_HostBuffer(b) if isinstance(b, np.ndarray) else b for b in bufs]
        call_args += [_HostBuffer(o) for o in outs]
        with _host_buffers():
            kernel[grid](*call_args, **constexprs)
        return outs

    return jax.pure_callback(host, list(out_shapes), *arrays, vmap_method="sequential")


# Set (e.g. to 90) to lower for a GPU that is not present: jax-triton then compiles for that
# compute capability instead of asking the local device (cross-lowering checks on a CPU host).
COMPUTE_CAPABILITY: int | None = None

# Lower every kernel launch to jaxlib's typed-FFI custom call (`custom_call.py`), also under
# jax-triton 0.3.x, whose own lowering is the legacy custom call. False keeps jax-triton's own.
FFI_CUSTOM_CALL = True


def call(
    kernel,
    *,
    grid: tuple[int, ...],
    args: Sequence,
    out_shapes: Sequence[jax.ShapeDtypeStruct],
    num_warps: int = 4,
    zeroed: Sequence[int] = (),
    **constexprs,
) -> list[jax.Array]:
    """Runs `kernel` on `grid` with inputs and scalars `args`, returning the outputs.

    The outputs numbered in `zeroed` are zero when the kernel starts (the interpreter's always are).
    """
    if dispatch.interpret_mode():
        if constexprs.get("FENCE"):  # no inline PTX in the interpreter: PHASE 3's acquire RMWs
            constexprs = {**constexprs, "FENCE": False}
        return list(_interpret(kernel, grid, args, out_shapes, constexprs))
    import jax_triton as jt

    # 0.4.x names the outputs out_type= (out_shape= is deprecated there); 0.3.x knows only out_shape=.
    out_kw = "out_type" if "out_type" in inspect.signature(jt.triton_call).parameters else "out_shape"
    extra = {out_kw: list(out_shapes)}
    if zeroed:
        extra["zeroed_outputs"] = tuple(zeroed)
    target = custom_call.target_name(FFI_CUSTOM_CALL)
    if target is not None:
        extra["custom_call_target_name"] = target
    with warnings.catch_warnings():
        # 0.4.x deprecates zeroed_outputs in favour of Ref arguments, which 0.3.x does not have.
        warnings.simplefilter("ignore", DeprecationWarning)
        outs = jt.triton_call(
            *args,
            kernel=kernel,
            grid=grid,
            num_warps=num_warps,
            num_stages=1,
            compute_capability=COMPUTE_CAPABILITY,
            enable_fp_fusion=True,  # jax-triton's default (0.3, 0.4), said here: compile_options
            **extra,
            **constexprs,
        )
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]


def compile_options(num_warps: int, constexprs: dict) -> dict:
    """triton's compile options for a launch as `call` makes it: num_warps, maxnreg where the
    launch caps registers (custom_call.MAX_REGISTERS_PARAM > 0), and floating-point fusion on (a·b + c
    free to become one fma), as `call` asks jax-triton (also its default, 0.3 and 0.4). For
    compiling variants ahead of time (tests, kernel_resources) as the GPU compiles them: left
    unset, fusion would follow triton's own default, which triton 3.9 says turns off in 3.10."""
    cap = constexprs.get(custom_call.MAX_REGISTERS_PARAM, 0)
    return {"num_warps": num_warps, "enable_fp_fusion": True, **({"maxnreg": cap} if cap else {})}


class SegmentSums(NamedTuple):
    """An output slot of one value a row for each segment of the launch's plan (the kernels'
    i_s: one for rows scanned whole, a row's segments or chunks where the plan splits it), [nseg · N]
    flat; scan_call gives it its size, `sum_segments` sums it to [N]."""

    dtype: Any


def sum_segments(v: jax.Array, n: int) -> jax.Array:
    """A SegmentSums output summed over the segments: one value a row, [n]."""
    return jnp.sum(v.reshape(-1, n), axis=0) if n else jnp.zeros((0,), v.dtype)


def param_slot(mode: int, shape: tuple[int, ...], dtype):
    """The output slot of a parameter's gradient a kernel writes in `mode`: 0 not written, 1 one a
    step (an array of `shape`), 2 one value a row for each segment of the plan (SegmentSums)."""
    if mode == 2:
        return SegmentSums(dtype)
    return out(shape, dtype) if mode else placeholder()


def placeholder() -> jax.ShapeDtypeStruct:
    """An output slot a kernel variant does not write (one byte)."""
    return jax.ShapeDtypeStruct((1,), jnp.int8)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def next_pow2(x: int) -> int:
    return 1 << max(0, math.ceil(math.log2(max(1, x))))


# Launch geometry, chosen by measurement on an H200 (tests/gpu_runs/tune.py; the results and
# the choice are in tests/gpu_runs/tune_h200.md). A program scans a [BT, BB] block:
# - time-major rows longer than MAX_BT_TIME_MAJOR, at least COLUMN_MIN_N of them, take column
#   blocks (COLUMNS_TIME_MAJOR, below) and the three-launch split; otherwise:
# - rows that fit one block (T <= MAX_BT batch-major, T <= MAX_BT_TIME_MAJOR time-major) are
#   scanned whole, several rows per program, BLOCK_ELEMS elements per block (at least
#   MIN_ROWS_TIME_MAJOR_WHOLE rows time-major, for coalesced loads, MIN_ROWS_TIME_MAJOR_WHOLE_MANY
#   from MANY_ROWS_TIME_MAJOR rows on);
# - batch-major rows of up to MAX_BT_WHOLE_ROWS steps, when there are at least MIN_ROWS_WHOLE
#   of them, are scanned whole, one row per program (no split);
# - longer rows are split one chunk per program (PHASE 3's look-back) in blocks of
#   SPLIT_BLOCK_ELEMS: batch-major SPLIT_ROWS_BATCH_MAJOR rows, time-major up to
#   MIN_ROWS_TIME_MAJOR rows and at least SPLIT_BT_TIME_MAJOR steps (SPLIT_BLOCK_ELEMS_FEW_ROWS
#   with 8 to MIN_ROWS_TIME_MAJOR - 1 rows, where the look-back's fold stays within MAX_FOLD_ELEMS);
# - where a row has more chunks than LOOKBACK_FOLD · BT (the look-back's fold would cost more
#   than the block itself), or a time-major block has more than LOOKBACK_MAX_ROWS_TIME_MAJOR
#   rows, the three-launch split runs instead, with BLOCK_ELEMS blocks (time-major:
#   ROWS_TIME_MAJOR_THREE_LAUNCH rows), enough segments for TARGET_PROGRAMS programs;
# - long batch-major rows that load as vectors (single rows included: SINGLE_ROW_BATCH_MAJOR)
#   take the three-launch split too, vectorised, in blocks of VECTOR_SPLIT_ELEMS.
BLOCK_ELEMS = 1024
SPLIT_BLOCK_ELEMS = 4096
MAX_BT = 1024
MAX_BT_TIME_MAJOR = 128
MIN_ROWS_TIME_MAJOR = 32
SPLIT_ROWS_BATCH_MAJOR = 4
SPLIT_BT_TIME_MAJOR = 64
MAX_BT_WHOLE_ROWS = 4096
MIN_ROWS_WHOLE = 512
LOOKBACK_FOLD = 0.5
TARGET_PROGRAMS = 528
THREADS_PER_ELEM = 1 / 4  # 4 elements per thread, at most MAX_WARPS warps
MAX_WARPS = 8
MIN_ROWS_TIME_MAJOR_WHOLE = 16
# ... and from MANY_ROWS_TIME_MAJOR rows on, MIN_ROWS_TIME_MAJOR_WHOLE_MANY, except for the ops in
# MANY_ROWS_TIME_MAJOR_EXCEPT: at 4096 and 16384 columns of 128 steps, [128, 8] blocks (8 warps)
# against [128, 16], float32 and bfloat16 (tune_h200.md, run 16): 1.02-1.30x in the tune runs for
# five ops; in the benchmark at 16384x128, both plans in one run, GAE 1.16-1.18x, Retrace
# 1.20-1.41x, eligibility traces 1.07-1.20x, episodic sums 1.02-1.17x, the returns 0.98-1.06x,
# V-trace 0.87-0.89x (so it keeps [128, 16]). Fewer columns were not measured.
MANY_ROWS_TIME_MAJOR = 4096
MIN_ROWS_TIME_MAJOR_WHOLE_MANY = 8
MANY_ROWS_TIME_MAJOR_EXCEPT = ("vtrace",)
ROWS_TIME_MAJOR_THREE_LAUNCH = 64
SPLIT_BLOCK_ELEMS_FEW_ROWS = 8192
MAX_FOLD_ELEMS = 2048  # KP · BB of the look-back folds compiled and GPU-tested so far
LOOKBACK_MAX_ROWS_TIME_MAJOR = 16
# Batch-major rows whose length is a multiple of 4, in blocks of at least VEC_MIN_BT steps: the
# kernels keep the rows ascending and tell the compiler that each row starts on a multiple of VEC,
# the widest power of two from VEC_BATCH_MAJOR down to 4 that divides the row (1 turns this off),
# so a thread loads VEC consecutive steps with vector instructions. In the look-back (PHASE 3) only
# with VECTOR_LOOKBACK: triton 3.6 failed to compile those variants (an assertion in its scan
# lowering) until reverse scans ran in vector order (fa0ae1d).
# Measured in tests/gpu_runs/tune_h200.md: run 6, VEC 4 1.1-3.9x faster in blocks of 128 to 4096
# steps, slower in blocks of 16 (65536x16); run 9, VEC 8 (two 16-byte loads of float32) 1.04-1.12x
# faster again for rows of 4096 steps and 8x131072, within 2 % elsewhere.
VEC_BATCH_MAJOR = 8
VEC_MIN_BT = 128
# vector_width: in blocks of several rows, VEC at most the steps a thread holds (run 21).
VEC_THREAD_STEPS = True
# Batch-major blocks of one row of up to MAX_BT steps ([1024, 1] at BLOCK_ELEMS) for these ops,
# forward and adjoint: ONE_ROW_BLOCK_WARPS warps (8 steps a thread) instead of MAX_WARPS = 8 (4 steps
# a thread). tune_h200.md, run 22c: at 4096x1024 batch-major, MAX_WARPS 4 against 8 for every
# launch (benchmark, one call): forward 0.85-1.17x, the returns' 0.85-0.98x; rows of 4096 steps
# 0.68-1.00x. This table against HEAD, another call, twice: these ops 1.00-1.24x (median 1.04;
# V-trace bfloat16 forward 23.2 -> 18.6 us, fwd+bwd of float32 traces and episodic sums 1.13x), the
# returns 0.99-1.01x.
ONE_ROW_BLOCK_WARPS = 4
ONE_ROW_BLOCK_OPS = ("gae", "vtrace", "retrace", "eligibility_traces", "episodic_cumsum", "linear_scan")
# Kernels that take ONE_ROW_BLOCK_WARPS in blocks of one row for every op that launches them: the
# returns' adjoint (GAE's has them already), while their forward keeps MAX_WARPS (run 22c: the
# forward at 4 warps 0.85-0.98x). ab_caps.sh on the H200 (2026-12-05, tune_h200.md run 25),
# batch-major 4096x1024 fwd+bwd: lambda and discounted returns 1.03-1.04x (float32) and
# 1.09-1.13x (bfloat16) faster; at 16384x512 1.00-1.01x.
ONE_ROW_BLOCK_KERNELS: tuple[str, ...] = ("adjoint_kernel",)
# The same for rows whose floating per-step inputs are all 16-bit (bf16, fp16; narrow_rows), whose
# steps are half the bytes: VEC 8 loads 8 bf16 steps with one ld.global.v4. Run 9 (benchmark,
# bfloat16 forward, eight ops): VEC 8 1.04-1.53x faster than 4 for rows of 4096 steps, within 1 %
# for rows of 512 and 1024; VEC 16 no faster than 8 (Retrace 1.1x slower).
VEC_BATCH_MAJOR_16BIT = 8
# Batch-major rows of 16-bit inputs (narrow_rows) from the kernel's least steps up to MAX_BT
# (rows that load as vectors, VEC_MIN_BT steps or more) are scanned whole in blocks of
# BLOCK_ELEMS_16BIT[kernel] = (elements, least steps) instead of BLOCK_ELEMS: at BLOCK_ELEMS' 4 steps
# a thread (THREADS_PER_ELEM), a thread loads 8 bytes of bfloat16 (ld.global.v2.b32 in sm_90 PTX)
# where float32 loads 16; in blocks of 2048 at MAX_WARPS it holds 8 steps, one 16-byte load. The
# adjoints that launch linear_kernel (eligibility traces', episodic sums') take it too.
# tune_h200.md, run 19, bfloat16, the benchmark at 4096x128 / 16384x128 / 4096x1024 / 16384x512, both plans in one run:
# linear_kernel (eligibility traces, episodic sums, linear_scan) 1.01-1.03 / 1.05-1.11 / 1.28-1.31
# / 1.23-1.29x faster (fwd+bwd 1.00-1.22x); returns_kernel (discounted and λ-returns) 1.14 and
# 1.16-1.17x at 1024 and 512 steps (fwd+bwd 1.07-1.10x), but 0.93-0.95x at 4096x128 and 0.89-1.03x
# at 16384x128, so from 512 steps on. GAE, V-trace and Retrace (tune.py blocks16) 1.06-1.36x
# slower: bound by L1/TEX and issue in bfloat16 (Nsight Compute, GAE 16384x512: 87 % and 75 %,
# DRAM 59 %), they keep BLOCK_ELEMS. float32 0.96-1.03x for the two (tune.py), not changed.
BLOCK_ELEMS_16BIT = {"linear_kernel": (2048, 128), "returns_kernel": (2048, 512)}
# Long batch-major rows that can load as vectors (where PHASE 3's look-back would take them) split
# in three launches instead, vectorised, in blocks of VECTOR_SPLIT_ELEMS elements (a launcher may
# ask for another size, or 0: the look-back). Measured in tune_h200.md, run 7: 1.06-1.30x faster
# than the look-back at 8x131072 for four ops (then in blocks of 4096); run 11b, with carry_kernel
# chaining up to 512 segments in one round trip: blocks of 2048 (twice the segments) 1.07-1.18x
# faster than 4096 at 8x131072 for five ops, 1.01-1.09x at 1x1048576.
VECTOR_SPLIT_ELEMS = 2048
# With VECTOR_LOOKBACK, those rows (the launcher asking for no other split) take PHASE 3's look-back
# where the plan allows it, loading as vectors: one launch that reads the inputs once. Measured
# against the split (tune_h200.md, run 23a: 8x131072 and 1x1048576, seven ops, both dtypes): device
# time 0.80-1.11x (median 0.94; in [2048, 1] blocks 0.58-0.95x), in-jit forward 1.01-1.92x but
# fwd+bwd 0.76-1.07x. Off.
VECTOR_LOOKBACK = False
# A single row ([T], or every batch axis of size 1) is the same memory in either layout; with
# SINGLE_ROW_BATCH_MAJOR it is planned as batch-major, where it takes that vectorised split (run 7:
# 1.15-1.86x faster than the look-back over [4096, 1] blocks at 1x1048576, every op).
SINGLE_ROW_BATCH_MAJOR = True
# Time-major blocks (other than column blocks) of more than 2048 elements get up to this many warps
# where their launch at MAX_WARPS would not fill the GPU (fewer than FILL_WARPS warps in all):
# run 7 measured [128, 16] blocks at 16 warps 1.07-1.37x faster for five ops at 4096 rows (256
# programs) and the look-back's [1024, 8] 1.19-1.34x for three, within 2 % for two (128 programs),
# but 16384 rows of 128 steps (1024 programs) slower for six of eight ops, V-trace 1.6x in-jit.
MAX_WARPS_TIME_MAJOR = 16
FILL_WARPS = 132 * 32  # an H200's SMs at half their 64 resident warps
# carry_kernel: CARRY_SEGMENTS segments' carries chained at a time (one memory round trip for each
# group), in blocks of CARRY_BLOCK_ROWS rows at CARRY_WARPS warps a program. Nsight Compute on GAE
# 4096x1024 time-major (tune_h200.md, run 8) found 5.8 us of its 48.7 there, 16 programs of 256
# rows at 6 % occupancy; run 9 measured 32 rows at one warp, 32 segments a round, the best or
# within 2 % of it at every shape for five ops (the whole call 1.0-1.35x faster than 256 rows,
# 4 warps, 16 segments: most at rows of 4096 steps, least at 16384 rows of 512).
CARRY_SEGMENTS = 32
CARRY_BLOCK_ROWS = 32
CARRY_WARPS = 1
# Rows of more segments than CARRY_SEGMENTS: all of them in one round trip, up to
# CARRY_LONG_SEGMENTS, in blocks of CARRY_LONG_BLOCK_ROWS rows (one row a block where there are
# fewer than CARRY_FEW_ROWS rows). Nsight Compute on GAE 1024x4096 time-major (tune_h200.md, run 10)
# found carry_kernel 8.9 us of 52 there, 32 programs at 2 % occupancy chaining 128 segments in four
# dependent rounds; run 10b measured 128 segments a round in blocks of 4 rows the whole call
# 1.07-1.18x faster at the rows of 128 segments, but 0.88-0.99x at rows of 16 or 32 segments
# (padding). Run 11a/b: blocks of 2 rows 1.03-1.06x faster than 4 at 512 rows of 4096 steps (then
# 256 segments, COLUMN_MAX_SEGMENTS), one row a block 1.03-1.05x faster than 2 at 8 rows of 131072.
CARRY_LONG_SEGMENTS = 512
CARRY_LONG_BLOCK_ROWS = 2
CARRY_FEW_ROWS = 64
# The two-launch split: where a three-launch split's blocks of BB rows times its segments come to
# at most FOLD_CARRY_ELEMS, PHASE 2 folds the composites of the segments before its own itself
# (common.init_carry's FOLD, FOLD_CARRY_ROUND elements a round) and carry_kernel does not run: one
# launch fewer, which in-jit time pays for (tune_h200.md, run 7: the vectorised split of long
# rows cost the light ops up to 1.7x in-jit time). 0: off. Run 14: single rows of 2^20 steps (one
# block of a row, 512 segments) 1.03-1.14x faster in float32 for five ops, bfloat16 alike but V-trace
# 0.97x (the benchmark grid's 1 x 1048576 rows: 1.01-1.13x forward); blocks of 4 rows x 256 segments
# (8 x 131072 batch-major) 0.81-0.94x, the column blocks' 256 x 16-32 segments mixed (run 9).
FOLD_CARRY_ELEMS = 512
FOLD_CARRY_ROUND = 256
# The three-launch split reads its inputs twice, and at 2^22 elements GAE's inputs (36 MB) come
# close to an H200's 50 MB L2. PHASE 1 of the kernels named in SUMMARY_WALK_BACK walks each
# segment's chunks against scan order, so the chunks it reads last are a segment's first, which
# PHASE 2 reads first; with STREAM_STORES, PHASE 2 writes its outputs with streaming stores
# (st.global.cs, first out of the L2), so they do not push those inputs out before PHASE 2 reads
# them. tune_h200.md, run 11b: walking back 1.00-1.08x faster for GAE, V-trace and Retrace at
# time-major rows of 512 to 4096 steps, but discounted returns 1.13-1.34x slower and eligibility
# traces within 2 % (inputs of 5 bytes a step, which fit the L2 either way): their kernels are not
# in the table. Streaming stores 0.99-1.06x for every op.
SUMMARY_WALK_BACK = ("gae_kernel", "vtrace_kernel", "retrace_kernel")
STREAM_STORES = True
# Column blocks for time-major rows of at least COLUMN_MIN_T steps and COLUMN_MIN_N rows (off
# while COLUMNS_TIME_MAJOR is 0; chosen in tests/gpu_runs/tune_h200.md, run 5): a block of up to
# COLUMNS_TIME_MAJOR columns and COLUMN_BT steps, one warp for every 32 columns, so each thread
# holds whole columns and the scan along time needs neither shared memory nor shuffles (the
# other time-major blocks spread a column over several threads and warps). Rows split by the
# three-launch split into segments of COLUMN_SEGMENT_CHUNKS chunks, more where that gives fewer
# than COLUMN_TARGET_PROGRAMS programs, at most COLUMN_MAX_SEGMENTS a row (carry_kernel chains
# the segments' carries in turn; run 11: 256 rather than 128 segments 1.09-1.18x faster at 512
# rows of 4096 steps, with carry blocks of 2 rows).
COLUMNS_TIME_MAJOR = 256
COLUMN_BT = 4
COLUMN_MIN_T = MAX_BT_TIME_MAJOR + 1
COLUMN_MIN_N = 32
COLUMN_SEGMENT_CHUNKS = 8
COLUMN_TARGET_PROGRAMS = 528
COLUMN_MAX_SEGMENTS = 256
# Vector loads across columns (the kernels' CVEC), by op: where N is a multiple of an op's
# COLUMN_VEC entry (COLUMN_VEC_16BIT for rows of 16-bit inputs, narrow_rows), a column-block thread
# holds that many neighbouring columns and loads them with one instruction, at one warp for every
# 32 · CVEC columns; an op not named keeps 1. tune_h200.md, run 13, 2 columns a thread: float32,
# 1.04-1.09x faster for Retrace and 1.01-1.05x for eligibility traces, where GAE (0.98-1.08x),
# discounted returns (0.99-1.03x) and V-trace (0.84-0.97x) are not; bfloat16, 1.05-1.27x for GAE,
# 1.10-1.17x Retrace, 1.02-1.08x discounted returns, 1.05-1.18x eligibility traces, V-trace
# 0.90-1.03x. Episodic sums (linear_kernel, as eligibility traces) measured 0.93-0.99x in float32
# and 0.96-1.12x in bfloat16 in the benchmark, so they keep 1. linear_scan (also every gradient's
# adjoint, in float32) and λ-returns (returns_kernel) follow their kernel's other op. 4 columns lost
# in float32 (0.62-1.02x), and in bfloat16 won less than 2 except for Retrace and V-trace
# at 16384 columns.
COLUMN_VEC = {"retrace": 2, "eligibility_traces": 2, "linear_scan": 2}
# Column blocks of rows of 16-bit inputs wider than COLUMNS_TIME_MAJOR, by op: tune_h200.md, run 13,
# 512-column blocks at 2 columns a thread (8 warps) for bfloat16 GAE 1.07-1.09x faster than 256
# (the shipped 2 columns a thread) at 4096x1024 and 1024x4096, even at 16384x512, 0.99x at 512x4096;
# for the other ops within -2 % to +5 % either way. The benchmark grid's rows after it (run 14's
# session): 1.04-1.06x at 4096x1024 and 1024x4096, 1.01x at the other two.
COLUMNS_TIME_MAJOR_16BIT = {"gae": 512}
COLUMN_VEC_16BIT = {
    "gae": 2,
    "retrace": 2,
    "lambda_returns": 2,
    "discounted_returns": 2,
    "eligibility_traces": 2,
    "linear_scan": 2,
}
# The adjoint scans' entry where it differs from their op's (the adjoint of episodic sums and
# eligibility traces launches linear_kernel under the forward op's name, adjoint._traces): columns a
# thread for rows of a 16-bit cotangent. tests/gpu_runs/README.md, thirty-ninth session (H100, bfloat16
# episodic sums, time-major, 2 columns in both directions against 1, two A/B pairs): the backward
# (fwd+bwd less fwd) 1.11-1.26x faster at 4096x1024, 1024x4096, 16384x512 and 512x4096, where the
# forward was 0.98-0.99x at three of them (as on the H200 in run 13, 0.96-0.97x) and 1.09x at
# 16384x512. So only the adjoint takes 2: against 1, fwd+bwd 1.06-1.13x faster at those shapes on
# an H100 (two A/B pairs). The H200 has not timed it.
ADJOINT_COLUMN_VEC_16BIT = {"episodic_cumsum": 2}
# Time-major rows that do not take column blocks, of N columns not a multiple of 16: a thread loads
# up to TIME_MAJOR_CVEC neighbouring columns with one instruction (the kernels' CVEC, the widest
# power of two up to it that divides N; 1 turns this off). Without it the compiler cannot prove a
# time row aligned and loads one element an instruction (8 x 131072 time-major): sm_90 PTX
# (triton 3.9) of GAE's [1024, 8] look-back block has 50 scalar 32-bit and 32 byte loads, and with
# CVEC 8 12 ld.global.v4 and 4 ld.global.v2. Such blocks of split rows take at most
# MAX_WARPS_TIME_MAJOR_CVEC warps (not MAX_WARPS_TIME_MAJOR's 16; rows scanned whole keep the rule
# run 7 measured), and the long rows of the ops in TIME_MAJOR_VECTOR_SPLIT take
# the vectorised three-launch split of batch-major rows (VECTOR_SPLIT_ELEMS) instead of the
# look-back. tune_h200.md, run 14 (8 x 131072 time-major, forward): CVEC 8 1.04-1.37x faster than
# before in float32 (GAE 32.8 -> 23.9 us), 8 warps rather than 16 another 1.04-1.24x (GAE 20.3,
# Retrace 31.8 -> 21.5, eligibility traces 24.4 -> 16.5), bfloat16 alike; V-trace 50.9 -> 27.3 in
# the split at 8 warps, where its look-back took 37.9; the split 1.14-1.24x slower for the other
# four. In the benchmark grid, those rows' device time 1.29-1.93x faster forward, 1.05-1.45x fwd+bwd.
TIME_MAJOR_CVEC = 8
# The same for N a multiple of 16, per kernel: kernel name -> the least steps of the time-major rows
# scanned whole (one block a row) that take it; kernels not named, and split rows of such N (unless
# TIME_MAJOR_CVEC_ALIGNED_SPLIT), keep CVEC 1. Such N were left out (run 14) on the belief that
# jax-triton tells the compiler which integer arguments are multiples of 16. jax-triton 0.3.1 does
# not: it specialises every scalar argument with alignment 0 (triton_lib.py, "alignments[i] = 0";
# triton's native_specialize_impl then gives "" where a Python int 16384 gets "D"), so such blocks
# load one element an instruction too. sm_90 PTX (triton 3.9, the fifty-first session), the
# benchmark's time-major rows scanned whole: every launch of the eight ops at 32768x8, 65536x16,
# 4096x128 and 16384x128, forward and adjoint, from 8-61 scalar loads to 1-12 ld.global.v4 and 0-9
# scalar. tune_h200.md, run 35 (an H100, device time, every kernel on against off, both dtypes and
# modes): GAE, λ- and discounted returns, Retrace and their adjoints 1.01-1.44x faster at all four
# shapes; V-trace's forward 0.91-0.96x at 8 steps (float32; bfloat16 0.95x) and 16 (float32), 1.06-1.55x
# at 128, its adjoint even at 8 steps and faster above (V-trace fwd+bwd 16384x128 1.30x float32, 1.44x
# bfloat16); linear_kernel and linear_adjoint_kernel (eligibility traces, episodic sums,
# linear_scan) 0.89-0.97x at 8 and 16 steps and even at 128, so they are left out.
TIME_MAJOR_CVEC_ALIGNED = {
    "gae_kernel": 1,
    "returns_kernel": 1,
    "retrace_kernel": 1,
    "vtrace_kernel": 128,
    "adjoint_kernel": 1,
    "retrace_adjoint_kernel": 1,
    "vtrace_adjoint_kernel": 1,
}
# Split rows of N a multiple of 16 (the look-back, the three-launch split; with column blocks from
# COLUMN_MIN_N columns, the benchmark has none) with TIME_MAJOR_CVEC_ALIGNED's kernels as well: not timed.
TIME_MAJOR_CVEC_ALIGNED_SPLIT = False
MAX_WARPS_TIME_MAJOR_CVEC = 8
TIME_MAJOR_VECTOR_SPLIT = ("vtrace",)
# Per kernel, the vectorised split of those time-major rows (CVEC > 1 and a split) at other warps
# and block sizes than MAX_WARPS_TIME_MAJOR_CVEC and the launcher's `vector_split`: kernel name ->
# warps, kernel name -> elements a block ({} as --launch values turns them off). tune_h200.md, run 33
# (8 x 131072 time-major, an H100, device time against the split at 8 warps): V-trace's forward
# [256, 8] blocks at 4 warps (2 steps a thread, in thread order) 1.04-1.08x forward and 1.02-1.03x
# fwd+bwd; its adjoint's at 4 warps too 0.99x fwd+bwd in float32; [512, 8] blocks 0.84-1.15x.
# The warps apply to blocks of at most THREAD_STEPS_MAX_COLUMNS columns (those in thread order), in
# splits of at least TIME_MAJOR_VECTOR_SPLIT_WARPS_MIN_PROGRAMS programs (row blocks times segments).
# Run 34 (an H100, against 8 warps): at 8 x 131072's 512 programs the forward at 4 warps won as
# above; at 128 programs (2 x 65536, 4 x 32768, 6 x 16384, 8 x 16384, 12 x 8192) it lost, 0.88-1.01x
# forward and 0.92-1.01x fwd+bwd: 4 warps a program there leave about 4 warps an SM.
TIME_MAJOR_VECTOR_SPLIT_WARPS: dict = {"vtrace_kernel": 4}
TIME_MAJOR_VECTOR_SPLIT_WARPS_MIN_PROGRAMS = 512
TIME_MAJOR_VECTOR_SPLIT_ELEMS: dict = {}
# Time-major rows split into chunks (the look-back, the three-launch split) in blocks of at most
# THREAD_STEPS_MAX_COLUMNS columns: the kernels take VEC up to THREAD_STEPS_TIME_MAJOR consecutive steps
# a thread, at most the rows a thread holds (BT·BB over the threads and their CVEC columns), the
# block's rows in thread order (common.thread_order; 1 turns this off). Triton gives a thread of a
# time-major block one step of CVEC columns, so scanning along time crossed lanes and warps for
# every element: sm_90 PTX of a minimal [1024, 8] scan at 8 warps has 320 shuffles and 504
# ld.shared; in thread order at 4 steps a thread, 280 and 192 (run 31's prototype of K sub-blocks:
# 200 and 156, block-local scans 1.34x faster at K = 4 on an H100). Run 32 (8 x 131072
# time-major, an H100, device time against 1): 1.03-1.24x forward, 1.26-1.59x fwd+bwd for the
# seven ops of the look-back (V-trace's split holds one row a thread: unchanged); 8 steps at 4
# warps (MAX_WARPS_TIME_MAJOR_CVEC) 0.63-0.96x against 4 at 8.
THREAD_STEPS_TIME_MAJOR = 4
THREAD_STEPS_MAX_COLUMNS = 16
# Time-major rows scanned whole (T <= MAX_BT_TIME_MAJOR, one pass) in blocks of at most
# THREAD_STEPS_MAX_COLUMNS columns: at most this many warps a block, and the rows in thread order
# like split rows (_thread_steps). 0 (shipped): such blocks keep THREADS_PER_ELEM's warps, where a
# [128, 8] block at 8 warps holds one step a thread (_thread_steps gives 1). Not yet timed.
WHOLE_ROW_THREAD_WARPS = 0
WARP_THREADS = 32  # _thread_steps' threads a warp (the interpreter's tests take 1: blocks of a few steps)
# Split rows of few blocks: where a split's programs (row blocks times chunks) would come to fewer
# than SPLIT_FILL_PROGRAMS, its blocks are halved along time until they do, down to blocks of
# SPLIT_FILL_MIN_ELEMS elements (0: off). Without it a row of 65536 steps split in 32 programs of
# 2048 and 4096 x 4 time-major in 4 programs of [1024, 4], on a GPU of 132 SMs; with fewer chunks
# the look-back's fold may no longer fit, and such rows then take the three-launch or two-launch
# split. tune_h200.md, run 15d (five ops, float32 and bfloat16, tune.py's 8 fill shapes): 1.05-3.7x
# faster at 2^14 to 2^17 elements (GAE 8192 x 16 time-major 27.3 -> 7.4 us, 4096 x 4 10.2 -> 5.0,
# a row of 65536 6.2 -> 5.0), the two worst 0.95x and 0.98x (eligibility traces in bfloat16), the
# two larger shapes unchanged; 256 programs or blocks of 512 within 1 % on average; no shape of the
# benchmark grid changes plan.
SPLIT_FILL_PROGRAMS = 128
SPLIT_FILL_MIN_ELEMS = 256
# PHASE 3 acquires the flags of the chunks before it with one fence after reading them (on a GPU;
# the interpreter has no inline PTX and keeps one acquire RMW a flag, as the GPU did before):
# tune_h200.md, run 8c, 1.5-5 % faster at 131072x8 time-major for five ops, 2-10 % for the
# look-back at 1x1048576.
LOOKBACK_FENCE = True
# The backward pass of the ops in ops.FUSED_BACKWARD as one fused launch (launchers/adjoint.py);
# False: the reference's vjp around the adjoint scan, as for the other ops (for an A/B in the
# benchmark: `--launch FUSED_BACKWARD=False`).
FUSED_BACKWARD = True
# γ's and λ's gradients of GAE, λ-returns, discounted returns, V-trace and Retrace summed inside
# their fused backward launch (GAMMA_GRAD, LAMBDA_GRAD), where a parameter is differentiated; False: the
# launch writes u, and XLA takes the parameters' gradients from it by the reference's vjp.
# tests/gpu_runs/README.md, fortieth session (H100, 4096x1024, fwd+bwd, two A/B pairs against
# 49b4cbe): 1.11-1.52x faster with γ and λ one value or one a row, 1.13-1.50x batch-major with them
# one a time step; time-major rows with them one a time step keep u (ops._param_grads_fused).
FUSED_PARAM_GRADS = True
# The same for eligibility traces (linear_kernel's DECAY_GRAD in their adjoint launch, the
# forty-fourth session), where no initial trace is given, for the layouts (Geometry.layout) named
# here; the others keep u and the reference's vjp. Timed on an H100 (tests/gpu_runs/README.md,
# forty-fifth session: 4096x1024, γ and λ one value, differentiated alone, two A/B pairs in one
# call): batch-major float32 45.5/45.9 -> 41.9/41.8 µs (1.09x); time-major float32 64.0/63.8 ->
# 70.0/70.2 µs (0.91x), bfloat16 71.8/72.2 -> 72.3/71.8 (1.00x). So batch-major rows only; layout 2
# (time between other axes) is untimed and keeps u. Time-major PHASE 2 holds 46 registers with
# the sums against 32 without; capping it (SPLIT_REGISTERS) at 40 or 32 was slower still, 75.7 and
# 78.8 µs against 69.8 uncapped and 63.9 off (forty-sixth session, H100).
FUSED_TRACE_PARAM_GRADS = (1,)
# The off-policy adjoints hold more registers than their forward passes (benchmarks.kernel_resources,
# sm_90, triton 3.9). V-trace's in [128, 16] time-major blocks: 158 a thread at 8 warps (8 warps
# resident an SM), 88 at 16. Its time-major rows scanned whole take VTRACE_ADJOINT_TIME_MAJOR_WARPS
# (0: the rule above): fwd+bwd at 16384x128 time-major, both plans in one run on an H200
# (2026-12-03), float32 166.2 -> 96.3 us, bfloat16 160.3 -> 89.0 (the reference's vjp around the
# linear scan took 106.7 in float32); at 4096x128 the fill rule already gives 16. Retrace's
# look-back over [1024, 8] blocks (time-major rows of 8 columns) spills 112 bytes at 255
# registers, and its fwd+bwd at 8x131072 took 78 us against 63 for the reference's vjp; in blocks
# of RETRACE_ADJOINT_FEW_ROWS_ELEMS ([512, 8]: 212 registers, no spill) instead (0:
# SPLIT_BLOCK_ELEMS_FEW_ROWS), as V-trace's forward pass (launchers/vtrace.PLAN): both in one run
# on an H200 (2026-12-03, twenty-first session), float32 78.3 -> 70.5 us, bfloat16 65.2 -> 59.2
# (in-jit 84.6 -> 74.1 and 52.1 -> 57.7). Its batch-major rows of 4096 steps scanned whole take
# 142 registers at 8 warps (triton 3.6, pointers declared aligned; 98 at 16), and its fwd+bwd at
# 1024x4096 was no faster than the reference's vjp (89.6 against 90.6 us):
# RETRACE_ADJOINT_WHOLE_ROW_WARPS (0: MAX_WARPS), for rows of float32 inputs only (narrow_rows:
# in one run, float32 81.8 against 88.8 us at 8 warps, bfloat16 58.0
# against 49.2). V-trace's adjoint in time-major column blocks: its PHASE 2 holds 71 registers a
# thread (64 with triton 3.9's ptxas), 37.5 % occupancy, and took 63.0 of fwd+bwd's 145.4 us at
# 4096x1024 under Nsight Compute (tune_h200.md, run 18b). VTRACE_ADJOINT_COLUMN_BT (0: COLUMN_BT)
# gives its column blocks their own steps a chunk; at 2 its PHASE 2 compiles to 40 registers
# (benchmarks.kernel_resources, triton 3.9), 75 % occupancy, but fwd+bwd at 4096x1024, 1024x4096,
# 16384x512 and 512x4096, both dtypes, both in one run (tune_h200.md, run 19c): 1.02-1.05x faster
# at six, 0.95-0.99x at the two of 512 rows. Not shipped.
VTRACE_ADJOINT_TIME_MAJOR_WARPS = 16
VTRACE_ADJOINT_COLUMN_BT = 0
RETRACE_ADJOINT_FEW_ROWS_ELEMS = 4096
RETRACE_ADJOINT_WHOLE_ROW_WARPS = 16
# Retrace's forward pass over batch-major rows of RETRACE_WHOLE_ROW_MIN_T to 4096 steps scanned
# whole (one [4096, 1] block a row): RETRACE_WHOLE_ROW_WARPS warps (0: MAX_WARPS), as V-trace's
# (launchers/vtrace.PLAN). tune_h200.md, run 23: 16 warps against 8, twice in one call, at 1024x4096
# and 512x4096, float32 and bfloat16: forward 1.00-1.14x device time, fwd+bwd 1.00-1.06x; at
# 1024x2048 ([2048, 1] blocks) 0.87-0.92x, so shorter rows keep MAX_WARPS. The other six ops lost
# at 16 warps in [4096, 1] blocks (0.74-1.03x, median 0.91).
RETRACE_WHOLE_ROW_WARPS = 16
RETRACE_WHOLE_ROW_MIN_T = 2049
# Registers a thread for batch-major rows scanned whole in blocks of one row ({kernel: {(block steps,
# warps): cap}}; triton's maxnreg, applied by custom_call's lowering rule through the kernels'
# MAXNREG constexpr; absent: no cap). V-trace's forward pass in [4096, 1] blocks (16 warps) holds 78
# registers a thread on the H200 (Nsight Compute, tune_h200.md run 23d): one block an SM, 25 %
# occupancy, 49 % of DRAM's rate at 1024x4096. Capped at 64, two blocks fit. Run 23e, one call,
# every 16-warp launch capped at 64 against none, at 1024x4096 and 512x4096: forward 1.17-1.35x
# device time, but the adjoint lost 0.60-0.96x (fwd+bwd), so only the forward. Run 23f, this form
# against none, twice in one call: forward 1.18-1.35x (float32 1024x4096 43.9 -> 35.5 us), fwd+bwd
# 1.05-1.11x. Run 24 (one call each, every cap against none, the capped plan run twice): Retrace's
# adjoint in [4096, 1] blocks at 16 warps (float32 rows, RETRACE_ADJOINT_WHOLE_ROW_WARPS) compiles
# to 98 registers, one block an SM, and to 64 capped, without spilling: fwd+bwd 1.13-1.16x
# (1024x4096 77.6 -> 67.3 us); its 8-warp blocks of bfloat16 rows capped at 128 0.99-1.02x, at 80
# 0.84-0.86x. V-trace's forward in [1024, 1] blocks (4 warps, 84 registers) capped at 64: forward
# 1.02-1.04x at 4096x1024 (three calls), fwd+bwd 1.00-1.02x; at 48 0.73-0.85x. Caps for the other
# kernels' whole rows (GAE, the returns, linear_kernel, Retrace's forward, the shared adjoints) at
# 1024x4096, 512x4096 and 4096x1024 gained nothing (0.95-1.06x) or lost (down to 0.52x).
ROW_REGISTERS: dict[str, dict[tuple[int, int], int]] = {
    "vtrace_kernel": {(4096, 16): 64, (1024, 4): 64},
    "retrace_adjoint_kernel": {(4096, 16): 64},
}


# Registers a thread for the passes of rows split in two or three launches ({kernel: {(PHASE 1 or
# 2, block steps, block rows, warps): cap}}; either layout, not float64; absent: no cap).
# V-trace's adjoint PHASE 2 in time-major column blocks ([4, 256], 8 warps) holds 71 registers (76
# in bfloat16), three blocks an SM: its 512 programs at 4096x1024, 1024x4096 and 512x4096 take 1.29
# waves, and it took 63.0 of fwd+bwd's 145.4 us at 4096x1024 under Nsight Compute (run 18b).
# Capped at 64 (8-16 B of spill), four blocks fit: 0.97 waves. In long rows' blocks ([512, 4],
# [2048, 1], [256, 8]) it holds 146-159 registers, one block an SM; at 128, two (0-68 B of spill).
# Compiled in tune_h200.md's "Prepared for the next GPU session: waves and register caps"; timed by
# tests/gpu_runs/ab_caps.sh on the H200 (2026-12-05, tune_h200.md run 25), V-trace fwd+bwd against no cap:
# time-major float32 1.08x faster at 4096x1024, 1024x4096, 512x4096 and 8x131072, bfloat16
# 1.01-1.05x; batch-major 8x131072 float32 1.10x; the other cases 0.98-1.02x.
SPLIT_REGISTERS: dict[str, dict[tuple[int, int, int, int], int]] = {
    "vtrace_adjoint_kernel": {(2, 4, 256, 8): 64, (2, 512, 4, 8): 128, (2, 2048, 1, 8): 128, (2, 256, 8, 8): 128},
}


class Geometry(NamedTuple):
    """A per-step array of shape (*outer, T, *inner) viewed as [OUTER, T, INNER] without a copy."""

    outer: int
    T: int
    inner: int
    layout: int  # 0 time-major (OUTER = 1), 1 batch-major (INNER = 1), 2 general

    @property
    def N(self) -> int:
        return self.outer * self.inner


# The kernels that read a parameter of form 2 (one value a step, shared by the rows: a [T] array) as
# form 4 in time-major launches: a [BT] vector loaded once a step and broadcast over the block's
# rows in registers, instead of a [BT, BB] block of T addresses (kernels/common.load_param).
# Measured at 4096x1024 float32 (benchmarks.param_forms, the vector load against the block load):
# - H200, tune_h200.md run 25b (2026-12-05): time-major forward 1.56x (discounted returns, 60.1 ->
#   38.6 us), 1.94x (lambda-returns), 1.12x (GAE), 1.10x (eligibility traces), 1.12x (linear_scan),
#   1.06x (V-trace); batch-major lost 0-14 % (V-trace fwd+bwd 94.7 -> 103.8 us): time-major only.
#   V-trace's adjoint lost there (fwd+bwd 156.6 -> 196.4 us), before its PHASE 2 was capped at 64
#   registers (SPLIT_REGISTERS): uncapped the vector load takes it to 80 registers, 1.29 waves.
# - H100 80GB HBM3, run 26 (2026-12-05, tests/gpu_runs/ab_step_vector.sh, one call): with the cap
#   V-trace's adjoint gains (fwd+bwd 195.0 -> 187.2 us), and so do Retrace's kernels (forward 70.8
#   -> 65.4 us; fwd+bwd 164.6 -> 154.3, 159.7 with the forward's alone); the six kernels above
#   1.02-1.70x forward. So every kernel that reads a parameter.
STEP_VECTOR_KERNELS = (
    "gae_kernel",
    "vtrace_kernel",
    "retrace_kernel",
    "returns_kernel",
    "linear_kernel",
    "adjoint_kernel",
    "linear_adjoint_kernel",
    "vtrace_adjoint_kernel",
    "retrace_adjoint_kernel",
)


def param_forms(name: str, layout: int, flags: dict) -> dict:
    """The parameter forms (the `*_FULL` constexprs) of kernel `name`'s launch in `layout`:
    launch.param's, with form 2 read as form 4 where STEP_VECTOR_KERNELS says."""
    if layout != 0 or name not in STEP_VECTOR_KERNELS:
        return {}
    return {k: 4 for k, v in flags.items() if k.endswith("_FULL") and v == 2}


def geometry(shape: tuple[int, ...], axis: int) -> Geometry:
    outer = math.prod(shape[:axis])
    inner = math.prod(shape[axis + 1 :])
    layout = 0 if outer == 1 else (1 if inner == 1 else 2)
    if SINGLE_ROW_BATCH_MAJOR and outer == inner == 1:
        layout = 1  # offsets n·T + t and t·N + n agree for the one row n = 0
    return Geometry(outer, shape[axis], inner, layout)


class Plan(NamedTuple):
    BT: int
    BB: int
    row_blocks: int
    nseg: int  # segments per row scanned in parallel (1: a single pass)
    cps: int  # chunks per segment
    big: bool  # int64 offsets
    num_warps: int
    lookback: bool  # one launch, one chunk per program (PHASE 3)
    cvec: int = 1  # columns a thread of a time-major block loads as a vector (COLUMN_VEC, TIME_MAJOR_CVEC)


def plan(
    g: Geometry,
    few_rows_elems: int | None = None,
    vector_split: int | None = None,
    whole_row_warps: int = 0,
    narrow: bool = False,
    op: str = "",
    time_major_warps: int = 0,
    column_bt: int = 0,
    block_elems: int = 0,
    kernel: str = "",
    column_vec: int = 0,
) -> Plan:
    """Block sizes and the split of long rows, by layout and shape (see the constants above).

    `few_rows_elems` replaces SPLIT_BLOCK_ELEMS_FEW_ROWS for a kernel that spills at that size.
    `vector_split` replaces VECTOR_SPLIT_ELEMS (0: vectorisable long rows take the look-back).
    `whole_row_warps` replaces MAX_WARPS for batch-major rows scanned whole, one a program.
    `time_major_warps` replaces the cap on warps for time-major rows scanned whole (T up to
    MAX_BT_TIME_MAJOR), for a kernel that holds too many registers at MAX_WARPS.
    `narrow`: the floating inputs are 16-bit (narrow_rows), for their vector width.
    `op`: the op launching, for its columns a thread (COLUMN_VEC).
    `column_bt` replaces COLUMN_BT, the steps a chunk of time-major column blocks.
    `block_elems` replaces BLOCK_ELEMS for batch-major rows of VEC_MIN_BT to MAX_BT steps that load
    as vectors (BLOCK_ELEMS_16BIT).
    `kernel`: the kernel's name, for ONE_ROW_BLOCK_KERNELS.
    `column_vec` replaces the op's COLUMN_VEC_16BIT entry for `narrow` rows (ADJOINT_COLUMN_VEC_16BIT).
    """
    if vector_split is None:
        vector_split = 0 if VECTOR_LOOKBACK else VECTOR_SPLIT_ELEMS
    tm_vector = op in TIME_MAJOR_VECTOR_SPLIT and _time_major_cvec(g, g.N, kernel, whole=False) > 1
    if tm_vector:
        vector_split = TIME_MAJOR_VECTOR_SPLIT_ELEMS.get(kernel, vector_split)
    vector_split = vector_split if _vector_rows(g, narrow) or tm_vector else 0
    T, N = g.T, g.N
    n2, t2 = next_pow2(N), next_pow2(T)
    max_warps = 0  # the cap's default (_plan)
    if g.layout == 0 and COLUMNS_TIME_MAJOR and N >= COLUMN_MIN_N and T >= COLUMN_MIN_T:
        return _column_plan(g, narrow, op, column_bt, column_vec)
    if g.layout == 1:
        if T <= MAX_BT:
            wide = block_elems and T >= VEC_MIN_BT and _vector_rows(g, narrow)
            BT, BB = t2, min(n2, max(1, (block_elems if wide else BLOCK_ELEMS) // t2))
            if BB == 1 and (op in ONE_ROW_BLOCK_OPS or kernel in ONE_ROW_BLOCK_KERNELS):
                max_warps = ONE_ROW_BLOCK_WARPS
        elif T <= MAX_BT_WHOLE_ROWS and N >= MIN_ROWS_WHOLE:
            BT, BB = t2, 1  # enough rows to fill the GPU: each program scans whole rows
            max_warps = whole_row_warps
        else:
            BB = min(n2, SPLIT_ROWS_BATCH_MAJOR)
            BT = min(t2, SPLIT_BLOCK_ELEMS // BB)
    elif T <= MAX_BT_TIME_MAJOR:
        many = N >= MANY_ROWS_TIME_MAJOR and op not in MANY_ROWS_TIME_MAJOR_EXCEPT
        rows = MIN_ROWS_TIME_MAJOR_WHOLE_MANY if many else MIN_ROWS_TIME_MAJOR_WHOLE
        BT, BB = t2, min(n2, max(rows, BLOCK_ELEMS // t2))
        max_warps = time_major_warps
        if WHOLE_ROW_THREAD_WARPS and BB <= THREAD_STEPS_MAX_COLUMNS:
            max_warps = min(time_major_warps or WHOLE_ROW_THREAD_WARPS, WHOLE_ROW_THREAD_WARPS)
    else:
        BB = min(n2, MIN_ROWS_TIME_MAJOR)
        BT = SPLIT_BT_TIME_MAJOR if BB == MIN_ROWS_TIME_MAJOR else max(SPLIT_BT_TIME_MAJOR, SPLIT_BLOCK_ELEMS // BB)
        if 8 <= BB < MIN_ROWS_TIME_MAJOR:
            bt = (few_rows_elems or SPLIT_BLOCK_ELEMS_FEW_ROWS) // BB
            if next_pow2(cdiv(T, bt)) * BB <= MAX_FOLD_ELEMS:  # a fold as large as those compiled
                BT = bt
        BT = min(t2, BT)
    BT = _fill(g, max(BT, 2), BB)
    chunks = cdiv(T, BT)
    few_rows = g.layout == 1 or BB <= LOOKBACK_MAX_ROWS_TIME_MAJOR
    if chunks > 1 and few_rows and not vector_split and next_pow2(chunks) <= LOOKBACK_FOLD * BT:
        return _with_vectors(g, BT, BB, chunks, 1, True, kernel=kernel)
    if chunks > 1:  # too many chunks for the look-back: three launches, BLOCK_ELEMS blocks
        if g.layout != 1:
            BB = min(n2, ROWS_TIME_MAJOR_THREE_LAUNCH)
        BT = _fill(g, min(BT, max(2, (vector_split or BLOCK_ELEMS) // BB)), BB)
        chunks = cdiv(T, BT)
    row_blocks = cdiv(N, BB)
    nseg = 1
    if row_blocks < TARGET_PROGRAMS and chunks > 1:
        nseg = min(chunks, cdiv(TARGET_PROGRAMS, row_blocks))
    cps = cdiv(chunks, nseg)
    return _with_vectors(g, BT, BB, cdiv(chunks, cps), cps, False, max_warps, kernel)


def _fill(g: Geometry, BT: int, BB: int) -> int:
    """BT, halved while the rows split into fewer than SPLIT_FILL_PROGRAMS programs of [BT, BB]
    and a block keeps at least SPLIT_FILL_MIN_ELEMS elements; unchanged for rows that do not split."""
    while (
        SPLIT_FILL_PROGRAMS
        and 1 < cdiv(g.T, BT)
        and cdiv(g.N, BB) * cdiv(g.T, BT) < SPLIT_FILL_PROGRAMS
        and BT * BB >= 2 * SPLIT_FILL_MIN_ELEMS
        and BT >= 4
    ):
        BT //= 2
    return BT


def _with_vectors(
    g: Geometry, BT: int, BB: int, nseg: int, cps: int, lookback: bool, max_warps: int = 0, kernel: str = ""
) -> Plan:
    """_plan's, with the columns a thread of a time-major block other than column blocks loads
    (_time_major_cvec; 1 in other layouts) and, where those are more than 1 and the rows split
    (where run 14 measured it), at most MAX_WARPS_TIME_MAJOR_CVEC warps, or in the three-launch
    split's blocks of at most THREAD_STEPS_MAX_COLUMNS columns TIME_MAJOR_VECTOR_SPLIT_WARPS' for
    `kernel` where the split has TIME_MAJOR_VECTOR_SPLIT_WARPS_MIN_PROGRAMS programs or more."""
    split = lookback or nseg * cps > 1
    cvec = _time_major_cvec(g, BB, kernel, whole=not split)
    if cvec > 1 and split:
        max_warps = MAX_WARPS_TIME_MAJOR_CVEC
        programs = cdiv(g.N, BB) * nseg
        if not lookback and BB <= THREAD_STEPS_MAX_COLUMNS and programs >= TIME_MAJOR_VECTOR_SPLIT_WARPS_MIN_PROGRAMS:
            max_warps = TIME_MAJOR_VECTOR_SPLIT_WARPS.get(kernel, max_warps)
    return _plan(g, BT, BB, nseg, cps, lookback, max_warps=max_warps)._replace(cvec=cvec)


def _time_major_cvec(g: Geometry, BB: int, kernel: str = "", whole: bool = True) -> int:
    """The columns a thread of a time-major block of BB columns, other than column blocks, loads
    as a vector (TIME_MAJOR_CVEC): the widest power of two up to it and to BB that divides N, where
    N is not a multiple of 16, or is and `kernel` takes it there (_cvec_aligned); else 1."""
    cvec = TIME_MAJOR_CVEC if g.layout == 0 and (g.N % 16 or _cvec_aligned(g, kernel, whole)) else 1
    while cvec > 1 and (g.N % cvec or cvec > BB):
        cvec //= 2
    return cvec


def _cvec_aligned(g: Geometry, kernel: str, whole: bool) -> bool:
    """Whether time-major rows of N a multiple of 16 load as vectors across columns in the named
    kernel: rows of at least its TIME_MAJOR_CVEC_ALIGNED steps, scanned whole, or split with
    TIME_MAJOR_CVEC_ALIGNED_SPLIT."""
    least = TIME_MAJOR_CVEC_ALIGNED.get(kernel)
    return least is not None and g.T >= least and (whole or TIME_MAJOR_CVEC_ALIGNED_SPLIT)


def _column_plan(g: Geometry, narrow: bool = False, op: str = "", column_bt: int = 0, column_vec: int = 0) -> Plan:
    """Time-major column blocks (COLUMNS_TIME_MAJOR, or the op's COLUMNS_TIME_MAJOR_16BIT): a
    thread for each column of the block, or for CVEC neighbouring columns (the op's COLUMN_VEC, or
    for `narrow` rows `column_vec` if given, where N is a multiple of it)."""
    BB = min(next_pow2(g.N), (COLUMNS_TIME_MAJOR_16BIT if narrow else {}).get(op, COLUMNS_TIME_MAJOR))
    BT = max(2, min(next_pow2(g.T), column_bt or COLUMN_BT))
    cvec = (narrow and column_vec) or (COLUMN_VEC_16BIT if narrow else COLUMN_VEC).get(op, 1)
    cvec = cvec if cvec > 1 and g.N % cvec == 0 and BB >= cvec else 1
    chunks, row_blocks, warps = cdiv(g.T, BT), cdiv(g.N, BB), max(1, BB // (32 * cvec))
    nseg = max(cdiv(chunks, COLUMN_SEGMENT_CHUNKS), cdiv(COLUMN_TARGET_PROGRAMS, row_blocks))
    cps = cdiv(chunks, min(chunks, COLUMN_MAX_SEGMENTS, nseg))
    return _plan(g, BT, BB, cdiv(chunks, cps), cps, False, warps)._replace(cvec=cvec)


def _plan(
    g: Geometry, BT: int, BB: int, nseg: int, cps: int, lookback: bool, num_warps: int = 0, max_warps: int = 0
) -> Plan:
    """num_warps: as given, else THREADS_PER_ELEM's, capped at max_warps (default MAX_WARPS, or
    MAX_WARPS_TIME_MAJOR for a time-major launch that would not fill the GPU)."""
    big = g.outer * g.T * g.inner + g.inner * BT >= 2**31 - 1
    if not num_warps:
        if not max_warps:
            max_warps = MAX_WARPS
            if g.layout == 0 and cdiv(g.N, BB) * nseg * MAX_WARPS < FILL_WARPS:
                max_warps = MAX_WARPS_TIME_MAJOR
        num_warps = min(max_warps, max(1, int(BT * BB * THREADS_PER_ELEM) // 32))
    return Plan(BT, BB, cdiv(g.N, BB), nseg, cps, big, num_warps, lookback)


def carry_blocks(nseg: int, N: int) -> tuple[int, int]:
    """carry_kernel's segments a round (KC) and rows a block (BB) for nseg segments of N rows."""
    if nseg > CARRY_SEGMENTS:
        kc, rows = min(next_pow2(nseg), CARRY_LONG_SEGMENTS), CARRY_LONG_BLOCK_ROWS if N >= CARRY_FEW_ROWS else 1
    else:
        kc, rows = CARRY_SEGMENTS, CARRY_BLOCK_ROWS
    return kc, min(next_pow2(N), rows)


def split_registers(kernel: str, phase: int, p: Plan, f64: bool) -> int:
    """SPLIT_REGISTERS' cap for a pass (PHASE 1 or 2) of a split launch of `kernel` under plan p (0: none)."""
    return 0 if f64 else SPLIT_REGISTERS.get(kernel, {}).get((phase, p.BT, p.BB, p.num_warps), 0)


def fold_rounds(p: Plan) -> int:
    """For a plan split in three launches that the two-launch split takes (FOLD_CARRY_ELEMS): the
    composites PHASE 2 folds a round (KP); else 0."""
    if not FOLD_CARRY_ELEMS or p.lookback or p.nseg == 1 or p.BB * p.nseg > FOLD_CARRY_ELEMS:
        return 0
    return next_pow2(min(p.nseg, max(1, FOLD_CARRY_ROUND // p.BB)))


def vector_width(g: Geometry, p: Plan, narrow: bool = False) -> int:
    """The vector width of a launch: _row_vector's for blocks of at least VEC_MIN_BT steps outside
    the look-back (`narrow`: rows of 16-bit inputs); for time-major blocks of few columns of split
    rows (and with WHOLE_ROW_THREAD_WARPS of rows scanned whole) the steps a thread scans in
    registers (_thread_steps); else 1.

    With VEC_THREAD_STEPS, in blocks of several rows: at most the steps a thread holds (BT·BB over
    the block's threads), but not below 4, so that a thread reverses whole runs of VEC steps in
    registers where a reverse scan puts them in vector order (`common.vector_order`; where a run
    spans threads, it takes shuffles). The loads are the same either way (a thread's steps are what
    one vector load can take). PTX for sm_90 (tune_h200.md, run 21): GAE 16384×512 bfloat16 in
    [512, 2] blocks at 8 warps, VEC 8 → 4: 313 → 301 instructions, 24 → 12 shuffles; V-trace
    487 → 438. Blocks of one row keep VEC: there that cut 12-24 shuffles more but timed 0.95-1.05x
    (run 22b).
    """
    split = p.lookback or p.nseg * p.cps > 1
    if g.layout == 0 and p.BB <= THREAD_STEPS_MAX_COLUMNS and (split or WHOLE_ROW_THREAD_WARPS):
        return _thread_steps(g, p)
    vec = _row_vector(g, narrow)
    if vec == 1 or (p.lookback and not VECTOR_LOOKBACK) or p.BT < max(VEC_MIN_BT, vec):
        return 1
    if VEC_THREAD_STEPS and p.BB > 1:
        return min(vec, max(4, p.BT * p.BB // (32 * p.num_warps)))
    return vec


def _thread_steps(g: Geometry, p: Plan) -> int:
    """The steps a thread of a time-major block scans in registers (THREAD_STEPS_TIME_MAJOR): the
    widest power of two up to it and to the rows a thread holds; 1 where that is below 2. A thread
    holds CVEC columns of a row. Where N is a multiple of 16 and CVEC is 1 this counts 8, on the
    belief that the compiler then knows the rows aligned and loads 16 bytes; it does not
    (TIME_MAJOR_CVEC_ALIGNED), a thread holds one column, and the count is low: K is at most what
    the thread holds, as timed in run 32. Kept until split rows of such N are timed with
    TIME_MAJOR_CVEC_ALIGNED_SPLIT."""
    cols = p.cvec if p.cvec > 1 else (min(p.BB, 8) if g.N % 16 == 0 else 1)
    rows = p.BT * p.BB // (WARP_THREADS * p.num_warps * cols)
    k = THREAD_STEPS_TIME_MAJOR
    while k > 1 and (k > rows or k > p.BT):
        k //= 2
    return max(k, 1)


def _row_vector(g: Geometry, narrow: bool = False) -> int:
    """The widest power of two from VEC_BATCH_MAJOR (VEC_BATCH_MAJOR_16BIT for `narrow` rows) down
    to 4 that divides batch-major rows of T steps; 1 where none does."""
    vec = VEC_BATCH_MAJOR_16BIT if narrow else VEC_BATCH_MAJOR
    while vec >= 4 and g.T % vec:
        vec //= 2
    return vec if g.layout == 1 and vec >= 4 else 1


def wide_blocks(kernel_name: str, g: Geometry, narrow: bool) -> int:
    """plan's `block_elems` for a launch of the named kernel: BLOCK_ELEMS_16BIT's elements for
    `narrow` rows of at least its least steps; else 0 (BLOCK_ELEMS)."""
    elems, least_t = BLOCK_ELEMS_16BIT.get(kernel_name, (0, 0))
    return elems if narrow and g.T >= least_t else 0


def narrow_rows(g: Geometry, inputs: Sequence[jax.Array]) -> bool:
    """Whether every floating per-step input (at least N·T elements) is 16-bit (vector_width's `narrow`)."""
    steps = [a for a in inputs if a.size >= g.N * g.T and jnp.issubdtype(a.dtype, jnp.floating)]
    return bool(steps) and all(a.dtype.itemsize <= 2 for a in steps)


def _vector_rows(g: Geometry, narrow: bool = False) -> bool:
    """Rows that load as vectors (_row_vector): batch-major, of a multiple of 4 steps."""
    return _row_vector(g, narrow) > 1


def scan_call(
    kernel,
    *,
    op: str,
    g: Geometry,
    inputs: Sequence[jax.Array],
    scalars: Sequence[int] = (),
    outputs: Sequence[jax.ShapeDtypeStruct],
    reverse: bool,
    f64: bool,
    initial: jax.Array | None = None,
    few_rows_elems: int | None = None,
    vector_split: int | None = None,
    whole_row_warps: int = 0,
    time_major_warps: int = 0,
    column_bt: int = 0,
    column_vec: int = 0,
    **flags,
) -> list[jax.Array]:
    """Runs a scan kernel over all rows, splitting long rows into segments scanned in parallel.

    The kernel's parameters are `inputs`, p_cin, N, T, INNER, CPS, `scalars`, `outputs`, then
    the two segment-summary outputs and the sync buffer (PHASE 3's ticket and flags); `flags`
    are its constexprs besides the layout ones. `op` (the op launching), `few_rows_elems`,
    `vector_split`, `whole_row_warps`, `time_major_warps`, `column_bt` and `column_vec` go to `plan`.
    Batch-major rows scanned whole in blocks of one row, not in float64, take ROW_REGISTERS' cap
    for the kernel, block and warps (the constexpr MAXNREG, custom_call.max_registers), and the two
    passes of split rows SPLIT_REGISTERS' for the kernel, pass, block and warps; every other launch
    MAXNREG = 0. A parameter of form 2 in `flags` may reach the kernel as form 4 (param_forms).
    """
    if g.N == 0:  # no rows: nothing to launch (a CUDA grid of size 0 is an error)
        return [jnp.zeros((0,) if isinstance(o, SegmentSums) else o.shape, o.dtype) for o in outputs]
    narrow = narrow_rows(g, inputs)
    name = kernel.fn.__name__
    block_elems = wide_blocks(name, g, narrow)
    p = plan(
        g,
        few_rows_elems,
        vector_split,
        whole_row_warps,
        narrow,
        op,
        time_major_warps,
        column_bt,
        block_elems,
        name,
        column_vec,
    )
    single = p.nseg == 1 and p.cps == 1 and initial is None
    outputs = [out((p.nseg * g.N,), o.dtype) if isinstance(o, SegmentSums) else o for o in outputs]
    vec = vector_width(g, p, narrow)
    meta = dict(LAYOUT=g.layout, VEC=vec, BIG=p.big, F64=f64, SINGLE=single, BT=p.BT, BB=p.BB, CVEC=p.cvec)
    meta.update(FOLD=False, FENCE=False, WALK_BACK=False, STREAM=False, num_warps=p.num_warps, **flags)
    meta.update(param_forms(name, g.layout, flags))
    # caps measured on float32 and bfloat16 inputs; float64 scans hold twice the registers a value
    whole = g.layout == 1 and p.BB == 1 and p.nseg == 1 and p.cps == 1 and not f64
    cap = ROW_REGISTERS.get(name, {}).get((p.BT, p.num_warps), 0) if whole else 0
    meta[custom_call.MAX_REGISTERS_PARAM] = cap
    sizes = [g.N, g.T, g.inner, p.cps, *scalars]
    holes = [placeholder()] * len(outputs)
    acc = jnp.float64 if f64 else jnp.float32
    if p.lookback:
        tiles = p.row_blocks * p.nseg
        outs = call(
            kernel,
            grid=(tiles, 1),
            args=[*inputs, inputs[0], *sizes],
            out_shapes=[*outputs, out((tiles * p.BB,), acc), out((tiles * p.BB,), acc), out((1 + tiles,), jnp.int32)],
            zeroed=(len(outputs) + 2,),
            PHASE=3,
            KP=next_pow2(p.nseg),
            **{**meta, "FENCE": LOOKBACK_FENCE},
        )
        return outs[: len(outputs)]
    meta["KP"] = 1
    if p.nseg == 1:
        outs = call(
            kernel,
            grid=(p.row_blocks, 1),
            args=[*inputs, inputs[0], *sizes],
            out_shapes=[*outputs, *[placeholder()] * 3],
            PHASE=0,
            **meta,
        )
        return outs[: len(outputs)]
    seg = (p.nseg * g.N,)
    kp = fold_rounds(p)
    if kp:  # two launches: PHASE 1 writes the composites as one [2, nseg, N] buffer, PHASE 2 folds them
        meta.update(FOLD=True, KP=kp)
        summaries = [out((2 * p.nseg * g.N,), acc), placeholder()]
    else:
        summaries = [out(seg, acc), out(seg, acc)]
    summary = call(
        kernel,
        grid=(p.row_blocks, p.nseg),
        args=[*inputs, inputs[0], *sizes],
        out_shapes=[*holes, *summaries, placeholder()],
        PHASE=1,
        **{
            **meta,
            "WALK_BACK": name in SUMMARY_WALK_BACK,
            custom_call.MAX_REGISTERS_PARAM: split_registers(name, 1, p, f64),
        },
    )[len(outputs) : len(outputs) + 2]
    if kp:
        cin = summary[0]
    else:
        from rlscan_jax._src.triton.kernels.common import carry_kernel

        kc, bb = carry_blocks(p.nseg, g.N)
        (cin,) = call(
            carry_kernel,
            grid=(cdiv(g.N, bb),),
            num_warps=CARRY_WARPS,
            args=[*summary, inputs[0] if initial is None else initial, g.N, p.nseg],
            out_shapes=[jax.ShapeDtypeStruct(seg, acc)],
            HAS_INITIAL=initial is not None,
            REVERSE=reverse,
            F64=f64,
            BB=bb,
            KC=kc,
        )
    outs = call(
        kernel,
        grid=(p.row_blocks, p.nseg),
        args=[*inputs, cin, *sizes],
        out_shapes=[*outputs, *[placeholder()] * 3],
        PHASE=2,
        **{**meta, "STREAM": STREAM_STORES, custom_call.MAX_REGISTERS_PARAM: split_registers(name, 2, p, f64)},
    )
    return outs[: len(outputs)]


def param(v: jax.Array, shape: tuple[int, ...], axis: int) -> tuple[jax.Array, int]:
    """A parameter (broadcastable to the per-step `shape`, time on `axis`) as the kernels take it,
    with its form (kernels/common.load_param):
        0  one value                         ([1])
        2  one value a step, for every row   ([T]: a shape of ones but the time axis)
        3  one value a row, at every step    ([N]: the per-step shape with a time axis of 1)
        1  anything else: the per-step array, broadcast where it is not one already.
    Forms 0, 2 and 3 are views of the parameter as given: nothing of the per-step shape is written.
    scan_call reads form 2 as form 4 in some launches (param_forms)."""
    full = (1,) * (len(shape) - v.ndim) + tuple(v.shape)
    others = [(d, s) for i, (d, s) in enumerate(zip(full, shape)) if i != axis]
    if math.prod(full) == 1:
        return v.reshape(1), 0
    if tuple(v.shape) == tuple(shape):
        return v, 1
    if full[axis] == shape[axis] and all(d == 1 for d, _ in others):
        return v.reshape(-1), 2
    if full[axis] == 1 and all(d == s for d, s in others):
        return v.reshape(-1), 3
    return jnp.broadcast_to(v, shape), 1


def out(shape: tuple[int, ...], dtype) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, dtype)


def or_(v: jax.Array | None, fallback: jax.Array) -> jax.Array:
    """An absent input's pointer slot gets an existing buffer; a constexpr flag keeps it unread."""
    return fallback if v is None else v
