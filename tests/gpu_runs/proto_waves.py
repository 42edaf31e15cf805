"""Would column waves help the time-major split? A measurement with the shipped kernels only.

The three-launch split reads a time-major row's inputs twice (PHASE 1 for the segments'
composites, PHASE 2 to scan). If the columns were scanned in waves small enough that a wave's
inputs stay in the L2 between its PHASE 1 and PHASE 2, the second read would come from the L2.
This emulates that without changing a kernel: the [T, N] problem as k independent calls on
[T, N / k] inputs, run one after another (an optimization_barrier makes each call's inputs wait
for the previous call's outputs), the L2 flushed before each window as in the benchmark.

Prints, per op, shape and k: the median device µs of the window and each kernel's share.
Usage: python tests/gpu_runs/proto_waves.py [OUT.json]

Run once (2026-12-06, an H100; README.md, forty-fifth session): the scan kernels gained at most 7 %
from waves that fit the L2, less than the waves' own carry chains cost. Waves were not built.
"""

from __future__ import annotations

import collections
import json
import statistics
import sys

import jax
import jax.numpy as jnp
import numpy as np

import rlscan_jax
from benchmarks import devicetime, run

SHAPES = ((1024, 4096), (512, 16384), (4096, 1024))  # [T, N], time-major
WAVES = (1, 2, 4, 8)
WINDOWS = 7


def _inputs(op, t, n, seed):
    rng = np.random.default_rng(seed)
    f = lambda: jnp.asarray(rng.standard_normal((t, n)), jnp.float32)
    done = jnp.asarray(rng.random((t, n)) < 0.01)
    if op == "gae":
        return dict(rewards=f(), values=f(), terminated=done, bootstrap_value=f()[0])
    return dict(rewards=f(), terminated=done, bootstrap_value=f()[0])


def _call(op, x):
    if op == "gae":
        return rlscan_jax.gae(
            x["rewards"],
            x["values"],
            terminated=x["terminated"],
            bootstrap_value=x["bootstrap_value"],
            gamma=0.99,
            lambda_=0.95,
        )
    return rlscan_jax.discounted_returns(
        x["rewards"], terminated=x["terminated"], bootstrap_value=x["bootstrap_value"], gamma=0.99
    )


def _chain(op):
    def fn(parts):
        outs, prev = [], None
        for x in parts:
            if prev is not None:
                prev, x = jax.lax.optimization_barrier((prev, x))
            prev = _call(op, x)
            outs.append(prev)
        return outs

    return jax.jit(fn)


def main(argv):
    rows = []
    flush = devicetime.cache_flush(256 << 20)
    for op in ("gae", "discounted_returns"):
        for t, n in SHAPES:
            for k in WAVES:
                parts = [_inputs(op, t, n // k, i) for i in range(k)]
                f = _chain(op)
                jax.block_until_ready(f(parts))
                s = devicetime.run([devicetime.Job("w", lambda f=f, p=parts: f(p), WINDOWS)], before_window=flush)
                wins = s.windows["w"]
                totals = [sum(d for _, d, _ in w) for w in wins]
                med = sorted(range(len(wins)), key=lambda i: totals[i])[len(wins) // 2]
                by = collections.defaultdict(float)
                for _, d, name in wins[med]:
                    by[name.split("(")[0][:40]] += d
                row = dict(
                    op=op,
                    T=t,
                    N=n,
                    waves=k,
                    device_us=statistics.median(totals),
                    spread=[min(totals), max(totals)],
                    kernels=dict(by),
                )
                rows.append(row)
                share = ", ".join(f"{name} {us:.1f}" for name, us in sorted(by.items(), key=lambda kv: -kv[1]))
                print(f"{op:20s} [{t},{n}] waves {k}: {row['device_us']:7.1f} us  ({share})", flush=True)
    if len(argv) > 1:  # the run of 2026-12-06 wrote the rows alone; its call's other files have the header
        with open(argv[1], "w") as fh:
            json.dump({"header": run.environment(), "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
