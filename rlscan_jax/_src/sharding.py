"""Batch-sharded inputs run the op on each device's block, with no collective (issue #7).

Every op is independent across batch rows (and feature lanes) and sequential only along
time, so a batch-sharded call is the same op on each device's local block: time stays whole
on every device and nothing moves between devices. XLA cannot see that through an opaque
custom call (a Triton kernel, or the Triton interpreter's callback); left alone it gathers
the whole rollout onto every device. `per_shard`, which `core.evaluate` calls around every op
and every implementation, says it explicitly. The mechanism is chosen at trace time:

1. One device in the process (`jax.device_count() == 1`): the op runs as it is. No wrapper,
   no overhead, no change of behaviour.
2. Explicit sharding (a mesh whose axes are `AxisType.Explicit`, the default of
   `jax.make_mesh`): the avals carry their shardings, so the op runs under `jax.shard_map`
   with per-leaf specs built from them. shard_map composes with jit, grad, jvp and vmap. This
   also serves the reference implementations, some of which (vtrace, retrace,
   eligibility_traces) do not trace on explicitly sharded arrays by themselves.
3. Auto sharding with the "triton" implementation: the shardings are only known when XLA
   partitions the program, so the op becomes a `jax.experimental.custom_partitioning` call.
   It carries a Shardy sharding rule (Shardy is this jax's default partitioner) and GSPMD
   callbacks (used when `jax_use_shardy_partitioner` is off). Its `partition` rule keeps every
   operand's batch and feature shardings, makes time replicated, and lowers the same op on the
   local block.
5. Inside a user's shard_map that made every mesh axis manual, the arrays are already the
   local blocks: the op runs as it is (as in case 1). Through custom_partitioning there, the
   Triton path's own custom_vjp saw cotangents without the varying-axes type of its outputs and
   `jax.grad` failed on an Explicit mesh.
4. Auto sharding with a reference implementation ("associative", "sequential"): pure JAX.
   XLA partitions it along the batch axes by itself with no collective (tests/test_sharding.py
   checks the compiled HLO), so it runs as it is and keeps forward-mode autodiff.

Time sharded: a mesh axis on the time axis is gathered first (an all-gather of that axis, the
one collective left), and the result is correct.

custom_partitioning has neither autodiff nor batching rules, so in case 3 it sits inside
the layering the Triton path already uses: `jax.custom_vjp` outside, and around each
partitioned call a `jax.custom_batching.custom_vmap` rule that folds a vmapped axis into the
batch axes (as triton/batching.py does for the launchers). The backward pass is its own
partitioned call. It re-runs the op's forward on the local block and pulls the cotangents
back through the op's own VJP. Gradients of parameters shared across the batch (γ, λ, clips)
are summed over the devices with a psum, the one all-reduce that is needed.

Limits of case 3: the backward pass costs one extra forward kernel, because the inner VJP's
residuals have no layout that custom_partitioning could be told about. There is no
forward-mode autodiff (`jax.jvp`), as for the Triton path itself, and no second derivative.
Shardings that the partitioner hands over without a mesh (GSPMD shardings, from a jit that
saw no NamedSharding) fall back to replicated operands: correct, but gathered. Calling
`per_block` inside the Triton launchers themselves (triton/batching.py, under the existing
custom_vmap) would remove the extra forward kernel and the custom_vjp layer here.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental.custom_partitioning import ArrayMapping, SdyShardingRule, custom_partitioning
from jax.sharding import NamedSharding, PartitionSpec

# Implementations XLA cannot partition by itself: opaque custom calls.
OPAQUE = frozenset({"triton"})

# Inputs of one time slice (the per-step shape without time, plus feature axes).
_EDGE_KEYS = frozenset({"bootstrap_value", "initial"})

# The input whose shape is the per-step shape (done's, when inputs carry feature axes).
_STEP_KEYS = ("done", "reset", "rewards", "a", "inputs")

TIME = "t"


@dataclasses.dataclass(frozen=True)
class Layout:
    """The named dimensions of the op's full per-step shape [*step, *features].

    `dims[i]` names axis i of the full shape ("t" for time, "s<i>" for the other per-step axes,
    "f<j>" for trailing feature axes); `sizes[i]` is its size. Every array of the op maps its
    axes to a sub-sequence of `dims` (its `names`), with None for a broadcast axis of size 1.
    """

    dims: tuple[str, ...]
    sizes: tuple[int, ...]
    step_rank: int
    axis: int

    @staticmethod
    def of(x: dict, axis: int) -> Layout:
        step = next((x[k] for k in _STEP_KEYS if x.get(k) is not None), None)
        if step is None:
            raise ValueError(f"no per-step input among {sorted(x)}")
        full = max((v for k, v in x.items() if v is not None and k not in _EDGE_KEYS), key=lambda v: v.ndim)
        step_rank = step.ndim
        dims = tuple(TIME if i == axis else f"s{i}" for i in range(step_rank))
        dims += tuple(f"f{j}" for j in range(full.ndim - step_rank))
        return Layout(dims=dims, sizes=tuple(full.shape), step_rank=step_rank, axis=axis)

    def _fit(self, shape, dims) -> tuple[str | None, ...]:
        return tuple(None if (n == 1 and self.sizes[self.dims.index(d)] != 1) else d for n, d in zip(shape, dims))

    def per_step(self, shape) -> tuple[str | None, ...]:
        """A per-step array [*step, *features]: a leading part of the full dims."""
        return self._fit(shape, self.dims[: len(shape)])

    def edge(self, shape) -> tuple[str | None, ...]:
        """One time slice: the full dims without time."""
        dims = tuple(d for d in self.dims if d != TIME)
        return self._fit(shape, dims[: len(shape)])

    def param(self, shape) -> tuple[str | None, ...]:
        """A parameter broadcastable to the per-step shape: its trailing axes."""
        step = self.dims[: self.step_rank]
        return self._fit(shape, step[len(step) - len(shape) :])

    def names(self, key: str, shape, kind: str) -> tuple[str | None, ...]:
        if kind == "p":
            return self.param(shape)
        if key in _EDGE_KEYS:
            return self.edge(shape)
        return self.per_step(shape)


def _leaf_names(layout: Layout, x: dict, p: dict, extra_per_step=()) -> list[tuple[str | None, ...]]:
    """The dim names of every leaf of (x, p, *extra_per_step), in tree-flatten order."""
    names = []
    for kind, d in (("x", x), ("p", p)):
        for key, v in sorted(d.items()):  # dicts flatten in sorted key order
            if v is not None:
                names.append(layout.names(key, v.shape, kind))
    for v in jax.tree.leaves(extra_per_step):
        names.append(layout.per_step(v.shape))
    return names


# ---------------------------------------------------------------------------------------------
# Mesh axes per dimension, and the PartitionSpecs that follow from them.


def _spec_axes(entry) -> tuple[str, ...]:
    if entry is None or entry is PartitionSpec.UNCONSTRAINED:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


def dim_axes(names: list[tuple[str | None, ...]], specs: list, allowed=None) -> dict[str, tuple[str, ...]]:
    """Mesh axes for each named dimension, from the first array that shards it; time gets none.

    A mesh axis goes to one dimension only (the first that claims it), so the result is a
    consistent sharding even when the arrays disagree.
    """
    out: dict[str, tuple[str, ...]] = {}
    used: set[str] = set()
    for leaf_names, spec in zip(names, specs):
        spec = tuple(spec) + (None,) * (len(leaf_names) - len(tuple(spec)))
        for d, entry in zip(leaf_names, spec):
            if d is None or d == TIME or d in out:
                continue
            axes = tuple(a for a in _spec_axes(entry) if (allowed is None or a in allowed))
            if axes and not used.intersection(axes):
                out[d] = axes
                used.update(axes)
    return out


def spec_of(leaf_names: tuple[str | None, ...], axes: dict[str, tuple[str, ...]]) -> PartitionSpec:
    entries = []
    for d in leaf_names:
        a = axes.get(d, ()) if d is not None else ()
        entries.append(None if not a else (a[0] if len(a) == 1 else a))
    return PartitionSpec(*entries)


def _reduced_axes(leaf_names, axes: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """Mesh axes of the dimensions a parameter is broadcast over (its gradient sums over them)."""
    own = {a for d in leaf_names if d is not None for a in axes.get(d, ())}
    return tuple(a for d in sorted(axes) for a in axes[d] if a not in own)


# ---------------------------------------------------------------------------------------------
# Case 2: explicit sharding -> shard_map.


def _explicit_axes(leaves) -> tuple[object, set[str]] | None:
    """The abstract mesh and its Explicit axes that shard any leaf, or None."""
    for v in leaves:
        sharding = getattr(jax.typeof(v), "sharding", None)
        mesh = getattr(sharding, "mesh", None)
        if mesh is None or getattr(mesh, "empty", True):
            continue
        explicit = {n for n, t in zip(mesh.axis_names, mesh.axis_types) if t == jax.sharding.AxisType.Explicit}
        if explicit:
            return mesh, explicit
    return None


def _all_manual() -> bool:
    """Inside a shard_map that made every mesh axis manual: the arrays are the local blocks."""
    mesh = jax.sharding.get_abstract_mesh()
    if mesh.empty:
        return False
    return all(t == jax.sharding.AxisType.Manual for t in mesh.axis_types)


def _unsharded(tree):
    return jax.tree.map(lambda v: jax.ShapeDtypeStruct(v.shape, v.dtype), tree)


def _same(a: PartitionSpec, b: PartitionSpec, ndim: int) -> bool:
    pad = (None,) * ndim
    return tuple(map(_spec_axes, (tuple(a) + pad)[:ndim])) == tuple(map(_spec_axes, (tuple(b) + pad)[:ndim]))


def _shard_map(fn: Callable, x: dict, p: dict, *, axis: int, layout: Layout, mesh, explicit: set[str]):
    flat, tree = jax.tree.flatten((x, p))
    names = _leaf_names(layout, x, p)
    specs = [jax.typeof(v).sharding.spec for v in flat]
    axes = dim_axes(names, specs, allowed=explicit)
    in_specs = [spec_of(n, axes) for n in names]
    # Time replicated, batch and features as `axes`: a no-op for a batch-sharded input.
    flat = [v if _same(jax.typeof(v).sharding.spec, s, v.ndim) else jax.reshard(v, s) for v, s in zip(flat, in_specs)]
    if not axes:  # nothing sharded but time: gathered above, now replicated
        x, p = jax.tree.unflatten(tree, flat)
        return fn(x, p, axis=axis)
    # The outputs' ranks, from unsharded shapes (the op is traced per block, not globally).
    out_shape = jax.eval_shape(functools.partial(fn, axis=axis), *_unsharded((x, p)))
    out_specs = jax.tree.map(lambda o: spec_of(layout.per_step(o.shape), axes), out_shape)

    def local(*leaves):
        xl, pl = jax.tree.unflatten(tree, leaves)
        return fn(xl, pl, axis=axis)

    used = frozenset(a for v in axes.values() for a in v)
    return jax.shard_map(
        local, mesh=mesh, in_specs=tuple(in_specs), out_specs=out_specs, axis_names=used, check_vma=False
    )(*flat)


# ---------------------------------------------------------------------------------------------
# Case 3: auto sharding -> custom_partitioning (+ custom_vmap, custom_vjp).


def _sdy_rule(names_in, names_out) -> SdyShardingRule:
    counter = iter(range(1 << 30))

    def mapping(leaf_names):
        # A broadcast axis of size 1 gets a factor of its own, shared with nothing.
        return ArrayMapping(*[d if d is not None else f"u{next(counter)}" for d in leaf_names])

    ins = tuple(mapping(n) for n in names_in)
    outs = tuple(mapping(n) for n in names_out)
    used = {d for m in ins + outs for d in m}
    return SdyShardingRule(ins, outs, need_replication_factors=(TIME,) if TIME in used else ())


def _replicated(mesh, arg_shapes):
    """A replicated sharding, also where the partitioner gives no mesh (GSPMD shardings)."""
    if mesh is None or mesh.empty:
        devices = next(iter(s.sharding for s in arg_shapes if s.sharding is not None))._device_assignment
        mesh = jax.sharding.Mesh(np.asarray(devices), ("devices",))
    return mesh, NamedSharding(mesh, PartitionSpec())


def partition(local: Callable, names_in, names_out, in_tree, *, reduce: bool = False) -> Callable:
    """`local(*args)` as a custom_partitioning call that runs it on each device's block.

    `names_in` / `names_out` give each flat operand's / result's dim names (see `Layout`);
    `local` must compute on any block of the named non-time dims (rows are independent).
    With `reduce`, a result that lacks a sharded dim (a parameter's gradient, summed over the
    dims the parameter is broadcast over) is psummed over that dim's mesh axes.
    """

    def flat_local(*flat):
        return local(*jax.tree.unflatten(in_tree, flat))

    fn = custom_partitioning(flat_local)

    # These run inside XLA's partitioner, where an exception aborts the process: anything
    # they cannot read (shardings without a mesh) falls back to replicated operands.
    def shardings(mesh, arg_shapes):
        given = [s.sharding for s in arg_shapes]
        if any(s is not None and not isinstance(s, NamedSharding) for s in given) or mesh is None or mesh.empty:
            mesh, rep = _replicated(mesh, arg_shapes)
            return mesh, {}, [rep] * len(names_in), [rep] * len(names_out)
        specs = [PartitionSpec() if s is None else s.spec for s in given]
        axes = dim_axes(names_in, specs)
        ins = [NamedSharding(mesh, spec_of(n, axes)) for n in names_in]
        outs = [NamedSharding(mesh, spec_of(n, axes)) for n in names_out]
        return mesh, axes, ins, outs

    def infer(mesh, arg_shapes, result_shape):
        del result_shape
        return tuple(shardings(mesh, arg_shapes)[3])

    def part(mesh, arg_shapes, result_shape):
        del result_shape
        mesh, axes, ins, outs = shardings(mesh, arg_shapes)

        def lower(*flat):
            out = list(flat_local(*flat))
            for i, leaf_names in enumerate(names_out):
                summed = _reduced_axes(leaf_names, axes) if reduce else ()
                if summed:
                    out[i] = jax.lax.psum(out[i], summed)
            return tuple(out)

        return mesh, lower, tuple(outs), tuple(ins)

    fn.def_partition(
        partition=part,
        infer_sharding_from_operands=infer,
        sharding_rule=_sdy_rule(names_in, names_out),
    )
    return fn


def _fold(v, batched: bool, size: int):
    return v if batched else jnp.broadcast_to(v, (size, *v.shape))


def _fold_param(v, batched: bool, size: int, step_rank: int):
    v = _fold(v, batched, size)
    # (V, *s) with s broadcastable to the per-step shape: align s to its trailing axes.
    return v.reshape((size,) + (1,) * (step_rank - (v.ndim - 1)) + v.shape[1:])


def _unfold_param(g, p_shape):
    return g.reshape((g.shape[0], *p_shape))


def _is_float(v) -> bool:
    return v is not None and jnp.issubdtype(v.dtype, jnp.floating)


def per_block(fn: Callable, x: dict, p: dict, *, axis: int):
    """`fn(x, p, axis=axis)` as a custom_partitioning call: one call per device block.

    The partitioning alone, with neither autodiff nor batching rules: call it where those are
    supplied around it (inside a `custom_vjp` and a `custom_vmap`, as the Triton launchers are).
    `fn` returns a pytree of arrays of the per-step shape (with x's feature axes); None leaves
    are allowed.
    """
    if jax.device_count() == 1:
        return fn(x, p, axis=axis)
    layout = Layout.of(x, axis)
    flat, tree = jax.tree.flatten((x, p))
    out_shape = jax.eval_shape(functools.partial(fn, axis=axis), x, p)
    out_flat, out_tree = jax.tree.flatten(out_shape)
    names_out = [layout.per_step(o.shape) for o in out_flat]

    def local(xl, pl):
        return tuple(jax.tree.leaves(fn(xl, pl, axis=axis)))

    out = partition(local, _leaf_names(layout, x, p), names_out, tree)(*flat)
    return jax.tree.unflatten(out_tree, out)


def _forward_call(fn: Callable, axis: int) -> Callable:
    """`per_block(fn)` with a vmap rule that folds the vmapped axis into the batch axes."""

    @jax.custom_batching.custom_vmap
    def run(x, p):
        return per_block(fn, x, p, axis=axis)

    @run.def_vmap
    def rule(axis_size, in_batched, x, p):
        xb, pb = in_batched
        rank = _step_rank(x, xb)
        x = {k: None if v is None else _fold(v, xb[k], axis_size) for k, v in x.items()}
        p = {k: _fold_param(v, pb[k], axis_size, rank) for k, v in p.items()}
        out = _forward_call(fn, axis + 1)(x, p)
        return out, jax.tree.map(lambda _: True, out)

    return run


def _step_rank(x: dict, batched: dict) -> int:
    """The unbatched rank of the per-step shape, inside a vmap rule."""
    for k in _STEP_KEYS:
        if x.get(k) is not None:
            return x[k].ndim - int(batched[k])
    raise ValueError(f"no per-step input among {sorted(x)}")


def _backward_call(fn: Callable, axis: int) -> Callable:
    """(x, p, ct) -> cotangents of x's floating leaves and of p, partitioned, vmappable."""

    @jax.custom_batching.custom_vmap
    def run(x, p, ct):
        layout = Layout.of(x, axis)
        xf = {k: v for k, v in x.items() if _is_float(v)}
        rest = {k: v for k, v in x.items() if not _is_float(v)}
        flat, tree = jax.tree.flatten((x, p, ct))
        names_in = _leaf_names(layout, x, p, ct)
        gx_names = _leaf_names(layout, xf, {})
        gp_names = _leaf_names(layout, {}, p)
        names_out = gx_names + gp_names

        def local(xl, pl, ctl):
            xfl = {k: xl[k] for k in xf}
            restl = {k: xl[k] for k in rest}
            _, vjp = jax.vjp(lambda a, b: fn({**a, **restl}, b, axis=axis), xfl, pl)
            gx, gp = vjp(ctl)
            return tuple(jax.tree.leaves(gx)) + tuple(jax.tree.leaves(gp))

        # A parameter's gradient sums over the dims it is broadcast over: over the devices too.
        out = partition(local, names_in, names_out, tree, reduce=True)(*flat)
        n = len(gx_names)
        gx = jax.tree.unflatten(jax.tree.structure(xf), out[:n])
        gp = jax.tree.unflatten(jax.tree.structure(p), out[n:])
        return gx, gp

    @run.def_vmap
    def rule(axis_size, in_batched, x, p, ct):
        xb, pb, cb = in_batched
        step_rank = _step_rank(x, xb)
        p_shapes = {k: v.shape[1:] if pb[k] else v.shape for k, v in p.items()}
        x = {k: None if v is None else _fold(v, xb[k], axis_size) for k, v in x.items()}
        p = {k: _fold_param(v, pb[k], axis_size, step_rank) for k, v in p.items()}
        ct = jax.tree.map(lambda v, b: _fold(v, b, axis_size), ct, cb)
        gx, gp = _backward_call(fn, axis + 1)(x, p, ct)
        gp = {k: _unfold_param(g, p_shapes[k]) for k, g in gp.items()}
        out = (gx, gp)
        return out, jax.tree.map(lambda _: True, out)

    return run


def _auto(fn: Callable, axis: int) -> Callable:
    """The op as custom_vjp(custom_vmap(custom_partitioning)) forward and backward calls."""

    @jax.custom_vjp
    def op(x, p):
        return _forward_call(fn, axis)(x, p)

    def op_fwd(x, p):
        return _forward_call(fn, axis)(x, p), (x, p)

    def op_bwd(res, ct):
        x, p = res
        gxf, gp = _backward_call(fn, axis)(x, p, ct)
        gx = {k: gxf[k] if k in gxf else _zero_cotangent(v) for k, v in x.items()}
        return gx, gp

    op.defvjp(op_fwd, op_bwd)
    return op


def _zero_cotangent(v):
    if v is None:
        return None
    return np.zeros(v.shape, dtype=jax.dtypes.float0)


# ---------------------------------------------------------------------------------------------


def per_shard(fn: Callable, x: dict, p: dict, *, axis: int, implementation: str):
    """`fn(x, p, axis=axis)` run on each device's block of the batch axes (see the module doc).

    Args:
      fn: the op on one block, `fn(x, p, *, axis)`, returning a pytree of arrays of the
        per-step shape (with x's feature axes).
      x: the op's inputs: per-step arrays, flags, edge arrays (bootstrap_value, initial).
      p: parameters broadcastable to the per-step shape.
      axis: the time axis of the per-step arrays.
      implementation: the implementation `fn` runs; opaque ones (Triton) are partitioned
        explicitly under auto sharding.

    Returns:
      fn's outputs, with the batch sharding of the inputs.
    """
    if jax.device_count() == 1 or _all_manual():
        return fn(x, p, axis=axis)
    leaves = jax.tree.leaves((x, p))
    explicit = _explicit_axes(leaves)
    if explicit is not None:
        mesh, names = explicit
        return _shard_map(fn, x, p, axis=axis, layout=Layout.of(x, axis), mesh=mesh, explicit=names)
    if implementation in OPAQUE:
        return _auto(fn, axis)(x, p)
    return fn(x, p, axis=axis)
