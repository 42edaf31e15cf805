"""The real `triton_call` path on a CUDA GPU, against the float64 oracle and the reference.

Selected with `-m gpu`; without a CUDA GPU and jax-triton the module is skipped. The grid of
the CPU suite runs here too (conftest adds "triton" to the implementations on a GPU); this
file adds what only a GPU can hold: large and long shapes, bfloat16, the split of long rows,
determinism, int64 offsets, and one launch per vmapped call.
"""

from __future__ import annotations

import re

import cases
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from rlscan_jax._src import dispatch

pytestmark = pytest.mark.gpu

if dispatch.interpret_mode():
    pytest.skip("needs a CUDA GPU with jax-triton, not the Triton interpreter", allow_module_level=True)
if dispatch.triton_unavailable_reason() is not None:
    pytest.skip(f"needs a CUDA GPU with jax-triton: {dispatch.triton_unavailable_reason()}", allow_module_level=True)

# (T, batch): short horizons with many rows, medium, and long rows split across programs; 1000
# and 24 environments time-major load 8 columns a thread in rows scanned whole (TIME_MAJOR_CVEC),
# and so do 4096 and 1024 in the kernels TIME_MAJOR_CVEC_ALIGNED names.
ORACLE_SHAPES = (
    (1, (1,)),
    (2, (3,)),
    (63, (5,)),
    (1000, (7,)),
    (16, (4096,)),
    (128, (1024,)),
    (4096, (33,)),
    (128, (1000,)),
    (37, (24,)),
    (100, (4104,)),  # rows of up to 128 steps, many columns: [128, 8] blocks (launch.MANY_ROWS_TIME_MAJOR)
)
LARGE_SHAPES = ((8, (32768,)), (16, (65536,)), (512, (16384,)), (4096, (512,)), (131072, (8,)), (1048576, ()))
LAYOUTS = (0, -1)


def _case(op, mode, T, batch, axis, g=0.95, lam=0.9):
    spec = cases.OPS[op]
    return cases.Case(op, mode, T, batch, axis, g if spec.has_gamma else None, lam if spec.has_lambda else None)


def _grid(shapes):
    return [
        _case(op, mode, T, batch, axis)
        for op, spec in cases.OPS.items()
        for mode in (cases.MAIN_MODE[op], cases.OTHER_MODE[op])
        for T, batch in shapes
        for axis in LAYOUTS
        if not (axis and not batch)
    ]


@pytest.mark.parametrize("case", _grid(ORACLE_SHAPES), ids=str)
def test_matches_oracle(case):
    inp = case.build()
    cases.assert_close(cases.call(inp, "triton"), cases.call_oracle(inp), np.float32, msg=case.id)


# Batch-major bfloat16 rows of 128-1024 steps scanned whole in the 16-bit blocks of their kernel
# (launch.BLOCK_ELEMS_16BIT): 37 rows leave the last block part empty.
BF16_BLOCK_SHAPES = ((128, (1024,)), (512, (37,)), (1024, (37,)))


@pytest.mark.parametrize("case", [c for c in _grid(BF16_BLOCK_SHAPES) if c.axis and "feat" not in c.mode], ids=str)
def test_bfloat16_batch_major_blocks_match_oracle(case):
    inp = case.build(dtype=jnp.bfloat16)
    out = cases.call(inp, "triton")
    assert all(o.dtype == jnp.bfloat16 for o in out)
    cases.assert_close(out, cases.call_oracle(inp), jnp.bfloat16, msg=case.id)


@pytest.mark.parametrize("case", [c for c in _grid(ORACLE_SHAPES) if c.T in (63, 4096)], ids=str)
def test_bfloat16_matches_oracle(case):
    inp = case.build(dtype=jnp.bfloat16)
    out = cases.call(inp, "triton")
    assert all(o.dtype == jnp.bfloat16 for o in out)
    cases.assert_close(out, cases.call_oracle(inp), jnp.bfloat16, msg=case.id)


@pytest.mark.parametrize("case", _grid(LARGE_SHAPES), ids=str)
def test_large_matches_reference(case):
    inp = case.build()
    cases.assert_close(cases.call(inp, "triton"), cases.call(inp, "associative"), np.float32, msg=case.id)


def _grads(inp, implementation, weights):
    names = inp.float_names()

    def loss(*floats):
        args = dict(inp.args)
        args.update(zip(names, floats))
        return sum(jnp.sum(o.astype(jnp.float32) * w) for o, w in zip(cases.call(inp, implementation, args), weights))

    floats = [jnp.asarray(inp.args[k]) for k in names]
    return jax.grad(loss, argnums=tuple(range(len(names))))(*floats)


GRAD_SHAPES = ((63, (5,)), (4096, (33,)), (4096, (512,)), (131072, (2,)), (128, (1000,)), (100, (4104,)))


@pytest.mark.parametrize("case", _grid(GRAD_SHAPES), ids=str)
def test_gradients_match_reference(case):
    inp = case.build()
    rng = np.random.default_rng(cases.seed_of(case.id))
    weights = [rng.normal(size=o.shape).astype(np.float32) for o in cases.call(inp, "associative")]
    got = _grads(inp, "triton", weights)
    want = _grads(inp, "associative", weights)
    cases.assert_close(got, want, np.float32, msg=case.id)


# The fused backward writes the gradients of only the inputs the differentiation involves, and
# reads no cotangent of an unused second output (ops.SELECTIVE): each input alone, γ and λ alone
# (a meta-gradient), and GAE's and V-trace's outputs alone, in a split time-major scan (4096x33),
# a one-pass one (128x1000) and batch-major rows, log ρ away from the clip as below; which stores
# each launch makes is the interpreter's test_gradients_of_some_inputs.
SUBSET_CASES = ((4096, (33,), 0), (128, (1000,), 0), (4096, (33,), -1))
# γ's and λ's gradients alone are single sums over every step (135168 at 4096x33), held to 1e-4
# relative to the reference's, not to the elementwise float32 tolerance (4e-5 of such a value).
# Through the interpreter, V-trace's at 4096x33 batch-major were 2.2e-5 off `associative`, whose
# own float32 error was 9.4e-7 (tests/gpu_runs/README.md, forty-first session); V-trace 4096x33
# batch-major failed on an H100 with every gradient at the elementwise tolerance, most likely γ's
# or λ's. That sum is ill-conditioned (relative condition number about 500 in γ): rounding γ and
# λ to float32 alone moves the exact gradient by 1.9e-5, the kernels' own arithmetic 2.6e-6, and
# associative's small error is a cancellation of larger ones (forty-second session,
# vtrace_param_error.py).
PARAM_SUM_RTOL = 1e-4


@pytest.mark.parametrize("T, batch, axis", SUBSET_CASES, ids=str)
@pytest.mark.parametrize("op", ["gae", "vtrace", "retrace", "lambda_returns", "discounted_returns"])
def test_gradients_of_some_inputs(op, T, batch, axis):
    mode = cases.MAIN_MODE[op] if axis == 0 else cases.OTHER_MODE[op]
    inp = _case(op, mode, T, batch, axis).build()
    _away_from_the_clip(inp)
    rng = np.random.default_rng(cases.seed_of(f"{op}-{T}-{batch}-{axis} some inputs"))
    weights = [rng.normal(size=o.shape).astype(np.float32) for o in cases.call(inp, "associative")]
    inputs = inp.float_names()
    choices = [((k,), range(len(weights))) for k in inputs]
    choices.append(((k for k in ("gamma", "lambda_") if inp.args.get(k) is not None), range(len(weights))))
    if len(weights) == 2:
        choices += [(inputs, (0,)), (inputs, (1,))]
    for wrt, used in choices:
        wrt, used = tuple(wrt), tuple(used)

        def grads(implementation, wrt=wrt, used=used):
            def loss(fl):
                outs = cases.call(inp, implementation, {**inp.args, **fl})
                return sum(jnp.sum(outs[i] * weights[i]) for i in used)

            return jax.grad(loss)({k: jnp.asarray(inp.args[k], jnp.float32) for k in wrt})

        got, want = grads("triton"), grads("associative")
        for k in wrt:
            msg = f"{op} {T}x{batch} axis {axis} d/d{k} of {used}"
            if k in ("gamma", "lambda_"):
                np.testing.assert_allclose(np.asarray(got[k]), np.asarray(want[k]), rtol=PARAM_SUM_RTOL, err_msg=msg)
            else:
                cases.assert_close(got[k], want[k], np.float32, msg=msg)


# γ and λ one a row and one a time step (launch.param's forms 3 and 2) in time-major scans of every
# plan: look-back (131072x7, 32768x7), split rows (4096x33) and one pass (128x1000), with γ a float
# and a full array of the same value as controls. log ρ is kept 1e-6 away from 0: at ρ = 1 = the
# clip, min's derivative is ½, and the GPU's exp rounds log ρ = -8e-8 to exactly 1 where XLA's
# does not (tests/gpu_runs/README.md, the off-policy memcheck run of 2026-12-03).
SHARED_PARAM_SHAPES = ((131072, (7,)), (32768, (7,)), (4096, (33,)), (128, (1000,)))


@pytest.mark.parametrize("form", ["float", "full", "row", "time"])
@pytest.mark.parametrize("T, batch", SHARED_PARAM_SHAPES, ids=str)
@pytest.mark.parametrize("op", [op for op, spec in cases.OPS.items() if spec.has_gamma])
def test_gradients_with_shared_parameters(op, T, batch, form):
    inp = _case(op, cases.MAIN_MODE[op], T, batch, 0, g=0.97).build()
    if form != "float":
        shape = inp.param_shape(form)
        for k in ("gamma", "lambda_"):
            if isinstance(inp.args.get(k), float):
                inp.args[k] = np.full(shape, inp.args[k], np.float32)
    _compare_gradients(inp, np.float32, f"{op} {T}x{batch} {form}")


def _away_from_the_clip(inp):
    """log ρ moved 1e-6 away from 0 (above), in place."""
    if "log_rhos" in inp.args:
        lr = np.asarray(inp.args["log_rhos"], np.float32)
        lr = np.where(np.abs(lr) < 1e-6, np.where(lr < 0, -1e-6, 1e-6), lr)
        inp.args["log_rhos"] = jnp.asarray(lr, jnp.asarray(inp.args["log_rhos"]).dtype)


def _compare_gradients(inp, dtype, tag, params_dtype=None):
    """Every floating input's gradient (γ and λ where arrays) from the kernels against the
    reference's, within `dtype`'s tolerance; γ, λ and linear_scan's b within `params_dtype`'s
    where given, widened for a gradient of a 16-bit parameter by one unit in the last place of its
    dtype (two sums that agree in float32 can round to neighbouring 16-bit values). log ρ is first
    moved 1e-6 away from 0 (above)."""
    _away_from_the_clip(inp)
    rng = np.random.default_rng(cases.seed_of(tag))
    weights = [rng.normal(size=o.shape).astype(np.float32) for o in cases.call(inp, "associative")]
    got = _grads(inp, "triton", weights)
    want = _grads(inp, "associative", weights)
    for name, g, w in zip(inp.float_names(), got, want, strict=True):
        if params_dtype is None or name not in ("gamma", "lambda_", "b"):
            cases.assert_close(g, w, dtype, msg=f"{tag}: d/d{name}")
            continue
        tol = cases.tolerance(params_dtype)
        ulp = float(jnp.finfo(g.dtype).eps) if jnp.finfo(g.dtype).bits < 32 else 0.0  # ulp(x) <= eps·|x|
        g, w = np.asarray(g, np.float64), np.asarray(w, np.float64)
        scale = max(1.0, np.abs(w).max(initial=0.0))
        np.testing.assert_allclose(g, w, rtol=tol["rtol"] + ulp, atol=tol["atol"] * scale, err_msg=f"{tag}: d/d{name}")


# bfloat16 inputs with γ and λ traced as one value, one a row or one a time step (linear_scan: b
# likewise): such a parameter's gradient sums u·h over its steps, with h the scan again in float32
# (ops.py, param_residual), not the forward pass's 16-bit output. Both implementations then sum
# the same float32 terms (the cotangent is the same bfloat16 rounding of the weights), so these
# gradients are held to float32's tolerance, linear_scan's d/db (bfloat16, as b is) to one unit in
# its last place more: at 131072x7 with b one a step it failed float32's on an H100 (2026-12-05),
# and through the interpreter d/db_82029 was -2.609375 against -2.625, neighbouring bfloat16
# values. The other gradients are held to bfloat16's tolerance. With the 16-bit h, 36 such
# cases through the interpreter (33x5 and 200x3) were up to 1.6e-2 off the reference (scaled by
# max(1, |d|)), 3.7e-6 with the float32 h; linear_scan's d/db at seed 397 of
# test_random_combinations was 5.9 % off the exact value.
BF16_PARAM_CASES = ((4096, (33,), 0), (128, (1000,), 0), (131072, (7,), 0), (4096, (33,), -1))
_LINEAR_SCAN_FORM = {"traced": "rev-scalar", "row": "fwd-row", "time": "rev-bcast"}


@pytest.mark.parametrize("form", ["traced", "row", "time"])
@pytest.mark.parametrize("T, batch, axis", BF16_PARAM_CASES, ids=str)
@pytest.mark.parametrize("op", [op for op, spec in cases.OPS.items() if spec.has_gamma] + ["linear_scan"])
def test_bfloat16_parameter_gradients(op, T, batch, axis, form):
    if op == "linear_scan":
        inp = _case(op, _LINEAR_SCAN_FORM[form], T, batch, axis).build(dtype=jnp.bfloat16)
    else:
        inp = _case(op, cases.MAIN_MODE[op], T, batch, axis, g=0.97).build(dtype=jnp.bfloat16)
        rng = np.random.default_rng(cases.seed_of(f"{op}-{T}-{batch}-{axis}-{form}"))
        for k in ("gamma", "lambda_"):
            if isinstance(inp.args.get(k), float):
                shape = () if form == "traced" else inp.param_shape(form)
                inp.args[k] = rng.uniform(0.9, 1.0, size=shape).astype(np.float32)
    _compare_gradients(inp, jnp.bfloat16, f"{op} {T}x{batch} axis {axis} {form}", params_dtype=np.float32)


# Eligibility traces' γ and λ summed in their adjoint launch (linear_kernel's DECAY_GRAD, the
# forty-fourth session; launch.FUSED_TRACE_PARAM_GRADS, turned on here): without an initial trace
# (mode "done"; the other modes give one, and keep u and the reference's vjp), one value (traced),
# one a row and one a time step, in every plan (SHARED_PARAM_SHAPES time-major, and batch-major
# rows), float32 and bfloat16 inputs, every gradient against the reference's as
# test_bfloat16_parameter_gradients holds them.
TRACE_PARAM_CASES = (*((T, b, 0) for T, b in SHARED_PARAM_SHAPES), (4096, (33,), -1), (131072, (2,), -1))


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("form", ["traced", "row", "time"])
@pytest.mark.parametrize("T, batch, axis", TRACE_PARAM_CASES, ids=str)
def test_trace_parameter_gradients(T, batch, axis, form, dtype, monkeypatch):
    from rlscan_jax._src.triton import launch

    monkeypatch.setattr(launch, "FUSED_TRACE_PARAM_GRADS", (0, 1, 2))  # every layout (shipped: batch-major)
    dt = np.float32 if dtype == "f32" else jnp.bfloat16
    inp = _case("eligibility_traces", "done", T, batch, axis).build(dtype=dt)
    rng = np.random.default_rng(cases.seed_of(f"traces-{T}-{batch}-{axis}-{form}-{dtype}"))
    for k in ("gamma", "lambda_"):
        shape = () if form == "traced" else inp.param_shape(form)
        inp.args[k] = rng.uniform(0.9, 1.0, size=shape).astype(np.float32)
    _compare_gradients(inp, dt, f"traces {T}x{batch} axis {axis} {form} {dtype}", params_dtype=np.float32)


@pytest.mark.parametrize("T, batch", ((128, (4096,)), (131072, (8,))), ids=["one-pass", "split"])
@pytest.mark.parametrize("op", cases.OP_NAMES)
def test_deterministic(op, T, batch):
    """Repeated calls give bitwise-identical outputs and gradients."""
    inp = _case(op, cases.MAIN_MODE[op], T, batch, 0).build()
    rng = np.random.default_rng(0)
    weights = [rng.normal(size=o.shape).astype(np.float32) for o in cases.call(inp, "triton")]
    first = (cases.call(inp, "triton"), _grads(inp, "triton", weights))
    for _ in range(3):
        cases.assert_equal(cases.call(inp, "triton"), first[0])
        cases.assert_equal(_grads(inp, "triton", weights), first[1])


def _launches(fn, *args) -> int:
    """Kernel launches in the compiled program (after XLA removed what nothing uses).

    jax-triton 0.3.x names its custom call "triton_kernel_call", 0.4.x "triton_kernel_call_ffi".
    """
    hlo = jax.jit(fn).lower(*args).compile().as_text()
    return len(re.findall(r'custom_call_target="triton_kernel_call(?:_ffi)?"', hlo))


def _targets(fn, *args) -> list[str]:
    """The Triton custom-call targets in the compiled program, in order."""
    hlo = jax.jit(fn).lower(*args).compile().as_text()
    return re.findall(r'custom_call_target="(triton_kernel_call(?:_ffi)?)"', hlo)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize(
    "op, T, kernel, grad",
    (
        ("vtrace", 4096, "vtrace_kernel", False),
        ("vtrace", 1000, "vtrace_kernel", False),
        ("retrace", 4096, "retrace_adjoint_kernel", True),
    ),
    ids=str,
)
def test_register_caps_compile_into_the_ptx(op, T, kernel, grad, dtype, tmp_path, monkeypatch):
    """Batch-major rows scanned whole, 512 of them, where launch.ROW_REGISTERS caps a launch (V-trace's
    forward in [4096, 1] and [1024, 1] blocks; Retrace's adjoint in [4096, 1] blocks of float32
    rows, at 16 warps: its bfloat16 rows take 8, uncapped): the PTX that jax-triton compiles for the
    kernel carries the cap (.maxnreg 64, custom_call's rule) where that rule is installed, and no
    cap otherwise; the outputs match the oracle and the gradients the reference either way."""
    from jax_triton import triton_lib

    from rlscan_jax._src.triton import batching, custom_call, ops

    inp = _case(op, cases.MAIN_MODE[op], T, (512,), -1).build(dtype=cases.DTYPES[dtype])
    monkeypatch.setattr(triton_lib, "_JAX_TRITON_DUMP_DIR", str(tmp_path))
    monkeypatch.setattr(triton_lib, "_COMPILED_KERNEL_CACHE", {})  # compile again, into the dump
    jax.clear_caches()
    batching.launcher.cache_clear()
    ops._op.cache_clear()
    if grad:
        rng = np.random.default_rng(cases.seed_of(f"{op}{T}{dtype}"))
        weights = [rng.normal(size=o.shape).astype(np.float32) for o in cases.call(inp, "associative")]
        want = _grads(inp, "associative", weights)
        cases.assert_close(_grads(inp, "triton", weights), want, cases.DTYPES[dtype], msg=dtype)
    else:
        cases.assert_close(cases.call(inp, "triton"), cases.call_oracle(inp), cases.DTYPES[dtype], msg=dtype)
    ptx = [p.read_text() for p in tmp_path.rglob(f"{kernel}.ptx")]
    assert len(ptx) == 1, [str(p) for p in tmp_path.rglob("*.ptx")]
    capped = custom_call._install() and (op == "vtrace" or dtype == "f32")  # the rule that applies it
    assert re.findall(r"\.maxnreg \d+", ptx[0]) == ([".maxnreg 64"] if capped else []), dtype
    jax.clear_caches()


@pytest.mark.parametrize("T, batch, axis", ((128, (1000,), 0), (4096, (33,), -1), (131072, (8,), 0)), ids=str)
@pytest.mark.parametrize("op", cases.OP_NAMES)
def test_ffi_custom_call_matches_legacy(op, T, batch, axis, monkeypatch):
    """Launches lower to jaxlib's typed-FFI call, and jax-triton 0.3.x's own legacy call (where it is
    the installed one) gives bitwise the same outputs and gradients, rows split or whole."""
    from rlscan_jax._src.triton import custom_call, launch

    inp = _case(op, cases.MAIN_MODE[op], T, batch, axis).build()
    rng = np.random.default_rng(cases.seed_of(op))
    weights = [rng.normal(size=o.shape).astype(np.float32) for o in cases.call(inp, "associative")]
    names = inp.float_names()
    floats = [jnp.asarray(inp.args[k]) for k in names]

    def value_and_grads(*xs):
        args = {**inp.args, **dict(zip(names, xs))}
        return cases.call(inp, "triton", args), _grads(inp, "triton", weights)

    monkeypatch.setattr(launch, "FFI_CUSTOM_CALL", True)
    jax.clear_caches()
    targets = _targets(value_and_grads, *floats)
    assert targets and set(targets) == {custom_call.FFI_TARGET}, targets
    ffi = value_and_grads(*floats)
    cases.assert_close(ffi[0], cases.call_oracle(inp), np.float32, msg=f"{op} FFI")
    legacy_target = custom_call.target_name(True) == custom_call.FFI_TARGET  # jax-triton 0.3.x
    if not legacy_target:
        return  # jax-triton 0.4.x emits only the FFI call: nothing to compare against
    monkeypatch.setattr(launch, "FFI_CUSTOM_CALL", False)
    jax.clear_caches()
    assert set(_targets(value_and_grads, *floats)) == {custom_call.LEGACY_TARGET}
    cases.assert_equal(tuple(jax.tree.leaves(value_and_grads(*floats))), tuple(jax.tree.leaves(ffi)))
    jax.clear_caches()


def test_vmap_folds_into_one_launch():
    import rlscan_jax

    rng = np.random.default_rng(0)
    r = jnp.asarray(rng.normal(size=(6, 128, 512)), jnp.float32)
    v = jnp.asarray(rng.normal(size=(6, 128, 512)), jnp.float32)
    boot = jnp.asarray(rng.normal(size=(6, 512)), jnp.float32)
    gammas = jnp.linspace(0.9, 0.99, 6)

    def one(r_, v_, b_, g_):
        return rlscan_jax.gae(r_, v_, bootstrap_value=b_, gamma=g_, implementation="triton").advantages

    def ref(r_, v_, b_, g_):
        return rlscan_jax.gae(r_, v_, bootstrap_value=b_, gamma=g_, implementation="associative").advantages

    batched = jax.vmap(jax.vmap(one, in_axes=(1, 1, 0, None), out_axes=1), in_axes=(0, 0, 0, 0))
    assert _launches(batched, r, v, boot, gammas) == 1
    want = jax.vmap(jax.vmap(ref, in_axes=(1, 1, 0, None), out_axes=1), in_axes=(0, 0, 0, 0))(r, v, boot, gammas)
    cases.assert_close(batched(r, v, boot, gammas), want, np.float32)

    def loss(r_, v_, b_):
        return jnp.sum(one(r_, v_, b_, 0.99) ** 2)

    vg = jax.vmap(jax.grad(loss))
    assert _launches(vg, r, v, boot) == 2  # the forward kernel and the adjoint scan

    def body(i, acc):
        return acc + one(r[i], v[i], boot[i], 0.99)

    looped = jax.jit(lambda: jax.lax.fori_loop(0, 6, body, jnp.zeros((128, 512))))
    want = sum(ref(r[i], v[i], boot[i], 0.99) for i in range(6))
    cases.assert_close(looped(), want, np.float32)


def test_no_recompile_on_new_gamma():
    import rlscan_jax

    f = jax.jit(lambda r, v, g: rlscan_jax.gae(r, v, bootstrap_value=v[-1], gamma=g, implementation="triton"))
    r = jnp.ones((64, 32))
    f(r, r, 0.9)
    f(r, r, 0.5)
    assert f._cache_size() == 1


@pytest.mark.parametrize("axis", LAYOUTS)
def test_int64_offsets(axis):
    """N·T above 2^31 elements: offsets past int32 stay right (compared on edge rows)."""
    import rlscan_jax

    T, N = 32768, 65540  # 2_147_614_720 elements
    shape = (T, N) if axis == 0 else (N, T)
    key = jax.random.PRNGKey(0)
    rewards = jax.random.normal(key, shape, jnp.float32)
    done = jax.random.bernoulli(key, 0.01, shape)
    out = rlscan_jax.discounted_returns(rewards, terminated=done, gamma=0.99, time_axis=axis, implementation="triton")
    cols = np.r_[0:4, N - 4 : N]
    take = (lambda x: x[:, cols]) if axis == 0 else (lambda x: x[cols])
    want = rlscan_jax.discounted_returns(
        take(rewards), terminated=take(done), gamma=0.99, time_axis=axis, implementation="associative"
    )
    cases.assert_close(take(out), want, np.float32)
