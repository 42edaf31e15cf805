"""End-to-end time of a PPO update with each GAE implementation, and the estimator's share of it.

    python -m benchmarks.ppo_update --out benchmarks/results/ppo_update_h200.json   # GPU
    python -m benchmarks.ppo_update --quick --out /tmp/ppo_update_quick.json      # CPU smoke run

For each rollout size (num_envs × num_steps on CartPole-v1, every other hyperparameter at
`examples/ppo.py`'s defaults) and each implementation of `rlscan_jax.gae`, two programs:

- update: the jitted step of `examples.ppo.make_update_step` (rollout, GAE, `update_epochs` ×
  `num_minibatches` gradient steps), blocked on its new state and metrics;
- gae: `make_ppo(config).advantages` jitted (the critic on the true next observations, then
  `rlscan_jax.gae`) on the trajectory that the update rolls out.

How. Every program is compiled ahead of time (lowering on the main thread, XLA compiling on a
thread pool) and run once before anything is timed. All implementations at one size start from
the same `RunnerState` (one seed), so they roll out the same trajectory; each one's GAE outputs
on it are checked against "associative" (relative error ≤ 1e-4) before it is timed. Wall time
is taken per call with `block_until_ready`, `--repeats` times, in rounds that time every
implementation once each, so that drift on a shared machine hits all alike; records give the
median with min and max. On a GPU the device time of each program (the sum of its kernels'
durations: no launch gaps, no host dispatch) comes from a profiler trace (`benchmarks.devicetime`).

A single GAE call's wall time includes one host dispatch (the header's `dispatch_us`), which the
update pays once for the whole step, so the wall-clock share slightly overstates the
estimator's part; the device-time share has no such term.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import os
import sys
import time
from collections.abc import Callable, Sequence

import jax
import numpy as np

from benchmarks import devicetime, run
from examples import ppo

IMPLEMENTATIONS = ("triton", "associative", "sequential")
REFERENCE = "associative"
TOLERANCE = run.TOLERANCE["float32"]


@dataclasses.dataclass(frozen=True)
class Settings:
    """What to run (the command line; see `parse_args`)."""

    sizes: tuple[int, ...] = (4096, 16384)
    num_steps: int = 128
    impls: tuple[str, ...] = IMPLEMENTATIONS
    repeats: int = 10
    profile: bool = False
    update_windows: int = 3
    gae_windows: int = 5
    compile_workers: int = 8


def make_config(num_envs: int, num_steps: int, implementation: str | None = None) -> ppo.PPOConfig:
    """examples/ppo.py's defaults on CartPole-v1 at one rollout size; raises if the size is invalid."""
    config = ppo.PPOConfig(
        env_name="CartPole-v1", num_envs=num_envs, num_steps=num_steps, implementation=implementation
    )
    config.validate()
    return config


def _wall_ms(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    jax.block_until_ready(fn())
    return (time.perf_counter() - t0) * 1e3


def _spread(samples: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    """(median, min, max), or Nones without samples."""
    if not samples:
        return None, None, None
    return float(np.median(samples)), float(min(samples)), float(max(samples))


def _ratio(num: float | None, den: float | None) -> float | None:
    return None if num is None or den is None or den <= 0 else num / den


def _avals(tree):
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), tree)


def header(settings: Settings, unavailable: dict[str, str], argv: Sequence[str] = ()) -> dict:
    """Device, versions, date and the PPO configuration of the run."""
    config = dataclasses.asdict(make_config(settings.sizes[0], settings.num_steps))
    config.update(num_envs=list(settings.sizes), implementation=list(settings.impls))
    return {
        "record": "header",
        "benchmark": "ppo_update",
        **run.environment("gymnax", "optax"),
        "dispatch_us": run._round(run.dispatch_us()),
        "implementations": list(settings.impls),
        "unavailable": unavailable,
        "config": config,
        "settings": {
            **dataclasses.asdict(settings),
            "timer": "wall clock per call, block_until_ready",
            "reference": REFERENCE,
            "tolerance": TOLERANCE,
        },
        "argv": list(argv),
    }


def _base_record(config: ppo.PPOConfig, impl: str) -> dict:
    return {
        "record": "result",
        "num_envs": config.num_envs,
        "num_steps": config.num_steps,
        "batch_size": config.batch_size,
        "minibatch_size": config.minibatch_size,
        "implementation": impl,
        "status": "ok",
        "note": None,
        "gae_max_err": None,
        "total_loss": None,
        "update_ms": None,
        "update_ms_min": None,
        "update_ms_max": None,
        "gae_ms": None,
        "gae_ms_min": None,
        "gae_ms_max": None,
        "samples": 0,
        "gae_share": None,
        "update_speedup_vs_sequential": None,
        "update_speedup_vs_associative": None,
        "env_steps_per_s": None,
        "update_device_ms": None,
        "gae_device_ms": None,
        "gae_share_device": None,
        "device_samples": 0,
        "compile_s": None,
    }


def measure(settings: Settings, out: str | None = None, argv: Sequence[str] = ()) -> tuple[dict, list[dict]]:
    """Compiles, checks and times every (size, implementation); writes `out` after each size.

    Returns:
      (the header record, one record per (num_envs, implementation)).
    """
    t_start = time.perf_counter()
    unavailable = {}
    for impl in settings.impls:
        try:
            ppo.check_implementation(impl)
        except ValueError as e:  # the library's "cannot run here"
            unavailable[impl] = str(e)
            print(f"skipping implementation {impl!r}: {run._short(e)}", flush=True)
    impls = [i for i in settings.impls if i not in unavailable]
    head = header(settings, unavailable, argv)
    print(f"PPO update on {head['device']} ({head['platform']}); dispatch {head['dispatch_us']} µs", flush=True)

    # One initial state and trajectory per size; every program lowered, then compiled in parallel.
    compiler = run._Compiler(settings.compile_workers)
    inputs = {}
    for n in settings.sizes:
        config = make_config(n, settings.num_steps)
        fns = ppo.make_ppo(config)
        state = jax.block_until_ready(jax.jit(fns.init)(jax.random.key(config.seed)))
        traj_avals = jax.eval_shape(fns.rollout, state)[1]
        compiler.submit((n, "rollout"), jax.jit(fns.rollout), (_avals(state),))
        for impl in impls:
            cfg = dataclasses.replace(config, implementation=impl)
            _, step = ppo.make_update_step(cfg)
            compiler.submit((n, impl, "update"), step, (_avals(state),))
            compiler.submit((n, impl, "gae"), jax.jit(ppo.make_ppo(cfg).advantages), (_avals(state.params), traj_avals))
        inputs[n] = (config, state)
    for fut in compiler.futures.values():
        fut.exception()  # wait; errors are reported per case below
    compiler.close()
    print(f"compiled {len(compiler.futures)} programs in {time.perf_counter() - t_start:.1f}s", flush=True)

    records: list[dict] = []
    for n in settings.sizes:
        config, state = inputs[n]
        rollout, _ = compiler.result((n, "rollout"))
        _, traj = jax.block_until_ready(rollout(state))  # the rollout does not change the parameters
        programs = {}
        for impl in impls:
            try:
                (update, update_s), (gae, gae_s) = (compiler.result((n, impl, p)) for p in ("update", "gae"))
                programs[impl] = (update, gae, update_s + gae_s)
            except Exception as e:  # becomes an "error" record
                programs[impl] = e
        for rec in measure_size(settings, config, state, traj, programs, unavailable):
            records.append(rec)
            print(f"  {_line(rec)}", flush=True)
        head["elapsed_s"] = round(time.perf_counter() - t_start, 1)
        if out:
            run.write_results(out, head, records)
    return head, records


def measure_size(
    settings: Settings,
    config: ppo.PPOConfig,
    state: ppo.RunnerState,
    traj: ppo.Trajectory,
    programs: dict[str, tuple | Exception],
    unavailable: dict[str, str],
) -> list[dict]:
    """Checks and times the compiled programs of one size; one record per implementation.

    Args:
      settings: repeats and profiling.
      config: the size's configuration (implementation unset).
      state: the initial state every update starts from.
      traj: the trajectory that `state` rolls out, for the GAE programs.
      programs: implementation -> (compiled update, compiled gae, compile seconds), or the
        exception that lowering or compiling raised.
      unavailable: implementation -> why it was not run.
    """
    recs = {impl: _base_record(config, impl) for impl in settings.impls}
    for impl, why in unavailable.items():
        recs[impl].update(status="skipped", note=why)
    gae_args = (state.params, traj)
    progs, outs = {}, {}
    for impl, prog in programs.items():
        if isinstance(prog, Exception):
            recs[impl].update(status="error", note=f"compile: {run._short(prog)}")
            continue
        update, gae, recs[impl]["compile_s"] = prog
        try:
            _, metrics = jax.block_until_ready(update(state))  # warm-up
            recs[impl]["total_loss"] = float(metrics.total_loss)
            outs[impl] = jax.block_until_ready(gae(*gae_args))
            progs[impl] = (update, gae)
        except Exception as e:  # recorded; the other implementations still run
            recs[impl].update(status="error", note=run._short(e))
    for impl in list(progs):
        if REFERENCE not in outs:
            recs[impl]["note"] = f"GAE not checked: no {REFERENCE!r} outputs"
            continue
        err = recs[impl]["gae_max_err"] = run._round(run.relative_error(outs[impl], outs[REFERENCE]))
        if not err <= TOLERANCE:  # also catches NaN
            recs[impl].update(status="failed", note=f"GAE differs from {REFERENCE!r} by more than {TOLERANCE}")
            del progs[impl]
    del outs

    # Wall clock: rounds that time every implementation once each.
    update_ms = {impl: [] for impl in progs}
    gae_ms = {impl: [] for impl in progs}
    for _ in range(settings.repeats):
        for impl, (update, gae) in progs.items():
            update_ms[impl].append(_wall_ms(functools.partial(update, state)))
            gae_ms[impl].append(_wall_ms(functools.partial(gae, *gae_args)))
    for impl in progs:
        med, lo, hi = _spread(update_ms[impl])
        recs[impl].update(update_ms=med, update_ms_min=lo, update_ms_max=hi, samples=settings.repeats)
        med, lo, hi = _spread(gae_ms[impl])
        recs[impl].update(gae_ms=med, gae_ms_min=lo, gae_ms_max=hi)
    if settings.profile and progs:
        profile(settings, progs, state, gae_args, recs)

    base = {k: recs[k]["update_ms"] if k in recs else None for k in ("sequential", "associative")}
    for rec in recs.values():
        rec.update(
            gae_share=_ratio(rec["gae_ms"], rec["update_ms"]),
            gae_share_device=_ratio(rec["gae_device_ms"], rec["update_device_ms"]),
            update_speedup_vs_sequential=_ratio(base["sequential"], rec["update_ms"]),
            update_speedup_vs_associative=_ratio(base["associative"], rec["update_ms"]),
            env_steps_per_s=_ratio(config.batch_size * 1e3, rec["update_ms"]),
        )
        for k, v in rec.items():
            if isinstance(v, float) and k != "total_loss":
                rec[k] = run._round(v, 4)
    return list(recs.values())


def profile(settings: Settings, progs: dict, state, gae_args: tuple, recs: dict) -> None:
    """Device time of each update and GAE program, from one profiler session (GPU)."""
    jobs = []
    for impl, (update, gae) in progs.items():
        jax.block_until_ready(update(state))
        jobs.append(devicetime.Job(f"{impl}/update", functools.partial(update, state), settings.update_windows))
        jobs.append(devicetime.Job(f"{impl}/gae", functools.partial(gae, *gae_args), settings.gae_windows))
    try:
        session = devicetime.run(jobs)
    except Exception as e:  # wall times stand
        for impl in progs:
            recs[impl]["note"] = f"profile failed: {run._short(e)}"
        return
    for impl in progs:
        update_us, _ = devicetime.per_call_us(session.windows.get(f"{impl}/update", []), 1)
        gae_us, _ = devicetime.per_call_us(session.windows.get(f"{impl}/gae", []), 1)
        if update_us and gae_us:
            recs[impl].update(
                update_device_ms=float(np.median(update_us)) / 1e3,
                gae_device_ms=float(np.median(gae_us)) / 1e3,
                device_samples=len(update_us),
            )
        else:
            recs[impl]["note"] = "no device events" if session.has_device else "no device in the trace"


def _fmt(x: float | None, spec: str = ".3g", suffix: str = "") -> str:
    return "" if x is None else f"{x:{spec}}{suffix}"


def _line(r: dict) -> str:
    size = f"{r['num_envs']}x{r['num_steps']} {r['implementation']}"
    if r["status"] != "ok":
        return f"{size}: {r['status'].upper()} {r['note'] or ''}"
    return (
        f"{size}: update {_fmt(r['update_ms'])} ms, gae {_fmt(r['gae_ms'])} ms "
        f"(share {_fmt(r['gae_share'], '.1%')}), vs sequential {_fmt(r['update_speedup_vs_sequential'], '.2f', '×')}"
    )


COLUMNS = (
    "envs×steps",
    "implementation",
    "update ms",
    "GAE ms",
    "GAE share",
    "update device ms",
    "GAE device ms",
    "GAE share (device)",
    "update vs sequential",
    "update vs associative",
)


def _range(r: dict, name: str) -> str:
    return f"{r[name]:.3g} ({r[name + '_min']:.3g}–{r[name + '_max']:.3g})"


def markdown_table(head: dict, records: Sequence[dict]) -> str:
    """One row per (num_envs, implementation): times in ms (median, min–max), shares, speed-ups."""
    timing = "; device time from the profiler." if head["settings"]["profile"] else "; no device time (not profiled)."
    lines = [
        f"PPO update on {head['device']}, {head['date']} (jax {head['jax']}, triton {head['triton']}, "
        f"jax-triton {head['jax_triton']}); wall clock per call, median (min–max) of "
        f"{head['settings']['repeats']}{timing}",
        "",
        "| " + " | ".join(COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for r in records:
        cells = [f"{r['num_envs']}×{r['num_steps']}", r["implementation"]]
        if r["status"] != "ok":
            note = r["note"] or ""
            cells.append(f"{r['status']}: {note if len(note) <= 100 else note[:97] + '...'}")
        else:
            cells += [
                _range(r, "update_ms"),
                _range(r, "gae_ms"),
                _fmt(r["gae_share"], ".1%"),
                _fmt(r["update_device_ms"]),
                _fmt(r["gae_device_ms"]),
                _fmt(r["gae_share_device"], ".1%"),
                _fmt(r["update_speedup_vs_sequential"], ".2f", "×"),
                _fmt(r["update_speedup_vs_associative"], ".2f", "×"),
            ]
        cells += [""] * (len(COLUMNS) - len(cells))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split(",") if x.strip())


def parse_args(argv: Sequence[str] | None = None) -> tuple[Settings, argparse.Namespace]:
    p = argparse.ArgumentParser(prog="python -m benchmarks.ppo_update", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="results JSON; the Markdown table goes next to it (.md)")
    p.add_argument("--quick", action="store_true", help="CPU smoke run: 32 envs x 16 steps, associative, sequential")
    p.add_argument("--sizes", type=_ints, help="comma list of num_envs (default 4096,16384)")
    p.add_argument("--num-steps", type=int, help="rollout length (default 128)")
    p.add_argument("--impls", help=f"comma list of {', '.join(IMPLEMENTATIONS)}")
    p.add_argument("--repeats", type=int, help="timed calls per program (default 10)")
    p.add_argument("--profile", choices=("auto", "on", "off"), default="auto", help="device time (auto: on a GPU)")
    p.add_argument("--compile-workers", type=int, default=min(8, os.cpu_count() or 1))
    a = p.parse_args(argv)
    s = Settings(
        profile=a.profile == "on" or (a.profile == "auto" and jax.default_backend() == "gpu"),
        compile_workers=a.compile_workers,
    )
    if a.quick:
        s = dataclasses.replace(s, sizes=(32,), num_steps=16, impls=("associative", "sequential"), repeats=5)
    if a.impls:
        impls = tuple(x.strip() for x in a.impls.split(",") if x.strip())
        unknown = [i for i in impls if i not in IMPLEMENTATIONS]
        if unknown:
            p.error(f"unknown implementations {unknown}; known: {', '.join(IMPLEMENTATIONS)}")
        s = dataclasses.replace(s, impls=impls)
    for name in ("sizes", "num_steps", "repeats"):
        if getattr(a, name) is not None:
            s = dataclasses.replace(s, **{name: getattr(a, name)})
    try:
        for n in s.sizes:
            make_config(n, s.num_steps)
    except ValueError as e:
        p.error(str(e))
    if s.repeats < 1:
        p.error(f"--repeats={s.repeats} must be at least 1")
    return s, a


def main(argv: Sequence[str] | None = None) -> int:
    settings, args = parse_args(argv)
    argv = sys.argv[1:] if argv is None else list(argv)
    head, records = measure(settings, out=args.out, argv=argv)
    table = markdown_table(head, records)
    md = os.path.splitext(args.out)[0] + ".md"
    with open(md, "w") as f:
        f.write(table + "\n")
    print(f"\nwrote {len(records)} records to {args.out} and the table to {md} in {head['elapsed_s']}s\n")
    print(table)
    bad = [r for r in records if r["status"] in ("failed", "error")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
