"""Every kernel variant the launchers produce compiles for sm_90 (H100 / H200), without a GPU.

A kernel that does not compile for the GPU fails CI here, before anyone reaches a GPU.
"""

from __future__ import annotations

import itertools
import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

triton = pytest.importorskip("triton", reason="the test extra installs triton")

import cases  # noqa: E402
import triton_variants  # noqa: E402

VARIANTS = triton_variants.record()


def test_every_op_has_variants():
    names = {v.kernel.fn.__name__ for v in VARIANTS}
    kernels = ("gae_kernel", "vtrace_kernel", "retrace_kernel", "returns_kernel", "linear_kernel", "adjoint_kernel")
    kernels += ("vtrace_adjoint_kernel", "retrace_adjoint_kernel", "linear_adjoint_kernel")
    assert names == {*kernels, "carry_kernel"}
    phases = {dict(v.constexprs).get("PHASE") for v in VARIANTS}
    assert phases >= {0, 1, 2, 3}


# (BT, BB, KP) of the largest look-back folds the launch plan makes: batch-major single rows,
# batch-major blocks of 4 rows, time-major blocks of 8 rows (triton 3.6.0 once failed to compile
# the fold's loop from KP = 1024 up while small folds compiled).
LARGEST_FOLDS = ((4096, 1, 2048), (1024, 4, 512), (512, 8, 256))


def _largest_folds():
    """Each kernel's float32 PHASE 3 variant, rebuilt with the largest folds."""
    seen, out = set(), []
    for v in VARIANTS:
        c = dict(v.constexprs)
        name = v.kernel.fn.__name__
        if c.get("PHASE") != 3 or name in seen or "*bf16" in v.types:
            continue
        seen.add(name)
        for bt, bb, kp in LARGEST_FOLDS:
            constexprs = tuple(sorted({**c, "BT": bt, "BB": bb, "KP": kp}.items()))
            out.append(triton_variants.Variant(v.kernel, v.types, constexprs, 8))
    return out


# carry_kernel's (rows a block, warps, segments a round): those tune.py's carry mode times, and
# the long rows' blocks the launcher makes for fewer than 4 rows (launch.carry_blocks), which the
# recorded calls do not reach, and the 256-512 segments a round of tune.py's segments mode.
CARRY_BLOCKS = (
    *((64, 2, 32), (128, 4, 32), (64, 1, 8), (16, 1, 64), (8, 1, 128), (2, 1, 128), (1, 1, 128), (4, 1, 64)),
    *((4, 1, 256), (2, 1, 256), (1, 1, 256), (2, 1, 512), (1, 1, 512)),
)


def _carry_blocks():
    """carry_kernel's recorded variants rebuilt with the blocks of CARRY_BLOCKS."""
    out = []
    for v in VARIANTS:
        if v.kernel.fn.__name__ != "carry_kernel":
            continue
        c = dict(v.constexprs)
        for bb, warps, kc in CARRY_BLOCKS:
            flags = tuple(sorted({**c, "BB": bb, "KC": kc}.items()))
            out.append(triton_variants.Variant(v.kernel, v.types, flags, warps))
    assert out
    return out


def _vector_variants():
    """Batch-major variants recorded without vector loads (blocks under launch.VEC_MIN_BT steps),
    rebuilt with VEC = 4: every block the recorded calls reach compiles with them too (not PHASE 3)."""
    out = []
    for v in VARIANTS:
        c = dict(v.constexprs)
        if c.get("LAYOUT") == 1 and c.get("VEC") == 1 and c.get("PHASE") != 3:
            out.append(triton_variants.Variant(v.kernel, v.types, tuple(sorted({**c, "VEC": 4}.items())), v.num_warps))
    return out


def _trace_param_variants():
    """Eligibility traces' adjoint with DECAY_GRAD (launch.FUSED_TRACE_PARAM_GRADS, off until timed
    on a GPU, so record() does not reach it): the variants that eligibility traces without an
    initial trace (mode "done") launch with it on, in every layout of triton_variants.LAYOUTS,
    float32 and bfloat16, with γ and λ one value, one a row and one a time step."""
    from rlscan_jax._src.triton import launch

    found = {}

    def on_launch(kernel, grid, args, out_shapes, num_warps, constexprs):
        v = triton_variants.variant(kernel, args, out_shapes, num_warps, constexprs)
        if constexprs.get("DECAY_GRAD"):
            found.setdefault(v.name, v)

    saved, launch.FUSED_TRACE_PARAM_GRADS = launch.FUSED_TRACE_PARAM_GRADS, (0, 1, 2)
    try:
        with triton_variants.recording(on_launch):
            for (T, batch, axis), (dtype, flag_dtype), gamma in itertools.product(
                triton_variants.LAYOUTS,
                ((np.float32, np.bool_), (cases.DTYPES["bf16"], np.int8)),
                (np.asarray(0.9, np.float32), "row", "time"),
            ):
                call = triton_variants._call("eligibility_traces", "done", T, batch, axis, dtype, flag_dtype, gamma)
                triton_variants.trace(*call)
    finally:
        launch.FUSED_TRACE_PARAM_GRADS = saved
    assert {dict(v.constexprs)["DECAY_GRAD"] for v in found.values()} == {1, 2}
    return list(found.values())


def _column_blocks():
    """Time-major split-row variants rebuilt as the widest column blocks (launch.COLUMNS_TIME_MAJOR).

    The recorded calls reach column blocks of 32 columns only (record() keeps one variant per
    set of flags, whatever its block).
    """
    from rlscan_jax._src.triton import launch

    p = launch.plan(launch.geometry((4096, 4096), 0))
    assert (p.BB, p.num_warps) == (launch.COLUMNS_TIME_MAJOR, launch.COLUMNS_TIME_MAJOR // 32), p
    out = []
    for v in VARIANTS:
        c = dict(v.constexprs)
        if c.get("LAYOUT") == 0 and c.get("PHASE") in (1, 2) and "*bf16" not in v.types:
            constexprs = tuple(sorted({**c, "BT": p.BT, "BB": p.BB}.items()))
            out.append(triton_variants.Variant(v.kernel, v.types, constexprs, p.num_warps))
    assert out
    return out


def _fold_carry_variants():
    """Each kernel's float32 PHASE 1 and 2 variants (per VEC) rebuilt for the two-launch split
    (launch.FOLD_CARRY_ELEMS; the recorded calls reach it only in small splits): FOLD, with the
    rounds of composites the launcher would ask for."""
    from rlscan_jax._src.triton import launch

    seen, out = set(), []
    for v in VARIANTS:
        c = dict(v.constexprs)
        key = (v.kernel.fn.__name__, c.get("PHASE"), c.get("VEC"))
        if c.get("PHASE") not in (1, 2) or key in seen or "*bf16" in v.types:
            continue
        seen.add(key)
        kp = launch.next_pow2(max(1, launch.FOLD_CARRY_ROUND // c["BB"]))
        out.append(
            triton_variants.Variant(
                v.kernel, v.types, tuple(sorted({**c, "FOLD": True, "KP": kp}.items())), v.num_warps
            )
        )
        if c.get("LAYOUT") == 0 and c["PHASE"] == 2:  # the column blocks' fold that tune.py's carry mode times
            flags = {**c, "FOLD": True, "KP": 8, "BT": 4, "BB": 256}
            out.append(triton_variants.Variant(v.kernel, v.types, tuple(sorted(flags.items())), 8))
    assert {k[1] for k in seen} == {1, 2}
    return out


def test_plan_folds_are_bounded():
    """No shape gets a look-back fold larger than those compiled below."""
    from rlscan_jax._src.triton import launch

    largest = {(bt, bb): kp for bt, bb, kp in LARGEST_FOLDS}
    for axis, n, few_rows_elems in itertools.product(
        (0, 1), (1, 2, 3, 4, 8, 16, 24, 32, 1024), (None, launch.SPLIT_BLOCK_ELEMS)
    ):
        for t in (2**k for k in range(1, 25)):
            shape = (t, n) if axis == 0 else (n, t)
            p = launch.plan(launch.geometry(shape, axis), few_rows_elems)
            if p.lookback:
                kp = launch.next_pow2(p.nseg)
                assert kp * p.BB <= max(b * k for (_, b), k in largest.items()), (shape, p)
                assert kp <= p.BT // 2, (shape, p)


def test_carry_blocks_take_long_rows_in_one_round():
    """carry_kernel chains up to CARRY_SEGMENTS segments in its blocks of CARRY_BLOCK_ROWS rows, and
    rows of more segments all at once (up to CARRY_LONG_SEGMENTS) in blocks of CARRY_LONG_BLOCK_ROWS
    (one row where there are fewer than CARRY_FEW_ROWS); every (segments, rows) it launches at the
    benchmark grid's shapes compiles below."""
    from benchmarks import shapes
    from rlscan_jax._src.triton import launch

    compiled = {(kc, bb) for bb, _, kc in CARRY_BLOCKS}
    compiled |= {(dict(v.constexprs)["KC"], dict(v.constexprs)["BB"]) for v in VARIANTS if "KC" in dict(v.constexprs)}
    assert launch.carry_blocks(16, 4096) == (32, 32) and launch.carry_blocks(32, 1024) == (32, 32)
    assert launch.carry_blocks(33, 4096) == (64, 2) and launch.carry_blocks(256, 512) == (256, 2)
    assert launch.carry_blocks(256, 8) == (256, 1) and launch.carry_blocks(600, 64) == (512, 2)
    assert launch.carry_blocks(512, 1) == (512, 1) and launch.carry_blocks(4, 3) == (32, 4)
    seen = set()
    for n, t in shapes.GRID:
        for layout in ("time_major", "batch_major"):
            g = launch.geometry(shapes.shape(n, t, layout), shapes.TIME_AXIS[layout] % 2)
            p = launch.plan(g)
            if p.nseg > 1 and not p.lookback:
                kc, bb = launch.carry_blocks(p.nseg, g.N)
                assert kc >= min(p.nseg, launch.CARRY_LONG_SEGMENTS) and bb <= launch.next_pow2(g.N)
                assert (kc, bb) in compiled, (n, t, layout, kc, bb)
                seen.add((kc, bb))
    assert {(256, 2), (256, 1), (512, 1)} <= seen, seen


def test_walk_back_table_names_the_kernels_that_walk_back():
    """launch.SUMMARY_WALK_BACK names kernels that have a PHASE 1 (a misspelt name would silently
    turn the walk off), and exactly their recorded PHASE 1 variants walk back; no other launch does."""
    from rlscan_jax._src.triton import launch

    phase1 = {v.kernel.fn.__name__ for v in VARIANTS if dict(v.constexprs).get("PHASE") == 1}
    walking = {v.kernel.fn.__name__ for v in VARIANTS if dict(v.constexprs).get("WALK_BACK")}
    assert set(launch.SUMMARY_WALK_BACK) <= phase1, (launch.SUMMARY_WALK_BACK, phase1)
    assert walking == set(launch.SUMMARY_WALK_BACK), walking
    assert all(dict(v.constexprs)["PHASE"] == 1 for v in VARIANTS if dict(v.constexprs).get("WALK_BACK"))
    assert all(dict(v.constexprs)["PHASE"] == 2 for v in VARIANTS if dict(v.constexprs).get("STREAM"))


def test_column_blocks_give_each_thread_whole_columns():
    """Time-major column plans: a thread for each column, every step covered, segments bounded."""
    from rlscan_jax._src.triton import launch

    seen = 0
    for n, t in itertools.product((32, 33, 100, 256, 1000, 4096, 65540), (129, 512, 1000, 4096, 2**20)):
        p = launch.plan(launch.geometry((t, n), 0))
        assert p.BB == 32 * p.num_warps * p.cvec and p.BB <= launch.COLUMNS_TIME_MAJOR, (t, n, p)
        assert p.row_blocks * p.BB >= n and p.nseg * p.cps * p.BT >= t > (p.nseg - 1) * p.cps * p.BT, (t, n, p)
        assert p.nseg <= launch.COLUMN_MAX_SEGMENTS and not p.lookback, (t, n, p)
        seen += 1
    # Rows of 128 steps or fewer, and fewer than 32 rows, keep the other blocks.
    for shape in ((128, 4096), (16, 65536), (4096, 8)):
        p = launch.plan(launch.geometry(shape, 0))
        assert p.BB < 32 * p.num_warps, (shape, p)
    assert seen


def test_column_vectors_follow_the_ops_tables():
    """An op named in launch.COLUMN_VEC (COLUMN_VEC_16BIT for 16-bit rows) takes that many columns
    a thread where N is a multiple of it, at one warp for every 32 · CVEC columns, in blocks of
    COLUMNS_TIME_MAJOR columns (16-bit rows: the op's COLUMNS_TIME_MAJOR_16BIT); any other op, or
    N not a multiple, one column a thread; rows that take other blocks do not take the table's
    width (of N a multiple of 16 they keep 1: test_time_major_vectors_where_n_is_not_a_multiple_of_16)."""
    from rlscan_jax._src.triton import launch

    for narrow, table in ((False, launch.COLUMN_VEC), (True, launch.COLUMN_VEC_16BIT)):
        assert table and set(table) < set(cases.OPS), table
        for op in cases.OPS:
            for n in (4096, 4097, 1000):
                p = launch.plan(launch.geometry((512, n), 0), narrow=narrow, op=op)
                want = table.get(op, 1) if n % table.get(op, 1) == 0 else 1
                assert p.cvec == want and p.BB == 32 * p.num_warps * want, (op, narrow, n, p)
                width = launch.COLUMNS_TIME_MAJOR_16BIT.get(op) if narrow else None
                assert p.BB == (width or launch.COLUMNS_TIME_MAJOR), (op, narrow, n, p)
            assert launch.plan(launch.geometry((128, 4096), 0), narrow=narrow, op=op).cvec == 1, op
            assert launch.plan(launch.geometry((512, 4096), 1), narrow=narrow, op=op).cvec == 1, op


def test_adjoint_column_vectors_follow_their_own_table():
    """launch.ADJOINT_COLUMN_VEC_16BIT: the adjoint scan of an op named there (episodic sums) loads
    that many columns a thread on time-major rows of a 16-bit cotangent, while its forward pass
    keeps the op's COLUMN_VEC_16BIT entry; float32 rows keep COLUMN_VEC's in both directions, and
    eligibility traces (the same kernel, not in the table) their op's entry. The adjoint's launches
    are told from the forward pass's by their direction (REVERSE), the other way."""
    from rlscan_jax._src.triton import launch

    assert launch.ADJOINT_COLUMN_VEC_16BIT and set(launch.ADJOINT_COLUMN_VEC_16BIT) < set(cases.OPS)
    for op in ("episodic_cumsum", "eligibility_traces"):
        for dtype, table in ((np.float32, launch.COLUMN_VEC), (jnp.bfloat16, launch.COLUMN_VEC_16BIT)):
            (direction,) = {c["REVERSE"] for _, _, _, c in _forward_launches(op, 512, 4096, dtype, axis=0)}
            launches = _forward_launches(op, 512, 4096, dtype, axis=0, grad=True)
            forward = {c["CVEC"] for _, _, _, c in launches if c["REVERSE"] == direction}
            backward = {c["CVEC"] for _, _, _, c in launches if c["REVERSE"] != direction}
            narrow = dtype == jnp.bfloat16
            want = (launch.ADJOINT_COLUMN_VEC_16BIT if narrow else {}).get(op) or table.get(op, 1)
            assert forward == {table.get(op, 1)} and backward == {want}, (op, dtype, launches)
    # as shipped: 2 columns in the bfloat16 adjoint of episodic sums ("rev-init": a reverse sum, so
    # the adjoint runs forward in time), 1 in its forward pass
    launches = _forward_launches("episodic_cumsum", 512, 4096, jnp.bfloat16, axis=0, grad=True)
    assert {(c["REVERSE"], c["CVEC"]) for _, _, _, c in launches} == {(True, 1), (False, 2)}, launches


def _forward_launches(op, t, rows, dtype, axis=-1, grad=False):
    """(kernel name, grid, num_warps, constexprs) of each scan-kernel launch (not carry_kernel's) of
    the op's forward pass over `rows` rows of t steps (no feature axis), traced, not run; with
    `grad`, of its value and gradient (the sum of its outputs, by its float inputs)."""
    mode = {"eligibility_traces": "done", "episodic_cumsum": "rev-init"}.get(op, cases.MAIN_MODE[op])
    inp = cases.build(op, mode, t, (rows,), axis, dtype=dtype)
    seen = []

    def on_launch(kernel, grid, args, out_shapes, num_warps, constexprs):
        if "BT" in constexprs:
            seen.append((kernel.fn.__name__, grid, num_warps, constexprs))

    def loss(a):
        return sum(jnp.sum(o.astype(jnp.float32)) for o in cases.call(inp, "triton", {**inp.args, **a}))

    with triton_variants.recording(on_launch):
        if grad:
            jax.eval_shape(jax.grad(loss), {k: inp.args[k] for k in inp.float_names()})
        else:
            arrays = {k: v for k, v in inp.args.items() if isinstance(v, np.ndarray)}
            jax.eval_shape(lambda a: cases.call(inp, "triton", {**inp.args, **a}), arrays)
    return seen


def _passes_outside_launches(op, mode, axis, dtype, n=64, t=256, wrt_params=False, wrt=None, used=None, **params):
    """The operations on arrays of n·t elements or more, outside the kernels' launches, in the traced
    forward pass and in the inputs' gradients (the loss's own operations aside): "primitive [shapes]"
    of each. `params`: γ or λ as arrays, held constant (not differentiated) unless `wrt_params`
    (then the gradients are the parameters' too); `wrt` names the arguments differentiated instead,
    and `used` the outputs the loss sums (default all). A reshape is a view,
    and a slice that reads a row of a large array (its output small) no pass; anything else that
    writes or reads a whole array is a pass over memory around the kernels (a copy, a transpose,
    a conversion, a broadcast, a reduction)."""
    fake, loss_scope, big = "rlscan_test_launch", "rlscan_test_loss", n * t
    views, row_reads = {"reshape", "squeeze", "expand_dims"}, {"slice", "dynamic_slice"}

    def on_launch(kernel, grid, args, out_shapes, num_warps, constexprs):
        with jax.named_scope(fake):  # outputs that depend on every argument, so none is dropped
            dep = sum(a.reshape(-1)[0].astype(jnp.float32) * 0.0 for a in args if hasattr(a, "dtype"))
            return [(jnp.zeros(o.shape, jnp.float32) + dep).astype(o.dtype) for o in out_shapes]

    def size(v):
        return math.prod(v.aval.shape) if hasattr(getattr(v, "aval", None), "shape") else 0

    def inner(e):
        for p in e.params.values():
            for q in p if isinstance(p, (tuple, list)) else [p]:
                q = getattr(q, "jaxpr", q)
                if hasattr(q, "eqns"):
                    yield q

    def walk(jaxpr, found):
        for e in jaxpr.eqns:
            subs = list(inner(e))
            for sub in subs:
                walk(sub, found)
            scope = str(e.source_info.name_stack)
            if subs or e.primitive.name in views or fake in scope or loss_scope in scope:
                continue
            writes = max(map(size, e.outvars), default=0) >= big
            reads = max(map(size, e.invars), default=0) >= big and e.primitive.name not in row_reads
            if writes or reads:
                found.append(f"{e.primitive.name} {[str(v.aval) for v in e.outvars]}")
        return found

    inp = cases.build(op, mode, t, (n,), axis, dtype=dtype)
    inp.args.update({k: jnp.asarray(v) for k, v in params.items()})
    arrays = {k: v for k, v in inp.args.items() if isinstance(v, np.ndarray)}
    floats = [k for k in inp.float_names() if wrt_params or k not in params] if wrt is None else wrt

    def loss(a):
        outs = cases.call(inp, "triton", {**inp.args, **a})
        with jax.named_scope(loss_scope):
            return sum(jnp.sum(outs[i].astype(jnp.float32)) for i in (range(len(outs)) if used is None else used))

    with triton_variants.recording(on_launch):
        forward = jax.make_jaxpr(lambda a: cases.call(inp, "triton", {**inp.args, **a}))(arrays)
        grads = jax.make_jaxpr(jax.grad(loss))({k: inp.args[k] for k in floats})
    return walk(forward.jaxpr, []), walk(grads.jaxpr, [])


@pytest.mark.parametrize("op", cases.OP_NAMES)
def test_no_passes_around_the_kernels(op):
    """Every mode of every op, both layouts, float32 and bfloat16: the forward pass and the inputs'
    gradients touch the per-step arrays only through the kernels (no transpose for a layout, no
    conversion of 16-bit inputs or gradients, no copy, no broadcast of a smaller b), with two
    known exceptions:
    - the gradient of linear_scan's b one a step (mode rev-bcast) is d b of a's shape, written by
      the backward kernel and summed over the axes b was broadcast along (b one a row or one value,
      modes fwd-row and rev-scalar: the kernel sums it, one value a row for each segment);
    - eligibility traces' gradient for a given initial trace (modes feat, nodone) scales u's first
      row by γλ in float32, so u is scanned in float32 and converted for 16-bit inputs."""
    for mode in cases.OPS[op].modes:
        for axis in (0, -1):
            for dtype in (np.float32, cases.DTYPES["bf16"]):
                forward, grads = _passes_outside_launches(op, mode, axis, dtype)
                name = np.dtype(dtype).name
                if op == "linear_scan" and mode == "rev-bcast":
                    (db,) = grads
                    assert db.split()[0] == "reduce_sum", (mode, axis, name, grads)
                    grads = []
                if op == "eligibility_traces" and mode in ("feat", "nodone") and name == "bfloat16":
                    assert [p.split()[0] for p in grads] == ["convert_element_type"], (mode, axis, grads)
                    grads = []
                assert forward == [] and grads == [], (mode, axis, name, forward, grads)


@pytest.mark.parametrize(
    "op", ["gae", "lambda_returns", "discounted_returns", "vtrace", "retrace", "eligibility_traces"]
)
def test_parameter_gradients_take_no_passes(op, monkeypatch):
    """γ and λ one value or one a row, differentiated with the inputs: the fused backward launch sums
    their gradients (one value a row for each segment, launch.SegmentSums), so no pass over the
    per-step arrays runs around it (before the fortieth session, u was written and XLA's vjp read
    it with the inputs and the state; for V-trace, before the forty-second; for Retrace, before the
    forty-third; for eligibility traces, before the forty-fourth, whose modes with an initial trace
    keep u: ops._param_grads_fused). Every mode, both layouts, float32 and bfloat16 (whose float32
    state for the sums is a second forward launch, not a conversion; V-trace's forward pass writes
    its float32 state itself)."""
    from rlscan_jax._src.triton import launch

    monkeypatch.setattr(launch, "FUSED_TRACE_PARAM_GRADS", (0, 1, 2))  # every layout (shipped: batch-major)
    modes = ("done",) if op == "eligibility_traces" else cases.OPS[op].modes
    for mode in modes:
        for axis in (0, -1):
            for dtype in (np.float32, cases.DTYPES["bf16"]):
                for form in ("one", "row"):
                    inp = cases.build(op, mode, 256, (64,), axis)
                    shape = () if form == "one" else inp.param_shape("row")
                    params = {k: np.full(shape, 0.9, np.float32) for k in ("gamma", "lambda_") if k in inp.args}
                    _, grads = _passes_outside_launches(op, mode, axis, dtype, wrt_params=True, **params)
                    assert grads == [], (mode, axis, np.dtype(dtype).name, form, grads)


@pytest.mark.parametrize("op", triton_variants.SELECTIVE)
def test_some_gradients_take_no_passes(op):
    """The gradient of one input alone, and for GAE and V-trace of one output alone: no pass over
    the per-step arrays around the kernels (before the forty-first session, the unused output's
    cotangent was zeros written out for the fused backward to read). Every mode, both layouts,
    float32 and bfloat16."""
    for mode in cases.OPS[op].modes:
        for axis in (0, -1):
            for dtype in (np.float32, cases.DTYPES["bf16"]):
                names = cases.build(op, mode, 16, (4,), axis).float_names()
                subsets = [((k,), None) for k in names]
                if op in ("gae", "vtrace"):
                    subsets += [(names, (0,)), (names, (1,))]
                for wrt, used in subsets:
                    _, grads = _passes_outside_launches(op, mode, axis, dtype, wrt=list(wrt), used=used)
                    assert grads == [], (mode, axis, np.dtype(dtype).name, wrt, used, grads)


@pytest.mark.parametrize("op", [op for op in cases.OP_NAMES if cases.OPS[op].has_gamma])
def test_shared_parameters_are_read_where_they_lie(op):
    """γ (and λ) one a row ([*B] for time-major steps, [*B, 1] for batch-major ones) or one a step
    ([T, 1] / [T]) reach the kernels as arrays of N or T values (launch.param's forms 3 and 2),
    not broadcast to the steps' shape: the forward pass makes no pass around the kernels, nor do
    the inputs' gradients where the backward is one fused launch (eligibility traces' backward
    with a γλ that varies in time is the reference's vjp, which takes b as an array)."""
    spec, mode = cases.OPS[op], cases.MAIN_MODE[op]
    n, t = 64, 256
    for axis in (0, -1):
        row = (n,) if axis == 0 else (n, 1)
        step = (t, 1) if axis == 0 else (t,)
        for shape in (row, step):
            params = {"gamma": np.full(shape, 0.97, np.float32)}
            if spec.has_lambda:
                params["lambda_"] = np.full(shape, 0.9, np.float32)
            forward, grads = _passes_outside_launches(op, mode, axis, np.float32, n=n, t=t, **params)
            assert forward == [], (axis, shape, forward)
            if op != "eligibility_traces" or shape == row:
                assert grads == [], (axis, shape, grads)


def test_16bit_batch_major_rows_take_their_kernels_blocks():
    """Batch-major rows of 16-bit inputs, a multiple of 4 steps, from the kernel's least steps
    (BLOCK_ELEMS_16BIT[kernel] = (elements, least steps)) up to MAX_BT are scanned whole in blocks of
    its elements at MAX_WARPS warps (ONE_ROW_BLOCK_WARPS in blocks of one row of its ops), so that a
    thread holds 8 steps (one 16-byte load); other kernels, float32 rows, shorter rows, rows of no
    vector width and time-major rows keep BLOCK_ELEMS's blocks. Checked on the launches the public
    functions make."""
    from rlscan_jax._src.triton import launch

    assert launch.BLOCK_ELEMS_16BIT == {"linear_kernel": (2048, 128), "returns_kernel": (2048, 512)}

    def forward_launch(op, t, axis, dtype):
        seen = [
            (name, c["BT"] * c["BB"], warps, c["VEC"], c["BB"])
            for name, _, warps, c in _forward_launches(op, t, 64, dtype, axis)
        ]
        return seen[0] if len(seen) == 1 else seen

    kernels = set()
    for op in cases.OPS:
        for t in (128, 256, 512, 1024):
            kernel, elems, warps, vec, bb = forward_launch(op, t, -1, cases.DTYPES["bf16"])
            kernels.add(kernel)
            wide, least_t = launch.BLOCK_ELEMS_16BIT.get(kernel, (0, 0))
            want = wide if wide and t >= least_t else launch.BLOCK_ELEMS
            # VEC (vector_width): 8, or in blocks of several rows the steps a thread holds (4 in
            # BLOCK_ELEMS' blocks, 8 in the wide ones)
            want_vec = 8 if bb == 1 else want // (32 * launch.MAX_WARPS)
            # warps: MAX_WARPS, or in blocks of one row ONE_ROW_BLOCK_WARPS for ONE_ROW_BLOCK_OPS
            one_row = bb == 1 and op in launch.ONE_ROW_BLOCK_OPS
            want_warps = launch.ONE_ROW_BLOCK_WARPS if one_row else launch.MAX_WARPS
            assert (elems, vec, warps) == (want, want_vec, want_warps), (op, t, kernel, elems, warps, vec)
            assert forward_launch(op, t, -1, np.float32)[1] == launch.BLOCK_ELEMS, (op, t)
        # time-major rows scanned whole: the float32 blocks
        tm16, tm32 = (forward_launch(op, 128, 0, d) for d in (cases.DTYPES["bf16"], np.float32))
        assert tm16[:3] == tm32[:3], (op, tm16, tm32)
        for t in (64, 130):  # below VEC_MIN_BT; no vector width (130 is not a multiple of 4)
            kernel, elems, _, vec, _ = forward_launch(op, t, -1, cases.DTYPES["bf16"])
            assert elems <= launch.BLOCK_ELEMS and vec == 1, (op, t, kernel, elems)
    assert set(launch.BLOCK_ELEMS_16BIT) < kernels


def test_whole_rows_take_their_ops_warps():
    """Batch-major rows of 1025 to 4096 steps, enough of them to be scanned whole (a row a program):
    the forward pass at MAX_WARPS, but V-trace's at its launcher's whole_row_warps (16) and
    Retrace's at RETRACE_WHOLE_ROW_WARPS from RETRACE_WHOLE_ROW_MIN_T steps on; V-trace's
    [4096, 1] blocks capped at 64 registers a thread, the other ops' not. Checked on the launches
    the public functions make."""
    from rlscan_jax._src.triton import launch
    from rlscan_jax._src.triton.launchers import vtrace

    assert (launch.RETRACE_WHOLE_ROW_WARPS, launch.RETRACE_WHOLE_ROW_MIN_T) == (16, 2049)
    rows = launch.MIN_ROWS_WHOLE
    for op in cases.OPS:
        for t in (2048, 2049, 3000, 4096):
            launches = _forward_launches(op, t, rows, np.float32)
            seen = [(c["BT"], c["BB"], grid[0], warps, c.get("MAXNREG")) for _, grid, warps, c in launches]
            want, cap = launch.MAX_WARPS, 0
            if op == "vtrace":  # and in [4096, 1] blocks at most 64 registers a thread
                want, cap = vtrace.PLAN["whole_row_warps"], 64 if t > 2048 else 0
            elif op == "retrace" and t >= launch.RETRACE_WHOLE_ROW_MIN_T:
                want = launch.RETRACE_WHOLE_ROW_WARPS
            assert seen == [(launch.next_pow2(t), 1, rows, want, cap)], (op, t, seen)


def test_register_caps_reach_only_their_launches(monkeypatch):
    """ROW_REGISTERS' caps (MAXNREG) reach the launches they name and no other: V-trace's forward
    in [4096, 1] blocks at 16 warps and [1024, 1] blocks at 4, Retrace's adjoint in [4096, 1] blocks
    at 16 warps (float32 rows); not its 8-warp blocks of bfloat16 rows, not float64 scans, not
    blocks of several rows, split rows or time-major rows, not the other ops' launches. (The split
    rows' own caps, SPLIT_REGISTERS, are off here: the next test's.)"""
    from conftest import enable_x64

    from rlscan_jax._src.triton import launch

    monkeypatch.setattr(launch, "SPLIT_REGISTERS", {})

    assert launch.ROW_REGISTERS == {
        "vtrace_kernel": {(4096, 16): 64, (1024, 4): 64},
        "retrace_adjoint_kernel": {(4096, 16): 64},
    }
    rows, bf16 = launch.MIN_ROWS_WHOLE, cases.DTYPES["bf16"]

    def caps(op, t, n=rows, dtype=np.float32, axis=-1, grad=False):
        return {
            (name, c["BT"], c["BB"], warps, c["MAXNREG"])
            for name, _, warps, c in _forward_launches(op, t, n, dtype, axis, grad)
        }

    for dtype in (np.float32, bf16):
        assert caps("vtrace", 4096, dtype=dtype) == {("vtrace_kernel", 4096, 1, 16, 64)}, dtype
        assert caps("vtrace", 1000, dtype=dtype) == {("vtrace_kernel", 1024, 1, 4, 64)}, dtype
    assert ("retrace_adjoint_kernel", 4096, 1, 16, 64) in caps("retrace", 4096, grad=True)
    assert ("retrace_adjoint_kernel", 4096, 1, 8, 0) in caps("retrace", 4096, dtype=bf16, grad=True)
    with enable_x64():
        assert {c[-1] for c in caps("vtrace", 4096, dtype=np.float64)} == {0}
        assert {c[-1] for c in caps("retrace", 4096, dtype=np.float64, grad=True)} == {0}
    # V-trace's other plans: too few rows (split), time-major rows, short rows in blocks of several
    for t, n, axis in ((4096, 64, -1), (4096, rows, 0), (1000, rows, 0), (256, rows, -1)):
        assert {c[-1] for c in caps("vtrace", t, n, axis=axis, grad=True)} == {0}, (t, n, axis)
    for op in cases.OPS:
        if op not in ("vtrace", "retrace"):
            for t in (1000, 4096):
                assert {c[-1] for c in caps(op, t, grad=True)} == {0}, (op, t)


def test_split_register_caps_reach_only_their_passes(monkeypatch):
    """SPLIT_REGISTERS caps the pass of a split launch it names, by PHASE, block and
    warps, in either layout: here V-trace's adjoint PHASE 2 in time-major column blocks and in a
    single row's blocks, and GAE's forward PHASE 1. Not the other pass, not float64 scans, not rows
    scanned whole, not carry_kernel, not the other ops."""
    from conftest import enable_x64

    from rlscan_jax._src.triton import launch

    # As shipped: V-trace's adjoint PHASE 2 alone (ab_caps.sh, 2026-12-05).
    assert set(launch.SPLIT_REGISTERS) == {"vtrace_adjoint_kernel"}
    assert {k[0] for k in launch.SPLIT_REGISTERS["vtrace_adjoint_kernel"]} == {2}
    column = launch._column_plan(launch.geometry((1024, 64), 0), False, "vtrace", 0)
    single = launch.plan(launch.geometry((1, 8192), 1), vector_split=2048)
    assert (single.nseg, single.BB) > (1, 0) and not single.lookback
    caps = {
        "vtrace_adjoint_kernel": {(2, column.BT, column.BB, column.num_warps): 64},
        "gae_kernel": {(1, column.BT, column.BB, column.num_warps): 48},
    }
    caps["vtrace_adjoint_kernel"][(2, single.BT, single.BB, single.num_warps)] = 128
    monkeypatch.setattr(launch, "SPLIT_REGISTERS", caps)

    def capped(op, t, n, axis, dtype=np.float32):
        return {
            (name, c["PHASE"], c["MAXNREG"])
            for name, _, _, c in _forward_launches(op, t, n, dtype, axis, grad=True)
            if c["MAXNREG"] and c["PHASE"] in (1, 2)  # (ROW_REGISTERS caps some rows scanned whole)
        }

    for dtype in (np.float32, cases.DTYPES["bf16"]):
        assert capped("vtrace", 1024, 64, 0, dtype) == {("vtrace_adjoint_kernel", 2, 64)}, dtype
        assert capped("vtrace", 8192, 1, -1, dtype) == {("vtrace_adjoint_kernel", 2, 128)}, dtype
    assert capped("gae", 1024, 64, 0) == {("gae_kernel", 1, 48)}
    # GAE's bfloat16 rows load 2 columns a thread (COLUMN_VEC_16BIT), at half the warps: another key
    narrow = launch._column_plan(launch.geometry((1024, 64), 0), True, "gae", 0)
    assert (narrow.BT, narrow.BB, narrow.num_warps) != (column.BT, column.BB, column.num_warps)
    assert capped("gae", 1024, 64, 0, cases.DTYPES["bf16"]) == set()
    with enable_x64():
        assert capped("vtrace", 1024, 64, 0, np.float64) == set()
        assert capped("gae", 1024, 64, 0, np.float64) == set()
    assert capped("vtrace", 1024, 1024, -1) == set()  # rows scanned whole
    assert capped("vtrace", 128, 64, 0) == set()  # time-major rows scanned whole
    for op in cases.OPS:
        if op not in ("vtrace", "gae"):
            assert capped(op, 1024, 64, 0) == set(), op


def test_one_row_block_kernels_take_fewer_warps(monkeypatch):
    """ONE_ROW_BLOCK_KERNELS (as shipped: the returns' adjoint) gives the named kernels
    ONE_ROW_BLOCK_WARPS in blocks of one row for every op that launches them: the returns' adjoint
    (adjoint_kernel) then takes 4 warps where their forward (returns_kernel) keeps MAX_WARPS; blocks
    of several rows keep theirs."""
    from rlscan_jax._src.triton import launch

    assert launch.ONE_ROW_BLOCK_KERNELS == ("adjoint_kernel",)
    rows = launch.MIN_ROWS_WHOLE

    def warps(op, t, kernels):
        monkeypatch.setattr(launch, "ONE_ROW_BLOCK_KERNELS", kernels)
        return {(name, c["BB"], w) for name, _, w, c in _forward_launches(op, t, rows, np.float32, grad=True)}

    for op in ("lambda_returns", "discounted_returns"):
        forward = ("returns_kernel", 1, launch.MAX_WARPS)
        assert warps(op, 1024, ()) == {forward, ("adjoint_kernel", 1, launch.MAX_WARPS)}, op
        assert warps(op, 1024, ("adjoint_kernel",)) == {forward, ("adjoint_kernel", 1, launch.ONE_ROW_BLOCK_WARPS)}, op
        assert warps(op, 256, ("adjoint_kernel",)) == warps(op, 256, ()), op  # [256, 4] blocks
    assert warps("gae", 1024, ("adjoint_kernel",)) == warps("gae", 1024, ())  # in ONE_ROW_BLOCK_OPS already


def test_step_vector_kernels_read_one_a_step_as_a_vector():
    """γ and λ one a time step (launch.param's form 2) reach the kernels of STEP_VECTOR_KERNELS as
    form 4 (a [BT] vector) in time-major launches, and every other launch as form 2: batch-major
    and general-layout ones (tune_h200.md run 25b measured the vector load slower in batch-major;
    the general layout is untimed). In the forward and the fused backward, rows scanned in one
    pass or split; the other forms pass through unchanged."""
    from rlscan_jax._src.triton import launch

    vector = (
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
    assert launch.STEP_VECTOR_KERNELS == vector
    assert launch.param_forms("gae_kernel", 0, {"GAMMA_FULL": 2, "LAMBDA_FULL": 3, "HAS_B": True}) == {"GAMMA_FULL": 4}
    assert launch.param_forms("linear_adjoint_kernel", 0, {"B_FULL": 2, "HAS_DB": False}) == {"B_FULL": 4}
    assert launch.param_forms("gae_kernel", 1, {"GAMMA_FULL": 2}) == {}
    assert launch.param_forms("gae_kernel", 2, {"GAMMA_FULL": 2}) == {}
    assert launch.param_forms("vtrace_adjoint_kernel", 0, {"GAMMA_FULL": 2}) == {"GAMMA_FULL": 4}
    assert launch.param_forms("carry_kernel", 0, {"GAMMA_FULL": 2}) == {}  # not in the table
    for op in (op for op in cases.OP_NAMES if cases.OPS[op].has_gamma):
        keys = ("GAMMA_FULL", "LAMBDA_FULL") if cases.OPS[op].has_lambda else ("GAMMA_FULL",)
        for t, rows, axis in ((16, 64, 0), (4096, 8, 0), (16, 64, -1), (4096, 2, -1)):
            inp = cases.build(op, cases.MAIN_MODE[op], t, (rows,), axis)
            shape = inp.param_shape("time")
            params = {"gamma": np.full(shape, 0.97, np.float32)}
            if cases.OPS[op].has_lambda:
                params["lambda_"] = np.full(shape, 0.9, np.float32)
            seen = []

            def on_launch(kernel, grid, args, out_shapes, num_warps, constexprs, seen=seen, keys=keys):
                if "BT" in constexprs and not constexprs.get("HAS_B"):  # HAS_B: b an array, not γλ
                    forms = {k: constexprs[k] for k in ("B_FULL",) if k in constexprs} or {
                        k: constexprs[k] for k in keys
                    }
                    seen.append((kernel.fn.__name__, constexprs["LAYOUT"], forms))

            def loss(a, inp=inp, params=params):
                outs = cases.call(inp, "triton", {**inp.args, **params, **a})
                return sum(jnp.sum(o.astype(jnp.float32)) for o in outs)

            with triton_variants.recording(on_launch):
                jax.eval_shape(jax.grad(loss), {k: inp.args[k] for k in inp.float_names()})
            assert seen, (op, t, axis)
            for name, layout, forms in seen:
                want = 4 if layout == 0 and name in vector else 2
                assert set(forms.values()) == {want}, (op, t, axis, name, forms)
            # time-major [T, rows(, features)]: layout 0; batch-major: 1, or 2 with a feature axis
            assert ({layout for _, layout, _ in seen} == {0}) == (axis == 0), (op, t, axis, seen)


def test_time_major_vectors_where_n_is_not_a_multiple_of_16(monkeypatch):
    """Time-major blocks other than column blocks load TIME_MAJOR_CVEC (8) neighbouring columns a
    thread, or the widest power of two below it that divides N and fits the block, where N is not a
    multiple of 16, at most MAX_WARPS_TIME_MAJOR_CVEC warps then where the rows split; elsewhere, and
    in other layouts, 1.
    Long such rows of the ops in TIME_MAJOR_VECTOR_SPLIT split in three launches in blocks of
    VECTOR_SPLIT_ELEMS instead of taking the look-back."""
    from rlscan_jax._src.triton import launch

    assert launch.TIME_MAJOR_CVEC == 8
    want = {8: 8, 24: 8, 12: 4, 4: 4, 6: 2, 10: 2, 2: 2, 3: 1, 7: 1, 16: 1, 48: 1}
    for n, cvec in want.items():
        for t in (8, 100, 131072):
            g = launch.geometry((t, n), 0)
            p = launch.plan(g, op="gae")
            if n >= launch.COLUMN_MIN_N and t >= launch.COLUMN_MIN_T:
                continue  # column blocks: COLUMN_VEC's
            assert p.cvec == min(cvec, p.BB) and n % p.cvec == 0, (t, n, p)
            split = p.lookback or p.nseg * p.cps > 1
            assert p.cvec == 1 or not split or p.num_warps <= launch.MAX_WARPS_TIME_MAJOR_CVEC, (t, n, p)
            assert launch.plan(launch.geometry((n, t), 1), op="gae").cvec == 1, (t, n)
    assert launch.plan(launch.geometry((64, 2, 8), 1)).cvec == 1  # the general layout
    # Rows scanned whole keep the warps of blocks without vectors (up to MAX_WARPS_TIME_MAJOR).
    whole, plain = launch.plan(launch.geometry((128, 1000), 0)), launch.plan(launch.geometry((128, 1008), 0))
    assert whole.cvec == 8 and plain.cvec == 1 and whole.num_warps == plain.num_warps == launch.MAX_WARPS_TIME_MAJOR
    long_rows = launch.geometry((131072, 8), 0)
    monkeypatch.setattr(launch, "TIME_MAJOR_VECTOR_SPLIT", ("vtrace",))
    assert launch.plan(long_rows, op="gae").lookback
    p = launch.plan(long_rows, op="vtrace")
    assert not p.lookback and p.BT * p.BB == launch.VECTOR_SPLIT_ELEMS and p.cvec == 8, p
    assert launch.plan(launch.geometry((131072, 7), 0), op="vtrace").lookback  # no vector width
    # Without the vector width, the blocks before: the look-back, at up to MAX_WARPS_TIME_MAJOR warps.
    monkeypatch.setattr(launch, "TIME_MAJOR_CVEC", 1)
    p = launch.plan(long_rows, op="vtrace")
    assert p.cvec == 1 and p.lookback and p.num_warps == launch.MAX_WARPS_TIME_MAJOR, p


def test_time_major_vectors_at_aligned_columns_as_shipped():
    """The shipped TIME_MAJOR_CVEC_ALIGNED (tune_h200.md, run 35): time-major rows of N a multiple
    of 16 load 8 columns a thread in GAE's, the returns', Retrace's and the adjoints' kernels, in
    V-trace's forward only from 128 steps, never in linear_kernel or linear_adjoint_kernel, nor in
    split rows; N not a multiple of 16 as before (run 14)."""
    from benchmarks import kernel_resources as kr

    def cvecs(op, n, t):
        launches = kr.case_launches(op, n, t, "time_major", "fwd+bwd")
        return {x.kernel.fn.__name__: dict(x.constexprs)["CVEC"] for x in launches}

    assert cvecs("gae", 32768, 8) == {"gae_kernel": 8, "adjoint_kernel": 8}
    assert cvecs("lambda_returns", 4096, 128) == {"returns_kernel": 8, "adjoint_kernel": 8}
    assert cvecs("retrace", 65536, 16) == {"retrace_kernel": 8, "retrace_adjoint_kernel": 8}
    assert cvecs("vtrace", 65536, 16) == {"vtrace_kernel": 1, "vtrace_adjoint_kernel": 8}
    assert cvecs("vtrace", 16384, 128) == {"vtrace_kernel": 8, "vtrace_adjoint_kernel": 8}
    assert cvecs("linear_scan", 16384, 128) == {"linear_kernel": 1, "linear_adjoint_kernel": 1}
    assert cvecs("eligibility_traces", 32768, 8) == {"linear_kernel": 1}
    assert set(cvecs("gae", 16, 65536).values()) == {1}  # split rows
    assert set(cvecs("eligibility_traces", 24, 128).values()) == {8}  # N not a multiple of 16: run 14


def test_time_major_vector_split_takes_its_kernels_overrides(monkeypatch):
    """TIME_MAJOR_VECTOR_SPLIT_WARPS and _ELEMS reach the vectorised three-launch split of time-major
    rows of the kernel they name (the warps only in blocks of few columns, in splits of at least
    TIME_MAJOR_VECTOR_SPLIT_WARPS_MIN_PROGRAMS programs), and no other kernel's, nor the look-back."""
    from rlscan_jax._src.triton import launch

    long_rows = launch.geometry((131072, 8), 0)
    monkeypatch.setattr(launch, "TIME_MAJOR_VECTOR_SPLIT", ("vtrace",))
    monkeypatch.setattr(launch, "TIME_MAJOR_VECTOR_SPLIT_WARPS", {})
    monkeypatch.setattr(launch, "TIME_MAJOR_VECTOR_SPLIT_ELEMS", {})
    base = {k: launch.plan(long_rows, op="vtrace", vector_split=2048, kernel=k) for k in ("vtrace_kernel", "other")}
    assert base["vtrace_kernel"] == base["other"] and base["other"].num_warps == launch.MAX_WARPS_TIME_MAJOR_CVEC
    assert base["other"].BT * base["other"].BB == 2048 and not base["other"].lookback
    monkeypatch.setattr(launch, "TIME_MAJOR_VECTOR_SPLIT_WARPS", {"vtrace_kernel": 2})
    p = launch.plan(long_rows, op="vtrace", vector_split=2048, kernel="vtrace_kernel")
    assert p.num_warps == 2 and p.BT * p.BB == 2048 and p.nseg == 512, p
    # blocks of 4096 elements: 256 programs, fewer than TIME_MAJOR_VECTOR_SPLIT_WARPS_MIN_PROGRAMS (512)
    monkeypatch.setattr(launch, "TIME_MAJOR_VECTOR_SPLIT_ELEMS", {"vtrace_kernel": 4096})
    assert launch.TIME_MAJOR_VECTOR_SPLIT_WARPS_MIN_PROGRAMS == 512
    p = launch.plan(long_rows, op="vtrace", vector_split=2048, kernel="vtrace_kernel")
    assert p.num_warps == launch.MAX_WARPS_TIME_MAJOR_CVEC and p.BT * p.BB == 4096 and p.nseg == 256, p
    monkeypatch.setattr(launch, "TIME_MAJOR_VECTOR_SPLIT_WARPS_MIN_PROGRAMS", 256)
    p = launch.plan(long_rows, op="vtrace", vector_split=2048, kernel="vtrace_kernel")
    assert p.num_warps == 2 and p.BT * p.BB == 4096 and p.cvec == 8 and not p.lookback, p
    assert launch.plan(long_rows, op="vtrace", vector_split=2048, kernel="other") == base["other"]
    # the look-back's launches (GAE's rows) and rows without vectors keep theirs
    monkeypatch.setattr(launch, "TIME_MAJOR_VECTOR_SPLIT_WARPS", {"vtrace_kernel": 2, "gae_kernel": 2})
    monkeypatch.setattr(launch, "TIME_MAJOR_VECTOR_SPLIT_ELEMS", {"vtrace_kernel": 4096, "gae_kernel": 4096})
    gae = launch.plan(long_rows, op="gae", kernel="gae_kernel")
    assert gae.lookback and gae.num_warps == launch.MAX_WARPS_TIME_MAJOR_CVEC, gae
    seven = launch.geometry((131072, 7), 0)
    assert launch.plan(seven, op="vtrace", kernel="vtrace_kernel") == launch.plan(seven, op="vtrace", kernel="x")
    # blocks of more columns than THREAD_STEPS_MAX_COLUMNS (24 columns: [64, 32]) keep the warps
    wide = launch.plan(launch.geometry((131072, 24), 0), op="vtrace", vector_split=2048, kernel="vtrace_kernel")
    assert wide.BB > launch.THREAD_STEPS_MAX_COLUMNS and wide.cvec == 8 and not wide.lookback, wide
    assert wide.num_warps == launch.MAX_WARPS_TIME_MAJOR_CVEC, wide


def _thread_runs_layouts(ttgir: str) -> list[str]:
    """The layouts of the [VEC, R, BB] views of blocks in thread order (`common._runs`) in TTGIR."""
    layouts = dict(re.findall(r"^(#\w+) = (#ttg\.blocked<.*>)$", ttgir, re.M))
    return [layouts[name] for name in re.findall(r"tt\.reshape .* -> tensor<\d+x\d+x\d+xf\d+, (#\w+)>", ttgir)]


@pytest.mark.parametrize("op", ["gae", "retrace", "episodic_cumsum"])
def test_time_major_rows_in_thread_order(op):
    """Split time-major rows of few columns (launch.THREAD_STEPS_TIME_MAJOR, 4): at 8 × 131072 the
    look-back launches of the op's value and gradient take VEC > 1, at most the rows a thread holds
    (its block's elements over its threads and CVEC columns). Compiled for sm_90, every [VEC, R, BB]
    view of their blocks lays the VEC steps of a run out in one thread's registers (one thread and one
    warp along that axis), so that `common.scan` scans along a run without shuffles. Time-major rows
    scanned whole (128 steps) keep VEC 1."""
    from benchmarks.kernel_resources import compile_sm90
    from rlscan_jax._src.triton import launch

    assert launch.THREAD_STEPS_TIME_MAJOR == 4
    launches = []

    def on_launch(kernel, grid, args, out_shapes, num_warps, constexprs):
        if "BT" in constexprs:
            launches.append(triton_variants.variant(kernel, args, out_shapes, num_warps, constexprs))

    mode = {"episodic_cumsum": "rev-init"}.get(op, cases.MAIN_MODE[op])
    inp = cases.build(op, mode, 131072, (8,), 0, dtype=np.float32)

    def loss(a):
        return sum(jnp.sum(o.astype(jnp.float32)) for o in cases.call(inp, "triton", {**inp.args, **a}))

    with triton_variants.recording(on_launch):
        jax.eval_shape(jax.grad(loss), {k: inp.args[k] for k in inp.float_names()})
    assert len(launches) >= 2, launches  # the forward pass and the adjoint
    for v in launches:
        c = dict(v.constexprs)
        assert c["PHASE"] == 3 and c["LAYOUT"] == 0 and c["VEC"] > 1, v.name
        assert c["VEC"] <= c["BT"] * c["BB"] // (32 * v.num_warps * c["CVEC"]), v.name
        views = _thread_runs_layouts(compile_sm90(v).asm["ttgir"])
        assert views, v.name
        for layout in views:
            threads = re.search(r"threadsPerWarp = \[(\d+),", layout).group(1)
            warps = re.search(r"warpsPerCTA = \[(\d+),", layout).group(1)
            assert (threads, warps) == ("1", "1"), (v.name, layout)
    whole = _forward_launches(op, 128, 4096, np.float32, axis=0)
    assert {(c["LAYOUT"], c["VEC"]) for *_, c in whole} == {(0, 1)}, whole


def test_many_time_major_columns_of_short_rows_take_narrower_blocks():
    """Time-major rows of up to 128 steps scanned whole: blocks of MIN_ROWS_TIME_MAJOR_WHOLE_MANY
    columns from MANY_ROWS_TIME_MAJOR columns on (run 16), MIN_ROWS_TIME_MAJOR_WHOLE below and for
    the ops in MANY_ROWS_TIME_MAJOR_EXCEPT (V-trace)."""
    from rlscan_jax._src.triton import launch

    assert launch.MIN_ROWS_TIME_MAJOR_WHOLE_MANY == 8 < launch.MIN_ROWS_TIME_MAJOR_WHOLE == 16
    assert launch.MANY_ROWS_TIME_MAJOR_EXCEPT == ("vtrace",)
    for t, n, bb in ((128, 4096, 8), (128, 16384, 8), (72, 4096, 8), (128, 4095, 16), (128, 1000, 16), (64, 4096, 16)):
        for op in ("gae", "retrace", "linear_scan"):
            p = launch.plan(launch.geometry((t, n), 0), op=op)
            assert (p.BT, p.BB, p.nseg) == (launch.next_pow2(t), bb, 1), (op, t, n, p)
        p = launch.plan(launch.geometry((t, n), 0), None, None, 0, op="vtrace")
        assert p.BB == max(16, launch.BLOCK_ELEMS // launch.next_pow2(t)), (t, n, p)


def test_column_steps_of_their_own():
    """`column_bt` (V-trace's adjoint: VTRACE_ADJOINT_COLUMN_BT, off as shipped) replaces COLUMN_BT in
    time-major column blocks only: same columns, fewer steps a chunk, more segments."""
    from rlscan_jax._src.triton import launch

    assert launch.VTRACE_ADJOINT_COLUMN_BT == 0
    for shape in ((1024, 4096), (4096, 1024), (512, 16384)):
        g = launch.geometry(shape, 0)
        p, q = launch.plan(g, op="vtrace"), launch.plan(g, op="vtrace", column_bt=2)
        assert p.BT == launch.COLUMN_BT == 4 and q.BT == 2 and q.BB == p.BB, (shape, p, q)
        assert q.nseg * q.cps * q.BT >= shape[0] and q.nseg >= p.nseg, (shape, p, q)
        g = launch.geometry(shape[::-1], 1)  # batch-major rows: no column blocks, no change
        assert launch.plan(g, op="vtrace", column_bt=2) == launch.plan(g, op="vtrace"), shape


def test_splits_of_few_programs_take_smaller_blocks(monkeypatch):
    """Rows that split into fewer than SPLIT_FILL_PROGRAMS programs take blocks halved along time
    until they split into that many, or a block would hold fewer than SPLIT_FILL_MIN_ELEMS elements;
    rows that do not split, and splits of enough programs, keep their blocks."""
    from rlscan_jax._src.triton import launch

    def programs(p):
        return p.row_blocks * p.nseg * p.cps

    assert launch.SPLIT_FILL_PROGRAMS == 128 and launch.SPLIT_FILL_MIN_ELEMS == 256
    few = [((4096, 4), 0), ((16384, 4), 0), ((32768, 2), 0), ((8192, 16), 0), ((4096, 3), 0), ((65536,), 0)]
    few += [((2, 4096), 1), ((64, 2048), 1), ((3, 4096), 1)]
    others = [((131072, 8), 0), ((8, 131072), 1), ((1 << 20,), 0), ((512, 4096), 0), ((4096, 33), 0)]
    others += [((128, 1000), 0), ((128, 4096), 0), ((4096, 128), 1), ((16, 64), 0), ((1000, 7), 0)]
    for op, args in (("gae", ()), ("vtrace", (launch.SPLIT_BLOCK_ELEMS, 2048, 16))):
        shipped = {s: launch.plan(launch.geometry(*s), *args, op=op) for s in few + others}
        monkeypatch.setattr(launch, "SPLIT_FILL_PROGRAMS", 0)
        before = {s: launch.plan(launch.geometry(*s), *args, op=op) for s in few + others}
        monkeypatch.setattr(launch, "SPLIT_FILL_PROGRAMS", 128)
        for s in few + others:
            p, q = shipped[s], before[s]
            if q.nseg * q.cps == 1 or programs(q) >= 128:  # rows scanned whole, or enough programs
                assert s not in few and p == q, (op, s, p, q)
                continue
            assert programs(p) > programs(q), (op, s, p, q)
            assert p.BB == q.BB and p.BT < q.BT and q.BT % p.BT == 0, (op, s, p, q)
            assert programs(p) >= 128 or p.BT * p.BB < 2 * launch.SPLIT_FILL_MIN_ELEMS, (op, s, p)
            assert p.BT * p.BB >= launch.SPLIT_FILL_MIN_ELEMS, (op, s, p)
    # the floor: a block never halves below SPLIT_FILL_MIN_ELEMS elements
    monkeypatch.setattr(launch, "SPLIT_FILL_PROGRAMS", 1 << 20)
    for s in few:
        p = launch.plan(launch.geometry(*s))
        assert launch.SPLIT_FILL_MIN_ELEMS <= p.BT * p.BB < 2 * launch.SPLIT_FILL_MIN_ELEMS, (s, p)


def _l2_order_variants():
    """Every float32 PHASE 1 variant rebuilt walking back (launch.SUMMARY_WALK_BACK) and PHASE 2
    variant with streaming stores (STREAM_STORES), both off; time-major ones also as the widest
    column blocks."""
    from rlscan_jax._src.triton import launch

    col = launch.plan(launch.geometry((4096, 4096), 0))
    out = []
    for v in VARIANTS:
        c = dict(v.constexprs)
        if c.get("PHASE") not in (1, 2) or "*bf16" in v.types:
            continue
        flag = {"WALK_BACK": True} if c["PHASE"] == 1 else {"STREAM": True}
        out.append(triton_variants.Variant(v.kernel, v.types, tuple(sorted({**c, **flag}.items())), v.num_warps))
        if c.get("LAYOUT") == 0:
            flags = {**c, **flag, "BT": col.BT, "BB": col.BB}
            out.append(triton_variants.Variant(v.kernel, v.types, tuple(sorted(flags.items())), col.num_warps))
    assert {dict(v.constexprs)["PHASE"] for v in out} == {1, 2}
    return out


def _column_vector_variants():
    """Time-major variants rebuilt with vector loads across columns (launch.COLUMN_VEC; the shipped
    tables name only some ops): CVEC 2 and 4 in blocks of 256 columns (4 and 2 warps) for every
    PHASE 0-2 variant; in blocks of 512 (8 and 4 warps) for each kernel's first float32 PHASE 2
    variant (tune.py's cvec mode)."""
    out, seen = [], set()
    for v in VARIANTS:
        c = dict(v.constexprs)
        if c.get("LAYOUT") != 0 or c.get("PHASE") not in (0, 1, 2):
            continue
        blocks = [(256, 2), (256, 4)]
        if c["PHASE"] == 2 and "*bf16" not in v.types and v.kernel.fn.__name__ not in seen:
            seen.add(v.kernel.fn.__name__)
            blocks += [(512, 2), (512, 4)]
        for bb, cvec in blocks:
            flags = {**c, "BT": 4, "BB": bb, "CVEC": cvec}
            out.append(triton_variants.Variant(v.kernel, v.types, tuple(sorted(flags.items())), bb // (32 * cvec)))
    assert len(seen) == 9
    return out


def _time_major_vector_variants():
    """Time-major variants of split rows rebuilt with vector loads across few columns
    (launch.TIME_MAJOR_CVEC; the recorded calls reach them at the shipped blocks of rows 4096 steps
    long, with fewer chunks): the look-back (PHASE 3) in [1024, 8] blocks with CVEC 8 at 16 warps,
    PHASE 1 and 2 (the vectorised split, TIME_MAJOR_VECTOR_SPLIT) in [256, 8] blocks at 16; and,
    for each kernel's first variant of a phase, the other blocks, warps and widths of tune.py's
    narrow mode."""
    out, seen = [], set()
    for v in VARIANTS:
        c = dict(v.constexprs)
        if c.get("LAYOUT") != 0 or c.get("PHASE") not in (1, 2, 3):
            continue
        if c["PHASE"] == 3:
            blocks = [(1024, 8, 8, 16, 128)]
            more = [(512, 8, 8, 16, 256), (1024, 8, 4, 16, 128), (1024, 8, 8, 8, 128)]
        else:
            blocks = [(256, 8, 8, 16, 1)]
            more = [(256, 8, 8, 8, 1), (512, 8, 8, 16, 1), (128, 8, 8, 16, 1), (256, 8, 4, 16, 1)]
        if (v.kernel.fn.__name__, c["PHASE"]) not in seen:
            seen.add((v.kernel.fn.__name__, c["PHASE"]))
            blocks += more
        for bt, bb, cvec, warps, kp in blocks:
            flags = {**c, "BT": bt, "BB": bb, "CVEC": cvec, "KP": kp}
            out.append(triton_variants.Variant(v.kernel, v.types, tuple(sorted(flags.items())), warps))
    assert {phase for _, phase in seen} == {1, 2, 3} and len(seen) == 27, seen
    return out


@pytest.mark.parametrize(
    "variant",
    # each variant once: the rebuilt sets overlap one another (and may overlap the recorded ones)
    list(
        dict.fromkeys(
            VARIANTS
            + _largest_folds()
            + _vector_variants()
            + _column_blocks()
            + _fold_carry_variants()
            + _carry_blocks()
            + _l2_order_variants()
            + _column_vector_variants()
            + _time_major_vector_variants()
            + _trace_param_variants()
        )
    ),
    ids=lambda v: v.name,
)
def test_compiles_for_sm90(variant):
    from benchmarks.kernel_resources import compile_sm90

    compiled = compile_sm90(variant)  # as jax-triton compiles it: buffers 16-byte aligned, caps
    assert compiled.asm["cubin"], variant.name
    # Blocks hold their rows in scan order and every scan runs forward: triton lowers a reverse
    # scan with warp shuffles even along an axis a thread holds whole (tune_h200.md, run 4).
    # Vectorised rows (VEC > 1) stay ascending in memory, in vector order in the block
    # (common.vector_order), and scan forward too (run 22).
    scans = re.findall(r'"tt\.scan"[^\n]*', compiled.asm["ttgir"])
    assert not [s for s in scans if "reverse = true" in s], variant.name


def test_compiles_with_fp_fusion_whatever_tritons_default(monkeypatch):
    """jax-triton's triton_call compiles with enable_fp_fusion=True (0.3 and 0.4 alike): the PTX
    leaves float multiplies and adds free to contract (mul.f32, add.f32), and ptxas makes the
    scan's a + b·h one fma. The ahead-of-time compiles above (and kernel_resources) must compile
    the same code where triton's own default is off (triton 3.9 warns that 3.10 turns it off),
    when a multiply or add is rounded on its own (mul.rn.f32). A control compile without the
    option shows that the default really is off here."""
    import triton

    from benchmarks.kernel_resources import compile_sm90

    variant = next(v for v in VARIANTS if v.kernel.fn.__name__ == "gae_kernel" and not dict(v.constexprs)["F64"])
    lang = getattr(getattr(triton, "knobs", None), "language", None)
    if lang is not None and hasattr(lang, "default_fp_fusion"):  # triton >= 3.9
        monkeypatch.setattr(lang, "default_fp_fusion", False)
        monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")
        control = compile_sm90(variant, options={"num_warps": variant.num_warps}).asm["ptx"]
        assert "mul.rn.f32" in control and "mul.f32" not in control
    ptx = compile_sm90(variant).asm["ptx"]
    assert "mul.f32" in ptx and "add.f32" in ptx
    assert "mul.rn.f32" not in ptx and "add.rn.f32" not in ptx
