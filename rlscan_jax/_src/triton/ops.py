"""The Triton implementation of every op: a `custom_vjp` over the fused forward kernel.

    forward:   one fused kernel (launcher.forward) reads the raw inputs and writes the outputs.
    backward:  the reference's own `finalize` and `coefficients` give, by jax.vjp, the cotangent
               of the scan state and the map from (da, db) to the inputs' cotangents (elementwise
               work that XLA fuses); in between, the adjoint recurrence
                   u_t = g_t + [not r_{t∓1}] · b_{t∓1} · u_{t∓1}
               runs in the opposite direction on the Triton linear-scan kernel, and
                   da_t = u_t,   db_t = [not r_t] · u_t · h_{t±1}.

For the ops in FUSED_BACKWARD the backward pass is instead one fused launch
(launchers/adjoint.py): the adjoint scan reads the output cotangents and the raw flags and
writes the inputs' gradients in their dtypes, with none of the elementwise passes around it. Where
a parameter (γ, λ) is differentiated (traced when the op was called, and perturbed: the
custom_vjp's symbolic zeros tell), the launch of GAE, λ-returns, discounted returns, V-trace,
Retrace and linear_scan also writes the parameters' gradients, summed in registers from the
forward pass's state (float32, rerun where the output is 16-bit: param_residual), except where
_param_grads_fused says otherwise (a clip threshold differentiated; time-major rows with a
parameter one a time step); there, and for eligibility traces, the launch writes u, from which
the reference's vjp gives them as above. The launches of the ops in SELECTIVE write the
gradients of only the inputs the differentiation involves (a rollout's rewards, a meta-gradient's
inputs: no pass), and read no cotangent of an unused output.

The launchers carry the `custom_vmap` rule (batching.py); `custom_vjp` sits outside them,
never on the same function (jax issue 14150).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.custom_derivatives import CustomVJPPrimal, SymbolicZero

from rlscan_jax._src import checks, core
from rlscan_jax._src.reference import common
from rlscan_jax._src.triton import batching, launch


def _is_float(v) -> bool:
    return v is not None and jnp.issubdtype(v.dtype, jnp.floating)


# Episode flags: bool or any numeric dtype, floating included (DESIGN.md §2), never differentiated.
FLAGS = ("terminated", "truncated", "done")


def _split(x: dict) -> tuple[dict, dict]:
    """Floating inputs (differentiated) and the rest (flags of any dtype, absent inputs)."""
    floats = {k: v for k, v in x.items() if _is_float(v) and k not in FLAGS}
    rest = {k: v for k, v in x.items() if k not in floats}
    return floats, rest


def _zero_cotangent(v):
    """A flag's cotangent: zeros of its own dtype where that is floating, else float0."""
    if v is None:
        return None
    if _is_float(v):
        return jnp.zeros_like(v)
    return np.zeros(v.shape, dtype=jax.dtypes.float0)


def _all_varying(tree) -> frozenset:
    return frozenset().union(*(_varying(v) for v in jax.tree.leaves(tree)))


def _launch(op: str, axis: int, reverse: bool, out_dtype, with_h: bool, x: dict, p: dict):
    """A launcher call whose outputs vary along the manual axes of its inputs, as they do: a
    custom call's outputs carry no such type by themselves."""
    outs = batching.launcher(op, axis, reverse, out_dtype, with_h)(x, p)
    axes = _all_varying((x, p))
    return _to_varying(outs, axes) if axes else outs


# The ops whose backward pass is one fused launch (launchers/adjoint.py); eligibility traces only
# where γλ is the same at every step (one value, or one a row: the adjoint's b is then the same at
# t and t+1).
FUSED_BACKWARD = (
    "gae",
    "lambda_returns",
    "discounted_returns",
    "eligibility_traces",
    "episodic_cumsum",
    "vtrace",
    "retrace",
    "linear_scan",
)

# The inputs that a fused backward reads besides the cotangents and flags (and then h, the
# forward pass's residual: V-trace's vs - V in float32, Retrace's G, linear_scan's h).
_BACKWARD_READS = {
    "vtrace": ("rewards", "values", "log_rhos", "next_values", "bootstrap_value"),
    "retrace": ("q_values", "log_rhos"),
    "linear_scan": ("b", "initial"),
}


# The ops whose fused backward writes the parameters' gradients too, with no u: linear_scan's b of
# a smaller shape than a (d b summed to its shape), and with launch.FUSED_PARAM_GRADS the returns'
# γ and λ (adjoint_kernel sums them in registers, from the forward pass's float32 state and v').
_PARAM_GRADS = ("linear_scan",)
_PARAM_GRADS_RETURNS = ("gae", "lambda_returns", "discounted_returns")
# V-trace's and Retrace's γ and λ likewise, where no clip threshold is differentiated (their
# gradients then come from u and the reference's vjp).
_PARAM_GRADS_OFFPOLICY = ("vtrace", "retrace")
_PARAM_GRADS_DISCOUNTS = ("gamma", "lambda_")
# What the fused backward reads for the parameters' gradients besides its other inputs (and h, the
# float32 state): adjoint_kernel v' (from next_values, or values and the bootstrap), Retrace's
# next_values; vtrace_adjoint_kernel reads v' already.
_PARAM_READS = {
    **dict.fromkeys(_PARAM_GRADS_RETURNS, ("values", "next_values", "bootstrap_value")),
    "retrace": ("next_values",),
}

# The ops whose fused backward writes the gradients of only the inputs (and parameters) that the
# differentiation involves (the custom_vjp's symbolic zeros tell), and reads no cotangent of an
# unused second output: a rollout's rewards, or a meta-gradient's inputs, cost no pass.
SELECTIVE = (*_PARAM_GRADS_RETURNS, "vtrace", "retrace")


def _param_grads_fused(op: str, x: dict, p: dict, axis: int, wrt: frozenset) -> bool:
    """Whether the op's fused backward writes its parameters' gradients for these inputs (`wrt`:
    those the differentiation involves). The returns', V-trace's and Retrace's time-major rows keep
    u and the reference's vjp where a parameter is neither one value nor one a row: their kernel
    then writes an array of the steps' shape for each parameter, which measured slower (one a time
    step at 4096x1024 on an H100, 2026-12-06: GAE 0.97x float32 and 0.89x bfloat16, λ-returns
    0.85-0.88x; batch-major 1.13-1.50x faster). V-trace and Retrace take the returns' rule; timed
    with γ and λ one value each, differentiated alone (4096x1024 float32 on an H100, 2026-12-06:
    V-trace 1.55x time-major, 1.89x batch-major; Retrace 1.37x, 1.69x), not one a time step.
    Eligibility traces take the returns' rule too (their adjoint launch, linear_kernel's
    DECAY_GRAD) in the layouts of launch.FUSED_TRACE_PARAM_GRADS (batch-major rows, as timed),
    where no initial trace is given: its gradient's edge term keeps u."""
    if op in _PARAM_GRADS:
        return True
    if op == "eligibility_traces":  # with no initial value (e_{-1} = 0: kernels/linear.py)
        layout = launch.geometry(x["inputs"].shape, axis).layout
        if not launch.FUSED_PARAM_GRADS or layout not in launch.FUSED_TRACE_PARAM_GRADS or x.get("initial") is not None:
            return False
        step = (x["inputs"] if x.get("done") is None else x["done"]).shape
        if layout != 0:
            return True
        return all(launch.param(v, step, axis % len(step))[1] in (0, 3) for v in p.values())
    if op in _PARAM_GRADS_OFFPOLICY:
        if any(k in wrt for k in p if k not in _PARAM_GRADS_DISCOUNTS):
            return False
        p = {k: v for k, v in p.items() if k in _PARAM_GRADS_DISCOUNTS}
    elif op not in _PARAM_GRADS_RETURNS:
        return False
    if not launch.FUSED_PARAM_GRADS:
        return False
    shape = x["rewards"].shape
    if launch.geometry(shape, axis).layout != 0:
        return True
    return all(launch.param(v, shape, axis)[1] in (0, 3) for v in p.values())


def _adjoint(g_h, b, reset, *, axis, reverse, decay=None):
    """u of the recurrence h_t = a_t + [not r_t] b_t h_{t∓1} (∓: reverse / forward).

    `decay`: the op's b as given where that is of a smaller shape than the steps' (one value,
    one a step or one a row; None otherwise). The adjoint scan then takes it as a parameter
    (launch.param), shifted by a step where it varies in time: b, shifted, is not written out as
    an array for it to read. The shift only matters at the window edge, where the adjoint scan
    starts from zero, for a b the same at every step.
    """
    shift = common.shift_prev if reverse else common.shift_next
    r_adj = None if reset is None else shift(reset, axis, True)
    if decay is not None and decay.shape == g_h.shape:
        decay = None  # an array of the steps' shape: b itself
    elif decay is not None:
        decay = common.shift_param(decay, g_h.ndim, axis, shift)
    if decay is None:
        x, p = {"a": g_h, "b": shift(b, axis, 0.0), "reset": r_adj, "initial": None}, {}
    else:
        x, p = {"a": g_h, "b": None, "reset": r_adj, "initial": None}, {"decay": decay}
    u, _ = _launch("linear_scan", axis, not reverse, jnp.dtype(g_h.dtype), False, x, p)
    return u


def _db(u, reset, h, *, axis, reverse):
    """db_t = [not r_t] · u_t · h_{t∓1}."""
    db = u * (common.shift_next if reverse else common.shift_prev)(h, axis, 0.0)
    if reset is not None:
        db = jnp.where(reset, jnp.zeros_like(db), db)
    return db


def _per_step_array(v, x: dict, axis: int) -> bool:
    """Whether a parameter of eligibility traces takes more than one value along time and along
    another axis of its per-step shape (done's, or the inputs' where there is no done): its fused
    adjoint would read it a step later from a shifted copy, a pass over an array of the steps'
    size, which was not measured against the reference's vjp (it is for one a time step)."""
    rank = (x["inputs"] if x.get("done") is None else x["done"]).ndim
    full = (1,) * (rank - v.ndim) + tuple(v.shape)
    t = axis % rank
    return full[t] > 1 and any(d > 1 for i, d in enumerate(full) if i != t)


def _fused_backward(
    op: str, axis: int, reverse: bool, x: dict, p: dict, h, g, store_u: bool, wrt: frozenset, in_launch: bool
):
    """The inputs' floating gradients from one fused launch, and u where `store_u` (else None);
    None where the op has no fused backward for these inputs. `h`: the forward pass's residual.
    Where `in_launch` (_param_grads_fused for these inputs), `store_u` asks for the parameters'
    gradients instead of u.

    `wrt`: the inputs and parameters that the differentiation involves. The ops in SELECTIVE write
    only those inputs' gradients (the launcher's `grads` names the others with None: given, not
    written); a cotangent of None (an unused output of GAE or V-trace) is not read."""
    xf, _ = _split(x)
    if not launch.FUSED_BACKWARD or op not in FUSED_BACKWARD:
        return None
    if op == "eligibility_traces" and any(_per_step_array(v, x, axis) for v in p.values()):
        return None
    if op in ("gae", "vtrace"):
        xg = {"g": g[0], "g2": g[1]}
    else:
        xg = {"g": g}
    if op in _BACKWARD_READS:
        xg.update({k: x[k] for k in _BACKWARD_READS[op]}, h=h)
    xg.update({k: x[k] for k in FLAGS if k in x})
    selective = op in SELECTIVE
    grads = {k: jnp.dtype(v.dtype) if k in wrt or not selective else None for k, v in xf.items()}
    if in_launch and store_u:  # the launch writes the parameters' gradients itself
        grads.update({k: jnp.dtype(v.dtype) for k, v in p.items() if k in wrt or not selective})
        xg.update({k: x.get(k) for k in _PARAM_READS.get(op, ())}, h=h)
        store_u = False
    if not store_u and all(d is None for d in grads.values()):
        return {}, None
    grads = tuple(sorted(grads.items()))
    return _launch(f"{op}:bwd", axis, reverse, grads, store_u, xg, p)


@functools.cache
def _op(op: str, axis: int, reverse: bool, out_dtype, param_grads: bool = True):
    """`param_grads`: whether the parameters may be differentiated (else their gradients are 0)."""
    ref = core.reference_module(op)
    cdt = checks.compute_dtype(out_dtype)

    @jax.custom_vjp
    def f(x, p):
        outs, _ = _launch(op, axis, reverse, out_dtype, False, x, p)
        return outs

    def f_fwd(x, p):
        # symbolic_zeros: each leaf comes as (value, perturbed). Whether the differentiation
        # involves each input and parameter travels to f_bwd in the dtype of an empty array (_mark).
        marks = {k: _mark(getattr(v, "perturbed", False)) for k, v in (*x.items(), *p.items()) if v is not None}
        x, p = _values((x, p))
        outs, h = _launch(op, axis, reverse, out_dtype, True, x, p)
        if h is None:
            h = outs[0] if isinstance(outs, tuple) else outs
        return outs, (x, p, h, marks)

    def reference_grads(x, p, h, g, u=None):
        """The gradients by the reference's vjp around the adjoint scan (u given, or scanned here)."""
        xf, rest = _split(x)
        xf_c = {k: v.astype(cdt) for k, v in xf.items()}
        p_c = {k: v.astype(cdt) for k, v in p.items()}

        def coefficients(xf_, p_):
            a, b, reset = ref.coefficients({**xf_, **rest}, p_, axis=axis, reverse=reverse)
            return (a, b), reset

        def finalize(h_, xf_, p_):
            return ref.finalize(h_, {**xf_, **rest}, p_, axis=axis, reverse=reverse)

        (_, b), coef_vjp, reset = jax.vjp(coefficients, xf_c, p_c, has_aux=True)
        h = h.astype(cdt)
        _, fin_vjp = jax.vjp(finalize, h, xf_c, p_c)
        g_h, gx_fin, gp_fin = fin_vjp(jax.tree.map(lambda t: t.astype(cdt), g))
        if u is None:
            decay = ref.decay(p_c) if hasattr(ref, "decay") else None
            # Eligibility traces' γλ is per step, without the inputs' trailing feature axes: it
            # aligns with the scan's shape only as one value.
            if decay is not None and (decay.ndim == 0 or op == "linear_scan"):
                decay = decay.astype(cdt)
            else:
                decay = None
            u = _adjoint(g_h, b, reset, axis=axis, reverse=reverse, decay=decay)
        gx_coef, gp_coef = coef_vjp((u, _db(u, reset, h, axis=axis, reverse=reverse)))
        gx = {k: (gx_fin[k] + gx_coef[k]).astype(xf[k].dtype) for k in xf}
        gp = {k: (gp_fin[k] + gp_coef[k]).astype(p[k].dtype) for k in p}
        return gx, gp

    def param_residual(x, p, h, wanted):
        """The scan state from which the parameters' gradients are taken: the residual h, or where
        that is the 16-bit output, the same scan again with a float32 output (16-bit inputs are
        computed in float32, DESIGN.md §2). A parameter's gradient sums u·h over its steps, and
        the 16-bit rounding of h does not average out of a sum with cancellation. Recomputed
        here rather than stored by the forward pass, and only where a parameter is
        differentiated (`wanted`)."""
        if not wanted or jnp.dtype(h.dtype) == cdt:
            return h
        outs, _ = _launch(op, axis, reverse, cdt, False, x, p)
        return outs[0] if isinstance(outs, tuple) else outs

    def f_bwd(res, g):
        x, p, h, marks = res
        wrt = frozenset(k for k, v in marks.items() if _marked(v))
        # Only where a parameter was traced (param_grads) and the differentiation involves it
        # (perturbed) do its gradient's u, float32 rerun or sums get computed; the others' are 0.
        wanted = param_grads and any(k in wrt for k in p)
        axes = _all_varying((x, p))

        def instantiated(g):
            """Symbolic zeros (unused outputs) as zeros, every cotangent varying along the manual
            axes of the inputs (a cotangent may vary along fewer: a psum's transpose)."""
            return _to_varying(jax.tree.map(_instantiate, g, is_leaf=lambda t: isinstance(t, SymbolicZero)), axes)

        g_sym = g
        if isinstance(g, tuple) and op in SELECTIVE and not all(isinstance(t, SymbolicZero) for t in g):
            # An unused output's symbolic zero stays None: the fused backward does not read it.
            g = tuple(None if isinstance(t, SymbolicZero) else _to_varying(t, axes) for t in g)
        else:
            g = instantiated(g)
        h_p = param_residual(x, p, h, wanted)
        in_launch = _param_grads_fused(op, x, p, axis, wrt)
        fused = _fused_backward(op, axis, reverse, x, p, h_p if in_launch else h, g, wanted, wrt, in_launch)
        if fused is None:
            gx, gp = reference_grads(x, p, h_p, instantiated(g_sym))
        else:
            gx, u = fused
            if not wanted:
                gp = {k: None for k in p}
            elif in_launch:
                gp = {k: gx.pop(k, None) for k in p}
            else:
                _, gp = reference_grads(x, p, h_p, instantiated(g_sym), u=u)
        # Gradients of what the differentiation does not involve: symbolic zeros (None), not computed.
        gx = {k: gx.get(k) if k in wrt else None for k in _split(x)[0]}
        gp = {k: gp[k] if k in wrt else None for k in p}
        gx.update({k: _zero_cotangent(v) for k, v in _split(x)[1].items()})
        return gx, gp

    f.defvjp(f_fwd, f_bwd, symbolic_zeros=True)
    return f


def _mark(perturbed: bool) -> jax.Array:
    """An empty array whose dtype says whether an input is perturbed (bool) or not (int8).

    Not the residuals' pytree structure: JAX (0.10.2 and 0.11.2) memoizes a custom_vjp's fwd rule on its
    inputs' symbolic zeros inside a jitted function, but takes the residuals' structure from the
    rule's last trace. Differentiating a jitted op with respect to all its inputs, then some, then
    all again reused the first trace with the second's structure: a gradient asked for was left
    out (benchmarks.grad_subsets' order all, critic, first; tests/gpu_runs/README.md, forty-second
    session). A residual's dtype comes from the memoized trace itself, and vmap keeps it."""
    return jnp.zeros((0,), jnp.bool_ if perturbed else jnp.int8)


def _marked(v) -> bool:
    return jnp.dtype(v.dtype) == jnp.bool_


def _values(tree):
    """A fwd rule's arguments (symbolic_zeros: CustomVJPPrimal leaves) as their values."""
    return jax.tree.map(lambda v: v.value, tree, is_leaf=lambda v: isinstance(v, CustomVJPPrimal))


def _instantiate(t):
    """A cotangent that is a symbolic zero (its output unused) as zeros of its type."""
    return jnp.zeros(t.shape, t.dtype) if isinstance(t, SymbolicZero) else t


def _varying(v) -> frozenset:
    """The manual mesh axes along which `v` varies (inside shard_map; empty elsewhere)."""
    if v is None:
        return frozenset()
    mat = getattr(jax.typeof(v), "manual_axis_type", None)
    return frozenset(getattr(mat, "varying", ()))


def _to_varying(tree, axes: frozenset):
    """Marks every array of `tree` as varying along `axes` (a no-op for those that already do)."""

    def cast(v):
        missing = tuple(sorted(axes - _varying(v)))
        return jax.lax.pcast(v, missing, to="varying") if missing else v

    return jax.tree.map(cast, tree)


def evaluate(op: str, x: dict, p: dict, *, axis: int, reverse: bool, out_dtype, param_grads: bool = True):
    """The op on the Triton kernels, differentiable and vmappable; outputs in `out_dtype`.

    `param_grads=False` where no parameter was traced when the op was called (checks.traced): then
    nothing can differentiate them, and the fused backward skips their gradients."""
    p = {k: v if _is_float(v) else jnp.asarray(v, jnp.float32) for k, v in p.items()}
    # Inside a shard_map the kernels' outputs vary along the manual axes of any input: every
    # input is made to vary along them too, so that the gradient of one that did not (a γ shared
    # by the devices) is summed over the devices by the transpose of that cast.
    axes = _all_varying((x, p))
    if axes:
        x, p = _to_varying((x, p), axes)
    return _op(op, axis, reverse, jnp.dtype(out_dtype), param_grads)(x, p)
