"""Block-size / warp / split tuning on the GPU: device time of each launch configuration.

Usage: python tests/gpu_runs/tune.py OUT.json [ops] [time_major|columns|vector]
(time_major: only the time-major shapes; columns: only time-major rows of 256 steps or more,
and only the column-block configurations; vector: only batch-major rows of a multiple of 4
steps, and only the VEC_BATCH_MAJOR configurations)
For each shape and configuration (overrides of the launch constants in
rlscan_jax/_src/triton/launch.py), the op's forward is compiled, checked against the associative
reference, and timed from the profiler trace (kernel time only, all launches of a call).
Prints the best configuration per shape. The first configuration is the shipped one.
"""

import json
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
]
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
    {"VEC_BATCH_MAJOR": 4},
    {"VEC_BATCH_MAJOR": 4, "LOOKBACK_FOLD": 0},
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
    # Column blocks split by the look-back with a windowed fold (prepared, not yet measured).
    {"COLUMN_WINDOW": 8},
    {"COLUMN_WINDOW": 4},
    {"COLUMN_WINDOW": 16},
    {"COLUMN_WINDOW": 8, "COLUMN_WINDOW_BT": 4},
    {"COLUMN_WINDOW": 4, "COLUMN_WINDOW_BT": 4},
    {"COLUMN_WINDOW": 8, "COLUMN_MIN_T": 1},
    # The windowed fold for the other look-back blocks (batch-major rows, few time-major rows).
    {"LOOKBACK_WINDOW": 16},
    {"LOOKBACK_WINDOW": 8},
    {"LOOKBACK_WINDOW": 16, "SPLIT_BLOCK_ELEMS": 1024},
    {"LOOKBACK_WINDOW": 16, "SPLIT_BLOCK_ELEMS": 2048},
]


SHIPPED = {name: getattr(launch, name) for name in {k for c in CONFIGS for k in c}}
# What each op's launcher passes to the plan besides the shape (as rlscan_jax/_src/triton/launchers).
PLAN_ARGS = {"vtrace": lambda: (launch.SPLIT_BLOCK_ELEMS,)}


def make(op, shape, axis, impl):
    """The op's forward, compiled now: later changes to the launch constants cannot retrace it."""
    key = jax.random.split(jax.random.PRNGKey(0), 3)
    r = jax.random.normal(key[0], shape, jnp.float32)
    v = jax.random.normal(key[1], shape, jnp.float32)
    done = jax.random.bernoulli(key[2], 0.02, shape)
    batch = tuple(s for i, s in enumerate(shape) if i != axis)
    boot = jnp.zeros(batch, jnp.float32)
    v1, v5 = v * 0.1, v * 0.5  # outside the timed program
    if op == "gae":
        f = lambda: rlscan_jax.gae(r, v, terminated=done, bootstrap_value=boot, time_axis=axis, implementation=impl)
        nbytes = r.size * 17
    elif op == "vtrace":
        f = lambda: rlscan_jax.vtrace(
            r, v, v1, terminated=done, bootstrap_value=boot, time_axis=axis, implementation=impl
        )
        nbytes = r.size * 21
    elif op == "retrace":
        f = lambda: rlscan_jax.retrace(r, v, v5, v1, terminated=done, time_axis=axis, implementation=impl)
        nbytes = r.size * 21
    elif op == "eligibility_traces":
        f = lambda: rlscan_jax.eligibility_traces(r, done, gamma=0.99, lambda_=0.9, time_axis=axis, implementation=impl)
        nbytes = r.size * 9
    else:
        f = lambda: rlscan_jax.discounted_returns(r, terminated=done, time_axis=axis, implementation=impl)
        nbytes = r.size * 9
    return jax.jit(f).lower().compile(), nbytes


def _selected(cfg, only_columns, only_vector):
    if only_columns:
        return not cfg or any(k.startswith("COLUMN") for k in cfg)
    if only_vector:
        return not cfg or "VEC_BATCH_MAJOR" in cfg
    return True


def configure(cfg):
    for name, value in {**SHIPPED, **cfg}.items():
        setattr(launch, name, value)
    jax.clear_caches()
    batching.launcher.cache_clear()
    ops._op.cache_clear()


def main(out, ops_=("gae",), only_time_major=False, only_columns=False, only_vector=False):
    x = jnp.ones((1 << 29,), jnp.float32)
    cp = jax.jit(lambda x: x * 1.0000001)
    jax.block_until_ready(cp(x))
    s = devicetime.run([devicetime.Job("copy", lambda: cp(x), windows=5)])
    copy_us = float(np.median(devicetime.per_call_us(s.windows["copy"], 1)[0]))
    bw = 2 * x.nbytes / copy_us / 1e3
    print(f"copy {bw:.0f} GB/s", flush=True)
    env = environment()  # the device, versions and date of the run, for the output
    records = []
    for op in ops_:
        for shape, axis in SHAPES:
            if only_time_major and (axis != 0 or len(shape) < 2):
                continue
            if only_columns and (axis != 0 or len(shape) < 2 or shape[0] < 256):
                continue
            if only_vector and (axis != 1 or shape[1] % 4):
                continue
            ref_fn, nbytes = make(op, shape, axis, "associative")
            ref = jax.tree.leaves(ref_fn())
            g = launch.geometry(shape, axis % len(shape))
            jobs, seen = [], {}
            for cfg in [c for c in CONFIGS if _selected(c, only_columns, only_vector)]:
                configure(cfg)
                p = launch.plan(g, *PLAN_ARGS.get(op, lambda: ())())
                # the launch differs in the vector hint and the carry chain too
                p = (p, launch.vector_width(g, p), launch.CARRY_SEGMENTS if p.nseg > 1 and not p.lookback else 0)
                if p in seen:
                    continue
                try:
                    fn, _ = make(op, shape, axis, "triton")
                except Exception as e:  # a compiler failure is a result too
                    print(f"{op} {shape} ax{axis} {cfg}: FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
                    continue
                got = jax.tree.leaves(fn())
                err = max(float(jnp.max(jnp.abs(a - b))) for a, b in zip(got, ref))
                seen[p] = (cfg, err)
                jobs.append(devicetime.Job(str(len(jobs)), fn, windows=7))
            s = devicetime.run(jobs)
            shape_recs = []
            for job, ((p, vec, kc), (cfg, err)) in zip(jobs, seen.items()):
                samples, nev = devicetime.per_call_us(s.windows[job.name], 1)
                us = float(np.median(samples))
                frac = nbytes / (us * 1e-6) / (bw * 1e9)
                plan = {**p._asdict(), "VEC": vec, "KC": kc}
                shape_recs.append(
                    dict(op=op, shape=shape, axis=axis, cfg=cfg, plan=plan, us=us, frac=frac, err=err, events=nev)
                )
            records += shape_recs
            for r in shape_recs:
                print(f"    {r['cfg']} {r['plan']} {r['us']:.1f}us err {r['err']:.1e}", flush=True)
            ok = [r for r in shape_recs if r["err"] < 1e-3]
            best = min(ok, key=lambda r: r["us"])
            print(
                f"{op} {shape} ax{axis}: {len(shape_recs)} plans, best {best['cfg']} {best['plan']} "
                f"{best['us']:.1f}us {100 * best['frac']:.0f}%; worst {max(r['us'] for r in shape_recs):.1f}us; "
                f"bad {len(shape_recs) - len(ok)}",
                flush=True,
            )
            with open(out, "w") as f:  # after every shape: a run cut short keeps what it measured
                json.dump({**env, "argv": sys.argv[1:], "copy_bw_gbps": bw, "records": records}, f)


if __name__ == "__main__":
    main(
        sys.argv[1],
        tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else ("gae",),
        len(sys.argv) > 3 and sys.argv[3] in ("time_major", "columns"),
        len(sys.argv) > 3 and sys.argv[3] == "columns",
        len(sys.argv) > 3 and sys.argv[3] == "vector",
    )
