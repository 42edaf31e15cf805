"""The fused backward passes (ops.py): the adjoint scan reads the output cotangents and the raw
flags, and writes the inputs' gradients in their own dtypes.

Each launcher takes x = the cotangents ("g", and "g2" for GAE's returns) and the flags, p = the
op's parameters, and `grads`: ((name, dtype), ...), the floating inputs whose gradients it
writes, and for GAE, λ-returns, discounted returns, V-trace, Retrace and linear_scan the
parameters whose gradients it sums (ops._param_grads_fused). It returns ({name: gradient}, u), u
(the adjoint state in the compute dtype, from which ops.py takes the parameters' gradients
otherwise) only where `store_u` asks for it, else None.
"""

import functools

import jax
import jax.numpy as jnp

from rlscan_jax._src.reference import common
from rlscan_jax._src.triton import launch
from rlscan_jax._src.triton.kernels.adjoint import adjoint_kernel, linear_adjoint_kernel
from rlscan_jax._src.triton.kernels.adjoint_offpolicy import retrace_adjoint_kernel, vtrace_adjoint_kernel
from rlscan_jax._src.triton.launchers import linear
from rlscan_jax._src.triton.launchers import vtrace as vtrace_launcher

_KIND = {"gae": 0, "lambda_returns": 1, "discounted_returns": 2}


def _returns(op, x, p, *, axis, grads, store_u):
    """GAE, λ-returns and discounted returns: adjoint_kernel. The parameters named in `grads` get
    their gradients from the same launch (ops._param_grads_fused: x then holds the forward pass's
    float32 state as h, and the inputs v' comes from), one a row for each segment of the plan
    where the parameter is one value or one a row, else one a step, summed here to its shape."""
    grads = dict(grads)
    g = launch.or_(x["g"], x.get("g2"))  # GAE's advantages unused: the returns' cotangent alone
    shape = g.shape
    geo = launch.geometry(shape, axis)
    params = {k: launch.param(p[k], shape, axis) for k in ("gamma", "lambda_") if k in p}
    gamma, gamma_form = params["gamma"]
    lam, lam_form = params.get("lambda_", (gamma, 0))
    f64 = _is_f64(g)
    acc = jnp.float64 if f64 else jnp.float32
    edge = shape[:axis] + shape[axis + 1 :]
    sums = _param_sums(params, grads)
    slot = functools.partial(_grad_slot, grads, shape)

    outs = launch.scan_call(
        adjoint_kernel,
        op=op,
        g=geo,
        inputs=[
            g,
            launch.or_(x.get("g2"), g),
            launch.or_(x["terminated"], g),
            launch.or_(x["truncated"], g),
            gamma,
            lam,
            *(launch.or_(x.get(k), g) for k in ("h", "values", "next_values", "bootstrap_value")),
        ],
        outputs=[
            slot("rewards"),
            slot("values"),
            slot("next_values"),
            slot("bootstrap_value", edge),
            launch.out(shape, acc) if store_u else launch.placeholder(),
            *_param_slots(sums, shape, acc),
        ],
        reverse=False,
        f64=f64,
        KIND=_KIND[op],
        HAS_TERM=x["terminated"] is not None,
        HAS_TRUNC=x["truncated"] is not None,
        HAS_G=x["g"] is not None,
        HAS_G2=x.get("g2") is not None,
        HAS_NEXT="next_values" in grads,
        HAS_BOOT="bootstrap_value" in grads,
        **_written(grads, DR="rewards", DV="values", DNV="next_values", DBOOT="bootstrap_value"),
        STORE_U=store_u,
        GAMMA_GRAD=sums["gamma"],
        LAMBDA_GRAD=sums["lambda_"],
        GAMMA_FULL=gamma_form,
        LAMBDA_FULL=lam_form,
    )
    names = ("rewards", "values", "next_values", "bootstrap_value")
    out = _summed_params(_written_grads(grads, names, outs), sums, outs[5:], params, geo.N, p, grads)
    return out, (outs[4] if store_u else None)


def gae(x, p, *, axis, reverse, out_dtype, store_h):
    del reverse
    return _returns("gae", x, p, axis=axis, grads=out_dtype, store_u=store_h)


def lambda_returns(x, p, *, axis, reverse, out_dtype, store_h):
    del reverse
    return _returns("lambda_returns", x, p, axis=axis, grads=out_dtype, store_u=store_h)


def discounted_returns(x, p, *, axis, reverse, out_dtype, store_h):
    del reverse
    return _returns("discounted_returns", x, p, axis=axis, grads=out_dtype, store_u=store_h)


def vtrace(x, p, *, axis, reverse, out_dtype, store_h):
    """x: g, g2 (the cotangents of vs and pg; None where that output is unused), the forward pass's
    float inputs and its h. γ and λ named in `grads` (ops._param_grads_fused) get their gradients
    from the same launch, as `_returns` says; h is then the forward pass's float32 state."""
    del reverse
    grads = dict(out_dtype)
    r = x["rewards"]
    shape = r.shape
    params = {k: launch.param(p[k], shape, axis) for k in ("gamma", "lambda_", "rho_clip", "c_clip", "pg_rho_clip")}
    f64 = _is_f64(launch.or_(x["g"], x["g2"]))
    acc = jnp.float64 if f64 else jnp.float32
    geo = launch.geometry(shape, axis)
    edge = shape[:axis] + shape[axis + 1 :]
    slot = functools.partial(_grad_slot, grads, shape)
    sums = _param_sums(params, grads)
    # v' is next_values or the bootstrap.
    outputs = [slot(k) for k in ("rewards", "values", "log_rhos", "next_values")]
    outputs.append(slot("bootstrap_value", edge))
    outputs.append(launch.out(shape, acc) if store_h else launch.placeholder())
    outputs += _param_slots(sums, shape, acc)
    outs = launch.scan_call(
        vtrace_adjoint_kernel,
        op="vtrace",
        g=geo,
        inputs=[
            launch.or_(x["g"], r),
            launch.or_(x["g2"], r),
            r,
            x["values"],
            x["log_rhos"],
            launch.or_(x["next_values"], r),
            launch.or_(x["bootstrap_value"], r),
            x["h"],
            launch.or_(x["terminated"], r),
            launch.or_(x["truncated"], r),
            *[v for v, _ in params.values()],
        ],
        outputs=outputs,
        reverse=False,
        f64=f64,
        HAS_TERM=x["terminated"] is not None,
        HAS_TRUNC=x["truncated"] is not None,
        HAS_G=x["g"] is not None,
        HAS_G2=x["g2"] is not None,
        HAS_NEXT=x["next_values"] is not None,
        **_written(grads, DR="rewards", DV="values", DLR="log_rhos", DNV="next_values", DBOOT="bootstrap_value"),
        STORE_U=store_h,
        GAMMA_GRAD=sums["gamma"],
        LAMBDA_GRAD=sums["lambda_"],
        GAMMA_FULL=params["gamma"][1],
        LAMBDA_FULL=params["lambda_"][1],
        RHO_CLIP_FULL=params["rho_clip"][1],
        C_CLIP_FULL=params["c_clip"][1],
        PG_CLIP_FULL=params["pg_rho_clip"][1],
        **vtrace_launcher.PLAN,
        time_major_warps=launch.VTRACE_ADJOINT_TIME_MAJOR_WARPS,
        column_bt=launch.VTRACE_ADJOINT_COLUMN_BT,
    )
    names = ("rewards", "values", "log_rhos", "next_values", "bootstrap_value")
    out = _summed_params(_written_grads(grads, names, outs), sums, outs[6:], params, geo.N, p, grads)
    return out, (outs[5] if store_h else None)


def retrace(x, p, *, axis, reverse, out_dtype, store_h):
    """x: g (the cotangent of G), q_values, log_rhos, the forward pass's G as h, and the flags. γ
    and λ named in `grads` (ops._param_grads_fused) get their gradients from the same launch, as
    `_returns` says; x then holds next_values too, and h is G in float32."""
    del reverse
    grads = dict(out_dtype)
    q = x["q_values"]
    shape = q.shape
    params = {k: launch.param(p[k], shape, axis) for k in ("gamma", "lambda_", "c_clip")}
    f64 = _is_f64(x["g"])
    acc = jnp.float64 if f64 else jnp.float32
    g = launch.geometry(shape, axis)
    narrow = launch.narrow_rows(g, [x["g"], q, x["log_rhos"]])
    names = ("rewards", "q_values", "next_values", "log_rhos")
    sums = _param_sums(params, grads)
    outputs = [_grad_slot(grads, shape, k) for k in names]
    outputs.append(launch.out(shape, acc) if store_h else launch.placeholder())
    outputs += _param_slots(sums, shape, acc)
    outs = launch.scan_call(
        retrace_adjoint_kernel,
        op="retrace",
        g=g,
        inputs=[
            x["g"],
            q,
            x["log_rhos"],
            x["h"],
            launch.or_(x.get("next_values"), q),
            launch.or_(x["terminated"], q),
            launch.or_(x["truncated"], q),
            *[v for v, _ in params.values()],
        ],
        outputs=outputs,
        reverse=False,
        f64=f64,
        HAS_TERM=x["terminated"] is not None,
        HAS_TRUNC=x["truncated"] is not None,
        **_written(grads, DR="rewards", DQ="q_values", DNV="next_values", DLR="log_rhos"),
        STORE_U=store_h,
        GAMMA_GRAD=sums["gamma"],
        LAMBDA_GRAD=sums["lambda_"],
        GAMMA_FULL=params["gamma"][1],
        LAMBDA_FULL=params["lambda_"][1],
        C_CLIP_FULL=params["c_clip"][1],
        few_rows_elems=launch.RETRACE_ADJOINT_FEW_ROWS_ELEMS,
        whole_row_warps=0 if narrow else launch.RETRACE_ADJOINT_WHOLE_ROW_WARPS,
    )
    out = _summed_params(_written_grads(grads, names, outs), sums, outs[5:], params, g.N, p, grads)
    return out, (outs[4] if store_h else None)


def _traces(op, x, gamma, lam, *, axis, reverse, grads, store_u):
    """Episodic sums and eligibility traces (γλ in any form): the adjoint is the linear kernel's scan
    of the cotangent in the other direction, with the done flags where the forward pass had
    them one step later (a forward scan's reset at t is done_{t-1}) or earlier. γ and λ named in
    `grads` (eligibility traces, ops._param_grads_fused: x then holds the forward pass's float32
    traces as h) get their gradients from the same launch: D, the gradient of γλ at each step
    (kernels/linear.py), one value a row for each segment where both are one value or one a row,
    else one a step, summed here to each one's shape (d γ = λ D, d λ = γ D)."""
    grads = dict(grads)
    g, done = x["g"], x["done"]
    dtype = jnp.float64 if jnp.dtype(grads["inputs"]) == jnp.float64 else jnp.float32
    # u in the inputs' gradient dtype (no conversion pass after the scan) unless something needs it
    # wider: the parameters' gradients (store_u), or the initial value's where γλ scales it or its
    # dtype is not the inputs'. An unscaled edge of a 16-bit u is the 16-bit rounding of the wide
    # u's edge, the same bits.
    initial = jnp.dtype(grads.get("initial", grads["inputs"]))
    wide = store_u or ("initial" in grads and (gamma is not None or initial != jnp.dtype(grads["inputs"])))
    step = (g if done is None else done).shape
    rank = len(step)
    decay_grad = 0
    if "gamma" in grads or "lambda_" in grads:
        forms = [launch.param(v, step, axis % rank)[1] for v in (gamma, lam)]
        decay_grad = _param_mode(0 if all(f in (0, 3) for f in forms) else 1)
    # The decay that carries u_{t+1} back to step t is the forward pass's at t + 1: a parameter
    # with more than one value along time is read from a copy shifted a step (a [T] vector stays
    # one), whose last step meets the scan's zero start.
    scan_gamma, scan_lam = (
        None if v is None else common.shift_param(v, rank, axis, common.shift_next) for v in (gamma, lam)
    )
    u, dd = linear._forward(
        op,
        g,
        reset=done,
        reset_prev=reverse,
        gamma=scan_gamma,
        lam=scan_lam,
        initial=None,
        axis=axis,
        reverse=not reverse,
        out_dtype=dtype if wide else grads["inputs"],
        column_vec=launch.ADJOINT_COLUMN_VEC_16BIT.get(op, 0),
        e=x.get("h") if decay_grad else None,
        decay_grad=decay_grad,
    )
    out = {"inputs": u.astype(grads["inputs"])}
    if "initial" in grads:
        # The forward pass adds b_0 · initial to a_0 (forward), or, where the window's last
        # step is not done, initial to a_{T-1} (reverse).
        edge = common.take_time(u, axis, -1 if reverse else 0)
        if gamma is not None:  # γλ at t = 0: one value, or a row's own (one a row, or batched by vmap)
            decay = gamma * lam
            if decay.ndim:
                decay = decay.reshape((1,) * (rank - decay.ndim) + decay.shape)
                decay = common.take_time(decay, axis, 0) if decay.shape[axis] > 1 else decay.squeeze(axis)
            edge = jnp.reshape(decay, decay.shape + (1,) * (edge.ndim - decay.ndim)).astype(u.dtype) * edge
        if reverse and done is not None:
            last = common.take_time(common.flag(done), axis, -1)
            last = jnp.reshape(last, last.shape + (1,) * (edge.ndim - last.ndim))
            edge = jnp.where(last, jnp.zeros_like(edge), edge)
        out["initial"] = edge.astype(grads["initial"])
    if decay_grad:
        t = axis % rank
        if decay_grad == 2:  # one value a row of the scan (the step's shape less time, then features)
            dd = launch.sum_segments(dd, launch.geometry(g.shape, axis).N)
            dd = jnp.expand_dims(dd.reshape(g.shape[:t] + g.shape[t + 1 :]), t)
        dd = jnp.sum(dd, axis=tuple(range(rank, g.ndim)))  # the trailing feature axes share one decay
        for k, v, other in (("gamma", gamma, lam), ("lambda_", lam, gamma)):
            if k in grads:
                out[k] = _sum_to(other.astype(dd.dtype) * dd, v.shape).astype(grads[k])
    return out, (u if store_u else None)


def eligibility_traces(x, p, *, axis, reverse, out_dtype, store_h):
    del reverse
    return _traces(
        "eligibility_traces", x, p["gamma"], p["lambda_"], axis=axis, reverse=False, grads=out_dtype, store_u=store_h
    )


def episodic_cumsum(x, p, *, axis, reverse, out_dtype, store_h):
    del p
    return _traces("episodic_cumsum", x, None, None, axis=axis, reverse=reverse, grads=out_dtype, store_u=store_h)


def linear_scan(x, p, *, axis, reverse, out_dtype, store_h):
    """x: g (the cotangent of h), b (or None, b then p's "decay", of a smaller shape), the forward
    pass's h and its initial value (or None). No u: a smaller b's gradient ("decay" in the
    gradients asked for) is d b, written in the compute dtype and summed to b's shape here."""
    del store_h
    grads = dict(out_dtype)
    g, init = x["g"], x["initial"]
    shape = g.shape
    edge = shape[:axis] + shape[axis + 1 :]
    f64 = _is_f64(g)
    geo = launch.geometry(shape, axis)
    if x["b"] is None:
        decay = p["decay"]
        b, b_form = launch.param(decay, shape, axis)
        db_mode = _param_mode(b_form) if "decay" in grads else 0
        db = launch.param_slot(db_mode, shape, jnp.float64 if f64 else jnp.float32)
    else:
        b, b_form = x["b"], 1
        db_mode = int("b" in grads)
        db = launch.out(shape, grads["b"]) if db_mode else launch.placeholder()
    outs = launch.scan_call(
        linear_adjoint_kernel,
        op="linear_scan",
        g=geo,
        inputs=[g, b, launch.or_(x["h"] if db_mode else None, g), launch.or_(init, g)],
        outputs=[
            launch.out(shape, grads["a"]),
            db,
            launch.out(edge, grads["initial"]) if init is not None else launch.placeholder(),
        ],
        reverse=not reverse,
        f64=f64,
        REVERSE=not reverse,
        HAS_INITIAL=init is not None,
        B_FULL=b_form,
        HAS_DB=db_mode,
    )
    out = {k: o for k, o in zip(("a", "b", "initial"), outs) if k in grads}
    if "decay" in grads:
        out["decay"] = _param_grad(outs[1], db_mode, b_form, geo.N, decay.shape, grads["decay"])
    return out, None


def _is_f64(g: jax.Array) -> bool:
    """Whether the kernel computes in float64: the cotangent has the outputs' dtype, the inputs'."""
    return jnp.dtype(g.dtype) == jnp.float64


def _grad_slot(grads: dict, shape: tuple[int, ...], name: str, s: tuple[int, ...] | None = None):
    """The output slot of input `name`'s gradient (of shape `s`, default `shape`): a placeholder
    where `grads` does not ask for it (absent, or None: given, not differentiated)."""
    d = grads.get(name)
    return launch.out(shape if s is None else s, d) if d is not None else launch.placeholder()


def _written(grads: dict, **flags: str) -> dict:
    """The kernel's constexprs that switch on each gradient's store: {FLAG: written}."""
    return {flag: grads.get(name) is not None for flag, name in flags.items()}


def _written_grads(grads: dict, names: tuple[str, ...], outs) -> dict:
    """{name: gradient} of the inputs whose gradients the launch wrote."""
    return {k: o for k, o in zip(names, outs) if grads.get(k) is not None}


def _param_mode(form: int) -> int:
    """How a kernel writes the gradient of a parameter in launch.param's `form`: 2, one a row for
    each segment of the plan (launch.SegmentSums), where it is one value or one a row; else 1, one a
    step (an array of the steps' shape, summed to the parameter's shape by `_param_grad`)."""
    return 2 if form in (0, 3) else 1


def _param_sums(params: dict, grads: dict) -> dict:
    """{"gamma", "lambda_": how the launch writes that parameter's gradient (`_param_mode` of its
    form in `params`, launch.param's; 0, not written, where `grads` does not ask for it)}."""
    return {k: _param_mode(params[k][1]) if k in grads and k in params else 0 for k in ("gamma", "lambda_")}


def _param_slots(sums: dict, shape: tuple[int, ...], dtype) -> list:
    """The output slots of the parameters' gradients, in `sums`' order (`_param_sums`)."""
    return [launch.param_slot(mode, shape, dtype) for mode in sums.values()]


def _summed_params(out: dict, sums: dict, slots, params: dict, n: int, p: dict, grads: dict) -> dict:
    """`out` with the gradient of each parameter the launch wrote (`sums`), from its slot in `slots`
    (`_param_slots`' order), for n rows."""
    for (k, mode), v in zip(sums.items(), slots):
        if mode:
            out[k] = _param_grad(v, mode, params[k][1], n, p[k].shape, grads[k])
    return out


def _param_grad(v: jax.Array, mode: int, form: int, n: int, shape: tuple[int, ...], dtype) -> jax.Array:
    """A parameter's gradient, of `shape` and `dtype`, from its slot `v` as the kernel wrote it in
    `mode` (`_param_mode`) for n rows: one value sums every segment and row, one a row every
    segment (the rows' order is the parameter's, launch.param); one a step sums to `shape`."""
    if mode == 2:
        v = launch.sum_segments(v, n)
        return (jnp.sum(v) if form == 0 else v).reshape(shape).astype(dtype)
    return _sum_to(v, shape).astype(dtype)


def _sum_to(v: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """v summed over the axes that broadcasting an array of `shape` to v's shape adds or widens."""
    lead = v.ndim - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, d in enumerate(shape) if d == 1 and v.shape[lead + i] != 1)
    return jnp.sum(v, axis=axes).reshape(shape)
