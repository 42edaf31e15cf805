"""Batch-sharded inputs run every estimator per shard, with no collective (issue #7).

XLA_FLAGS must be set before JAX starts, so each scenario runs in a child process with
eight CPU devices (`python tests/test_sharding.py SCENARIO`); the child prints one JSON list
of checks and the test asserts that every check passed. For every public function, both
layouts and a two-axis mesh, a check compares the sharded result with the unsharded one,
reads the compiled HLO for collectives, and compares the output sharding with the input's.

Scenarios (what runs the op per shard, see rlscan_jax/_src/sharding.py):
  explicit      a mesh with Explicit axes: shard_map built from the avals' shardings.
  auto          a mesh with Auto axes, reference implementations: XLA partitions them itself.
  partitioned   Auto axes, the reference computation forced through the custom_partitioning
                path that the Triton implementation takes (custom_vjp, custom_vmap inside).
  gspmd         `partitioned` under the GSPMD partitioner instead of Shardy.
  shard_map     inside a user's shard_map, on Explicit and Auto meshes.
  time          a mesh axis on the time axis: gathered first, results correct.
  triton        the Triton kernels through Triton's interpreter (pure_callback).
  gpu           the Triton kernels on every GPU of the machine (at least two), for real: the
                scenarios above with implementation="triton" (`test_sharding_gpu`, marker `gpu`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import subprocess
import sys

import pytest

SCENARIOS = ("explicit", "auto", "partitioned", "gspmd", "shard_map", "time", "triton")
CPU_DEVICES = 8

COLLECTIVES = ("all-gather", "all-to-all", "reduce-scatter", "collective-permute", "all-reduce")


def _run_child(scenario: str) -> list[dict] | str:
    env = dict(os.environ)
    env.pop("JAX_ENABLE_X64", None)
    if scenario != "gpu":
        # Eight CPU devices; LLVM's cheap settings halve compile time and leave the HLO as it is.
        env["XLA_FLAGS"] = (
            env.get("XLA_FLAGS", "")
            + f" --xla_force_host_platform_device_count={CPU_DEVICES}"
            + " --xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
        ).strip()
        env["JAX_PLATFORMS"] = "cpu"
    if scenario == "triton":
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), scenario],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        pytest.fail(f"child {scenario!r} failed (rc={proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


def _assert_passed(checks: list[dict]) -> None:
    assert checks, "no checks ran"
    failed = [c for c in checks if not c["ok"]]
    assert not failed, f"{len(failed)} of {len(checks)} checks failed:\n" + "\n".join(
        f"{c['name']}: {c['detail']}" for c in failed
    )


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_sharding(scenario):
    checks = _run_child(scenario)
    if checks == "skip":
        pytest.skip(f"{scenario}: not runnable here")
    _assert_passed(checks)


def _gpu_count() -> int:
    import jax

    from rlscan_jax._src import dispatch

    if dispatch.interpret_mode() or dispatch.triton_unavailable_reason() is not None:
        return 0
    return len(jax.devices("gpu"))


@pytest.mark.gpu
def test_sharding_gpu():
    """Every scenario with the real Triton kernels on the machine's GPUs (issue #7, item 4)."""
    if _gpu_count() < 2:
        pytest.skip("needs two or more CUDA GPUs and jax-triton")
    checks = _run_child("gpu")
    assert checks != "skip", "the child saw fewer than two GPUs"
    _assert_passed(checks)


# =============================================================================================
# The child: eight CPU devices.

T = 12
T_SPLIT = 16  # the time length of the "time" layout, whose mesh axis splits time
OPS = (
    "gae",
    "vtrace",
    "retrace",
    "lambda_returns",
    "discounted_returns",
    "eligibility_traces",
    "episodic_cumsum",
    "linear_scan",
)
FEATURE_OPS = ("eligibility_traces", "episodic_cumsum")  # inputs carry a trailing feature axis


def _collectives(hlo: str) -> list[str]:
    """The collective instructions of a compiled HLO module (`%x = f32[..] all-gather(...)`)."""
    pattern = r"\s(" + "|".join(COLLECTIVES) + r")(?:-start)?\("
    return sorted(set(re.findall(pattern, hlo)))


class Child:
    def __init__(self, scenario: str):
        import jax
        import numpy as np

        import rlscan_jax

        self.jax, self.np, self.rl = jax, np, rlscan_jax
        self.checks: list[dict] = []
        # n devices: 8 CPU devices, or the machine's GPUs for the "gpu" scenario.
        self.n = jax.device_count()
        if scenario != "gpu" and self.n != CPU_DEVICES:
            raise RuntimeError(f"expected {CPU_DEVICES} CPU devices, got {jax.devices()}")

    # ------------------------------------------------------------------ bookkeeping

    def check(self, name: str, fn):
        try:
            detail = fn()
            self.checks.append({"name": name, "ok": detail is None, "detail": detail})
        except Exception as e:  # a failure to trace, compile or run is a failed check
            self.checks.append({"name": name, "ok": False, "detail": f"{type(e).__name__}: {e}"[:2000]})

    # ------------------------------------------------------------------ inputs

    def layout(self, kind: str):
        """(mesh shape, axis names, batch shape, time axis, PartitionSpec of the per-step arrays)."""
        P = self.jax.sharding.PartitionSpec
        n = self.n
        if kind == "tm":  # time-major [T, B]
            return (n,), ("b",), (16,), 0, P(None, "b")
        if kind == "bm":  # batch-major [B, T]
            return (n,), ("b",), (16,), 1, P("b", None)
        if kind == "2d":  # [B1, T, B2] on an n/2 x 2 mesh (4 x 2 on the CPU)
            return (n // 2, 2), ("x", "y"), (8, 4), 1, P("x", None, "y")
        if kind == "time":  # time-major, the mesh axis on time (T_SPLIT = 16 splits over n)
            return (n,), ("b",), (4,), 0, P("b", None)
        raise ValueError(kind)

    def inputs(self, op: str, batch, axis: int, seed: int = 0):
        """Per-step arrays, flags, edge arrays (and a feature axis for the forward ops)."""
        np = self.np
        rng = np.random.default_rng(seed)
        shape = list(batch)
        shape.insert(axis, T_SPLIT if batch == (4,) else T)
        shape = tuple(shape)
        edge = tuple(batch)

        def f(s=shape):
            return rng.normal(size=s).astype(np.float32)

        def flag():
            return rng.random(shape) < 0.15

        if op == "gae":
            return {"rewards": f(), "values": f(), "terminated": flag(), "bootstrap_value": f(edge)}
        if op == "vtrace":
            return {
                "rewards": f(),
                "values": f(),
                "log_rhos": 0.3 * f(),
                "terminated": flag(),
                "bootstrap_value": f(edge),
            }
        if op == "retrace":
            trunc = flag()
            return {
                "rewards": f(),
                "q_values": f(),
                "next_values": f(),
                "log_rhos": 0.3 * f(),
                "terminated": flag() & ~trunc,
                "truncated": trunc,
            }
        if op == "lambda_returns":
            trunc = flag()
            return {
                "rewards": f(),
                "values": f(),
                "next_values": f(),
                "terminated": flag() & ~trunc,
                "truncated": trunc,
            }
        if op == "discounted_returns":
            return {"rewards": f(), "terminated": flag(), "bootstrap_value": f(edge)}
        if op in ("eligibility_traces", "episodic_cumsum"):
            return {"inputs": f(shape + (3,)), "done": flag(), "initial": f(edge + (3,))}
        if op == "linear_scan":
            return {"a": f(), "b": 0.5 + 0.4 * np.tanh(f()), "initial": f(edge)}
        raise ValueError(op)

    def call(self, op: str, args: dict, axis: int, impl: str, gamma=0.9):
        rl = self.rl
        kw = {"time_axis": axis, "implementation": impl}
        if op == "gae":
            return tuple(rl.gae(**args, gamma=gamma, lambda_=0.95, **kw))
        if op == "vtrace":
            return tuple(rl.vtrace(**args, gamma=gamma, lambda_=0.9, rho_clip=1.2, **kw))
        if op == "retrace":
            return (rl.retrace(**args, gamma=gamma, lambda_=0.9, **kw),)
        if op == "lambda_returns":
            # A per-step γ: a parameter with the time axis, sharded like the rewards.
            g = gamma * (0.9 + 0.1 * self.jax.numpy.tanh(args["rewards"]))
            return (rl.lambda_returns(**args, gamma=g, lambda_=0.8, **kw),)
        if op == "discounted_returns":
            return (rl.discounted_returns(**args, gamma=gamma, **kw),)
        if op == "eligibility_traces":
            return (rl.eligibility_traces(**args, gamma=gamma, lambda_=0.9, **kw),)
        if op == "episodic_cumsum":
            return (rl.episodic_cumsum(**args, reverse=True, **kw),)
        if op == "linear_scan":
            return (rl.linear_scan(**args, **kw),)
        raise ValueError(op)

    def spec_of(self, name: str, arr_ndim: int, spec, axis: int):
        """The input spec of one argument: edge arrays drop the time entry, features add None."""
        P = self.jax.sharding.PartitionSpec
        entries = list(spec)
        if name in ("bootstrap_value", "initial"):
            entries.pop(axis)
        entries += [None] * (arr_ndim - len(entries))
        return P(*entries)

    def put(self, args: dict, mesh, spec, axis):
        jax = self.jax
        return {
            k: jax.device_put(v, jax.sharding.NamedSharding(mesh, self.spec_of(k, v.ndim, spec, axis)))
            for k, v in args.items()
        }

    # ------------------------------------------------------------------ checks

    def close(self, actual, expected, rtol=2e-5, atol=2e-5):
        np = self.np
        for a, e in zip(actual, expected, strict=True):
            a = np.asarray(a, np.float64)
            e = np.asarray(e, np.float64)
            if a.shape != e.shape:
                return f"shape {a.shape} != {e.shape}"
            scale = max(1.0, float(np.abs(e).max(initial=0.0)))
            if not np.allclose(a, e, rtol=rtol, atol=atol * scale):
                return f"max abs diff {float(np.abs(a - e).max())}"
        return None

    def unsharded(self, fn, *args):
        """The expected values: `fn` on unsharded (NumPy) inputs."""
        return self.jax.jit(fn)(*args)

    def compiled(self, fn, *args, allowed=()):
        """fn jitted and compiled for `args`, and the collectives its HLO has beyond `allowed`."""
        exe = self.jax.jit(fn).lower(*args).compile()
        found = [c for c in _collectives(exe.as_text()) if c not in allowed]
        return exe, (None if not found else f"compiled HLO has {found}")

    def out_spec(self, op, ndim, spec, axis):
        return self.spec_of("inputs" if op in FEATURE_OPS else "", ndim, spec, axis)

    def sharded_like(self, outs, mesh, spec, axis, op):
        jax = self.jax
        for o in outs:
            want = self.out_spec(op, o.ndim, spec, axis)
            if not o.sharding.is_equivalent_to(jax.sharding.NamedSharding(mesh, want), o.ndim):
                return f"output sharding {o.sharding.spec} != {want}"
        return None

    def suite(self, kind: str, impl: str, mesh, *, ops=OPS, vjp=(), vmap=(), gather_time=False):
        """The ops in one jitted program each: forward (`ops`), VJP (`vjp`), vmap (`vmap`).

        Checks the values against the same program on unsharded inputs, the compiled HLO for
        collectives, and the outputs' shardings against the inputs'.
        """
        jax, np = self.jax, self.np
        P = jax.sharding.PartitionSpec
        _, _, batch, axis, spec = self.layout(kind)
        tag = f"{kind}-{impl}"
        args = {op: self.inputs(op, batch, axis) for op in ops}
        sharded = {op: self.put(args[op], mesh, spec, axis) for op in ops}
        out_spec = P(*[None] * len(spec)) if gather_time else spec

        def forward(a, impl=impl):
            return {op: self.call(op, a[op], axis, impl) for op in a}

        expected = self.unsharded(functools.partial(forward, impl="sequential"), args)

        def run_forward():
            exe, hlo = self.compiled(forward, sharded, allowed=COLLECTIVES if gather_time else ())
            outs = exe(sharded)
            for op in ops:
                self.check(f"{tag}-{op}-forward", lambda op=op: self.close(outs[op], expected[op]))
                if not gather_time:  # with time sharded, only the values are checked
                    self.check(f"{tag}-{op}-sharding", lambda op=op: self.sharded_like(outs[op], mesh, spec, axis, op))
            return hlo

        self.check(f"{tag}-forward-hlo", run_forward)
        if vjp:
            rng = np.random.default_rng(1)
            cts = {op: tuple(rng.normal(size=e.shape).astype(np.float32) for e in expected[op]) for op in vjp}
            cts_sharded = {
                op: tuple(
                    jax.device_put(c, jax.sharding.NamedSharding(mesh, self.out_spec(op, c.ndim, out_spec, axis)))
                    for c in cts[op]
                )
                for op in vjp
            }
            vjp_args = {op: args[op] for op in vjp}
            vjp_sharded = {op: sharded[op] for op in vjp}

            def pullback(impl_, a, ct):
                grads = {}
                for op in a:
                    floats = {k: v for k, v in a[op].items() if v.dtype == np.float32}
                    rest = {k: v for k, v in a[op].items() if k not in floats}
                    _, back = jax.vjp(lambda fl, op=op, rest=rest: self.call(op, {**fl, **rest}, axis, impl_), floats)
                    grads[op] = back(ct[op])[0]
                return grads

            want = self.unsharded(functools.partial(pullback, "sequential"), vjp_args, cts)

            def run_vjp():
                exe, hlo = self.compiled(functools.partial(pullback, impl), vjp_sharded, cts_sharded)
                got = exe(vjp_sharded, cts_sharded)
                for op in vjp:
                    keys = sorted(want[op])
                    self.check(
                        f"{tag}-{op}-vjp",
                        lambda op=op, keys=keys: self.close(
                            [got[op][k] for k in keys], [want[op][k] for k in keys], rtol=1e-4, atol=1e-4
                        ),
                    )
                return None if gather_time else hlo

            self.check(f"{tag}-vjp-hlo", run_vjp)
        if vmap:
            # A vmapped leading axis of 2 beside the sharded batch axis.
            args2 = [{op: self.inputs(op, batch, axis, seed=s) for op in vmap} for s in (0, 1)]
            stacked = {op: {k: np.stack([a[op][k] for a in args2]) for k in args[op]} for op in vmap}
            stacked_sharded = {
                op: {
                    k: jax.device_put(
                        v, jax.sharding.NamedSharding(mesh, P(None, *self.spec_of(k, v.ndim - 1, spec, axis)))
                    )
                    for k, v in stacked[op].items()
                }
                for op in vmap
            }
            want = self.unsharded(jax.vmap(functools.partial(forward, impl="sequential")), stacked)

            def run_vmap():
                exe, hlo = self.compiled(jax.vmap(forward), stacked_sharded)
                got = exe(stacked_sharded)
                for op in vmap:
                    self.check(f"{tag}-{op}-vmap", lambda op=op: self.close(got[op], want[op]))
                return hlo

            self.check(f"{tag}-vmap-hlo", run_vmap)

    def gamma_grad(self, impl: str, mesh, kind="tm"):
        """d/dγ of GAE: a parameter shared across the batch sums over the devices (all-reduce)."""
        jax, np = self.jax, self.np
        _, _, batch, axis, spec = self.layout(kind)
        args = self.inputs("gae", batch, axis)
        sharded = self.put(args, mesh, spec, axis)
        w = np.random.default_rng(2).normal(size=args["rewards"].shape).astype(np.float32)
        ws = jax.device_put(w, sharded["rewards"].sharding)

        def advantages(impl_, a, gamma):
            return self.call("gae", a, axis, impl_, gamma=gamma)[0]

        # The VJP with a sharded cotangent: the only sum over devices is the one for γ.
        def dgamma(impl_, a, w_, gamma):
            _, back = jax.vjp(functools.partial(advantages, impl_, a), gamma)
            return back(w_)[0]

        want = self.unsharded(functools.partial(dgamma, "sequential"), args, w, 0.9)

        def run():
            exe, hlo = self.compiled(functools.partial(dgamma, impl), sharded, ws, 0.9, allowed=("all-reduce",))
            return self.close([exe(sharded, ws, 0.9)], [want], rtol=1e-4, atol=1e-4) or hlo

        self.check(f"{kind}-{impl}-gae-dgamma", run)

    # ------------------------------------------------------------------ scenarios

    def mesh(self, kind: str, axis_type: str):
        jax = self.jax
        shape, names, *_ = self.layout(kind)
        t = getattr(jax.sharding.AxisType, axis_type)
        return jax.make_mesh(shape, names, axis_types=(t,) * len(names))

    def in_mesh(self, mesh, use_mesh: bool):
        return self.jax.set_mesh(mesh) if use_mesh else contextlib.nullcontext()

    def matrix(self, axis_type: str, impl: str, *, use_mesh: bool):
        """Every op on both layouts and a two-axis mesh; VJP, vmap and dγ time-major."""
        for kind in ("tm", "bm", "2d"):
            mesh = self.mesh(kind, axis_type)
            with self.in_mesh(mesh, use_mesh):
                if kind == "tm":
                    self.suite(kind, impl, mesh, vjp=OPS, vmap=("gae", "eligibility_traces", "linear_scan"))
                    self.gamma_grad(impl, mesh)
                else:
                    self.suite(kind, impl, mesh)

    def force_partitioning(self):
        """Sends the reference implementations down the Triton path's custom_partitioning."""
        from rlscan_jax._src import sharding

        sharding.OPAQUE = frozenset({"triton", "sequential", "associative"})

    def detector(self):
        """A negative control: the HLO check does see a collective where there is one."""
        jax = self.jax
        mesh = self.mesh("tm", "Auto")
        x = jax.device_put(
            self.np.ones((T, 16), self.np.float32), jax.sharding.NamedSharding(mesh, self.layout("tm")[4])
        )
        _, hlo = self.compiled(lambda v: jax.numpy.cumsum(v, axis=1), x)
        self.check("detector", lambda: None if hlo else "a cumsum across the sharded axis showed no collective")

    def scenario_explicit(self):
        self.detector()
        self.matrix("Explicit", "sequential", use_mesh=True)

    def scenario_auto(self):
        # No mesh context: jit of NamedSharding inputs, as in the issue.
        self.matrix("Auto", "sequential", use_mesh=False)
        mesh = self.mesh("tm", "Auto")
        self.suite("tm", "associative", mesh, ops=("gae", "eligibility_traces"))

    def scenario_partitioned(self):
        self.force_partitioning()
        self.matrix("Auto", "sequential", use_mesh=False)
        mesh = self.mesh("bm", "Auto")
        with self.jax.set_mesh(mesh):  # with a mesh context too
            ops = ("gae", "eligibility_traces")
            self.suite("bm", "associative", mesh, ops=ops, vjp=ops, vmap=ops)

    def scenario_gspmd(self):
        self.jax.config.update("jax_use_shardy_partitioner", False)
        self.force_partitioning()
        ops = ("gae", "eligibility_traces", "lambda_returns")
        mesh = self.mesh("tm", "Auto")
        self.suite("tm", "sequential", mesh, ops=ops, vjp=ops, vmap=ops)
        self.gamma_grad("sequential", mesh)
        self.suite("2d", "sequential", self.mesh("2d", "Auto"), ops=ops)

    def scenario_shard_map(self, impl="sequential", variants=(("Explicit", False), ("Auto", False), ("Auto", True))):
        """Inside a user's shard_map the functions work unchanged, with no collective."""
        jax = self.jax
        P = jax.sharding.PartitionSpec
        _, _, batch, axis, spec = self.layout("tm")
        args = {op: self.inputs(op, batch, axis) for op in OPS}
        expected = {op: self.call(op, args[op], axis, "sequential") for op in OPS}
        in_specs = ({op: {k: self.spec_of(k, v.ndim, spec, axis) for k, v in args[op].items()} for op in OPS},)
        out_specs = {op: tuple(self.out_spec(op, e.ndim, spec, axis) for e in expected[op]) for op in OPS}

        def body(a):
            return {op: self.call(op, a[op], axis, impl) for op in OPS}

        def loss(a, gamma):
            adv = self.call("gae", a, axis, impl, gamma=gamma)[0]
            return jax.lax.psum(adv.sum(), "b")

        floats = ("bootstrap_value", "rewards", "values")

        def grad_floats(a, gamma):
            fl = {k: a[k] for k in floats}
            return jax.grad(lambda fl_, g_: loss({**a, **fl_}, g_), argnums=(0, 1))(fl, gamma)

        def total(fl, g, a=args["gae"]):
            return self.call("gae", {**a, **fl}, axis, "sequential", gamma=g)[0].sum()

        want_grad = jax.grad(total, argnums=(0, 1))({k: args["gae"][k] for k in floats}, 0.9)
        for axis_type, force in variants:
            if force:
                self.force_partitioning()
            tag = f"shard_map-{impl}-{axis_type}{'-partitioned' if force else ''}"
            mesh = self.mesh("tm", axis_type)
            with jax.set_mesh(mesh):
                sharded = {op: self.put(args[op], mesh, spec, axis) for op in OPS}
                f = jax.shard_map(body, mesh=mesh, in_specs=in_specs, out_specs=out_specs)

                def run(f=f, sharded=sharded, tag=tag):
                    exe, hlo = self.compiled(f, sharded)
                    outs = exe(sharded)
                    for op in OPS:
                        self.check(f"{tag}-{op}-forward", lambda op=op: self.close(outs[op], expected[op]))
                    return hlo

                self.check(f"{tag}-forward-hlo", run)
                g = jax.shard_map(
                    grad_floats,
                    mesh=mesh,
                    in_specs=(in_specs[0]["gae"], P()),
                    out_specs=({k: in_specs[0]["gae"][k] for k in floats}, P()),
                )

                def run_grad(g=g, sharded=sharded):
                    got = jax.jit(g)(sharded["gae"], 0.9)
                    return self.close(
                        [got[0][k] for k in floats] + [got[1]],
                        [want_grad[0][k] for k in floats] + [want_grad[1]],
                        1e-4,
                        1e-4,
                    )

                self.check(f"{tag}-grad", run_grad)

    def scenario_time(self, impl="sequential", variants=(("Explicit", False), ("Auto", False), ("Auto", True))):
        """A mesh axis on the time axis: the op gathers time, and the result is right."""
        for axis_type, force in variants:
            if force:
                self.force_partitioning()
            mesh = self.mesh("time", axis_type)
            with self.jax.set_mesh(mesh):
                self.suite("time", impl, mesh, vjp=("gae", "eligibility_traces"), gather_time=True)

    def scenario_triton(self):
        import threading

        from rlscan_jax._src import dispatch

        if dispatch.triton_unavailable_reason() is not None:
            return "skip"
        from rlscan_jax._src.triton import launch

        # Triton's interpreter patches module globals while it runs, and the eight CPU devices
        # run their callbacks on concurrent threads: run one kernel at a time.
        lock = threading.Lock()
        host_buffers = launch._host_buffers

        @contextlib.contextmanager
        def serialized():
            with lock, host_buffers():
                yield

        launch._host_buffers = serialized
        jax = self.jax
        for kind in ("tm", "bm"):
            mesh = self.mesh(kind, "Explicit")
            with jax.set_mesh(mesh):
                if kind == "tm":
                    self.suite(kind, "triton", mesh, vjp=OPS, vmap=("gae", "eligibility_traces"))
                else:
                    self.suite(kind, "triton", mesh)
        # Inside a user's shard_map: forward and gradients (γ's summed over the devices).
        self.scenario_shard_map("triton", variants=(("Explicit", False), ("Auto", False)))
        # Auto axes: custom_partitioning. JAX 0.10 does not keep a host callback (the
        # interpreter's pure_callback) alive inside a partitioned lowering (jax-ml/jax#34349),
        # so the compiled program is checked, not run; real Triton kernels have no host callback.
        from rlscan_jax._src import sharding

        for kind in ("tm", "bm"):
            mesh = self.mesh(kind, "Auto")
            _, _, batch, axis, spec = self.layout(kind)
            sharded = {op: self.put(self.inputs(op, batch, axis), mesh, spec, axis) for op in OPS}

            def forward(a, axis=axis):
                return {op: self.call(op, a[op], axis, "triton") for op in OPS}

            def run(forward=forward, sharded=sharded, mesh=mesh, spec=spec, axis=axis, kind=kind):
                exe, hlo = self.compiled(forward, sharded)
                for op in OPS:
                    for s in exe.output_shardings[op]:
                        nd = len(spec) + (1 if op in FEATURE_OPS else 0)
                        want = jax.sharding.NamedSharding(mesh, self.out_spec(op, nd, spec, axis))
                        ok = s.is_equivalent_to(want, nd)
                        self.check(f"{kind}-triton-auto-{op}-sharding", lambda ok=ok, s=s: None if ok else f"{s}")
                return hlo

            self.check(f"{kind}-triton-auto-hlo", run)

            def unpartitioned(forward=forward, sharded=sharded):
                # The control: without the partitioning the opaque kernel gathers its inputs.
                opaque, sharding.OPAQUE = sharding.OPAQUE, frozenset()
                jax.clear_caches()  # evaluate's trace is cached: trace it again without
                try:
                    _, hlo = self.compiled(forward, sharded)
                finally:
                    sharding.OPAQUE = opaque
                    jax.clear_caches()
                return None if hlo else "no collective without the partitioning: the check proves nothing"

            self.check(f"{kind}-triton-auto-control", unpartitioned)
        return None

    def per_device_kernels(self, kind: str, axis_type: str):
        """The compiled program launches the kernel on the local shard: no operand or result of
        a Triton custom call has the global per-step shape."""
        jax = self.jax
        mesh = self.mesh(kind, axis_type)
        _, _, batch, axis, spec = self.layout(kind)
        glob = list(batch)
        glob.insert(axis, T)
        glob_text = "[" + ",".join(map(str, glob)) + "]"

        def run():
            with self.in_mesh(mesh, axis_type == "Explicit"):
                sharded = {op: self.put(self.inputs(op, batch, axis), mesh, spec, axis) for op in OPS}
                hlo = jax.jit(lambda a: {op: self.call(op, a[op], axis, "triton") for op in OPS}).lower(sharded)
                text = hlo.compile().as_text()
            calls = [ln for ln in text.splitlines() if "custom-call(" in ln and "triton" in ln.lower()]
            if not calls:
                return "no Triton custom call in the compiled HLO"
            whole = [ln.strip()[:200] for ln in calls if glob_text in ln]
            if whole:
                return f"{len(whole)} of {len(calls)} kernel calls see the global shape {glob_text}: {whole[:2]}"
            return None

        self.check(f"{kind}-triton-{axis_type}-per-device-kernels", run)
        if axis_type == "Auto" and kind == "tm":
            # The control: without the partitioning the kernel does see the global shape.
            from rlscan_jax._src import sharding

            def control():
                opaque, sharding.OPAQUE = sharding.OPAQUE, frozenset()
                jax.clear_caches()
                try:
                    found = run()
                finally:
                    sharding.OPAQUE = opaque
                    jax.clear_caches()
                if found:
                    return None
                return "the unpartitioned kernels did not see the global shape: the check proves nothing"

            self.check(f"{kind}-triton-{axis_type}-per-device-control", control)

    def scenario_gpu(self):
        """The Triton kernels on the machine's GPUs: explicit and auto meshes (custom_partitioning,
        executed for real), a user's shard_map, and time-axis sharding, against the reference."""
        jax = self.jax
        if jax.default_backend() != "gpu" or self.n < 2:
            return "skip"
        self.detector()
        self.matrix("Explicit", "triton", use_mesh=True)
        self.matrix("Auto", "triton", use_mesh=False)
        mesh = self.mesh("bm", "Auto")
        with jax.set_mesh(mesh):  # Auto axes with a mesh context
            ops = ("gae", "vtrace", "eligibility_traces")
            self.suite("bm", "triton", mesh, ops=ops, vjp=ops, vmap=ops)
        for kind in ("tm", "bm", "2d"):
            for axis_type in ("Explicit", "Auto"):
                self.per_device_kernels(kind, axis_type)
        self.scenario_shard_map("triton", variants=(("Explicit", False), ("Auto", False)))
        self.scenario_time("triton", variants=(("Explicit", False), ("Auto", False)))
        return None


def _child_main(scenario: str) -> None:
    child = Child(scenario)
    result = getattr(child, f"scenario_{scenario}")()
    print("RESULT " + json.dumps("skip" if result == "skip" else child.checks), flush=True)


if __name__ == "__main__":
    _child_main(sys.argv[1])
