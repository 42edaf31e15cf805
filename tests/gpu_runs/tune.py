"""Block-size / warp / split tuning on the GPU: device time of each launch configuration.

Usage: python tests/gpu_runs/tune.py OUT.json [ops]
For each shape and configuration (BLOCK_ELEMS, ELEMS_PER_THREAD, MIN_ROWS_TIME_MAJOR,
TARGET_PROGRAMS, LOOKBACK_ELEMS), the op's forward is compiled, checked against the associative
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
from rlscan_jax._src.triton import batching, launch, ops

SHAPES = [  # (shape, time_axis): N×T as in the benchmark grid
    ((128, 4096), 0),
    ((4096, 128), 1),
    ((16, 65536), 0),
    ((65536, 16), 1),
    ((8, 32768), 0),
    ((1024, 4096), 0),
    ((4096, 1024), 1),
    ((4096, 1024), 0),
    ((131072, 8), 0),
    ((8, 131072), 1),
    ((1 << 20,), 0),
]
CONFIGS = [
    (2048, 8, 32, 528, 4096),
    (2048, 8, 32, 528, 0),  # the three-launch split only (the previous kernels)
    (1024, 4, 32, 528, 4096),
    (4096, 16, 32, 528, 4096),
    (4096, 8, 128, 528, 8192),
    (8192, 16, 256, 528, 16384),
    (4096, 16, 512, 528, 16384),
    (2048, 4, 64, 528, 16384),
]


def make(op, shape, axis, impl):
    """The op's forward, compiled now: later changes to the launch constants cannot retrace it."""
    key = jax.random.split(jax.random.PRNGKey(0), 3)
    r = jax.random.normal(key[0], shape, jnp.float32)
    v = jax.random.normal(key[1], shape, jnp.float32)
    done = jax.random.bernoulli(key[2], 0.02, shape)
    batch = tuple(s for i, s in enumerate(shape) if i != axis)
    boot = jnp.zeros(batch, jnp.float32)
    if op == "gae":
        f = lambda: rlscan_jax.gae(r, v, terminated=done, bootstrap_value=boot, time_axis=axis, implementation=impl)
        nbytes = r.size * 17
    elif op == "vtrace":
        f = lambda: rlscan_jax.vtrace(
            r, v, v * 0.1, terminated=done, bootstrap_value=boot, time_axis=axis, implementation=impl
        )
        nbytes = r.size * 21
    else:
        f = lambda: rlscan_jax.discounted_returns(r, terminated=done, time_axis=axis, implementation=impl)
        nbytes = r.size * 9
    return jax.jit(f).lower().compile(), nbytes


def configure(cfg):
    (
        launch.BLOCK_ELEMS,
        launch.ELEMS_PER_THREAD,
        launch.MIN_ROWS_TIME_MAJOR,
        launch.TARGET_PROGRAMS,
        launch.LOOKBACK_ELEMS,
    ) = cfg
    jax.clear_caches()
    batching.launcher.cache_clear()
    ops._op.cache_clear()


def main(out, ops_=("gae",)):
    x = jnp.ones((1 << 29,), jnp.float32)
    cp = jax.jit(lambda x: x * 1.0000001)
    jax.block_until_ready(cp(x))
    s = devicetime.run([devicetime.Job("copy", lambda: cp(x), windows=5)])
    copy_us = float(np.median(devicetime.per_call_us(s.windows["copy"], 1)[0]))
    bw = 2 * x.nbytes / copy_us / 1e3
    print(f"copy {bw:.0f} GB/s", flush=True)
    records = []
    for op in ops_:
        for shape, axis in SHAPES:
            ref_fn, nbytes = make(op, shape, axis, "associative")
            ref = jax.tree.leaves(ref_fn())
            g = launch.geometry(shape, axis % len(shape))
            jobs, seen = [], {}
            for cfg in CONFIGS:
                configure(cfg)
                p = launch.plan(g)
                if p in seen:
                    continue
                fn, _ = make(op, shape, axis, "triton")
                got = jax.tree.leaves(fn())
                err = max(float(jnp.max(jnp.abs(a - b))) for a, b in zip(got, ref))
                seen[p] = (cfg, err)
                jobs.append(devicetime.Job(str(len(jobs)), fn, windows=7))
            s = devicetime.run(jobs)
            shape_recs = []
            for job, (p, (cfg, err)) in zip(jobs, seen.items()):
                samples, nev = devicetime.per_call_us(s.windows[job.name], 1)
                us = float(np.median(samples))
                frac = nbytes / (us * 1e-6) / (bw * 1e9)
                shape_recs.append(
                    dict(
                        op=op, shape=shape, axis=axis, cfg=cfg, plan=p._asdict(), us=us, frac=frac, err=err, events=nev
                    )
                )
            records += shape_recs
            ok = [r for r in shape_recs if r["err"] < 1e-3]
            best = min(ok, key=lambda r: r["us"])
            print(
                f"{op} {shape} ax{axis}: {len(shape_recs)} plans, best {best['cfg']} {best['plan']} "
                f"{best['us']:.1f}us {100 * best['frac']:.0f}%; worst {max(r['us'] for r in shape_recs):.1f}us; "
                f"bad {len(shape_recs) - len(ok)}",
                flush=True,
            )
    with open(out, "w") as f:
        json.dump({"copy_bw_gbps": bw, "records": records}, f)


if __name__ == "__main__":
    main(sys.argv[1], tuple(sys.argv[2].split(",")) if len(sys.argv) > 2 else ("gae",))
