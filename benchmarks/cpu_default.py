"""Which reference implementation `implementation=None` picks on a CPU: associative vs sequential.

Times a jitted GAE forward (median of 7 calls after a warm-up, wall clock) at a few rollout
shapes on the local CPU and writes benchmarks/results/cpu_default.json. The winner at most
shapes is dispatch.CPU_DEFAULT.

    python -m benchmarks.cpu_default
"""

import datetime
import json
import os
import platform
import time

import jax
import jax.numpy as jnp
import numpy as np

import rlscan_jax

SHAPES = ((128, 8), (128, 64), (128, 4096), (1024, 64), (16, 65536), (4096, 16))  # (T, B), time-major


def median_us(fn, x, reps=7):
    jax.block_until_ready(fn(x))
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(x))
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)) * 1e6


def main(out="benchmarks/results/cpu_default.json"):
    records = []
    for T, B in SHAPES:
        rng = np.random.default_rng(0)
        r = jnp.asarray(rng.normal(size=(T, B)), jnp.float32)
        done = jnp.asarray(rng.random((T, B)) < 0.02)
        rec = {"op": "gae", "T": T, "B": B}
        for impl in ("associative", "sequential"):

            def f(r, impl=impl, done=done):
                return rlscan_jax.gae(r, r, terminated=done, bootstrap_value=r[0], implementation=impl).advantages

            rec[f"{impl}_us"] = median_us(jax.jit(f), r)
        records.append(rec)
        print(f"T={T:5d} B={B:6d} associative {rec['associative_us']:9.1f}us sequential {rec['sequential_us']:9.1f}us")
    header = {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "jax": jax.__version__,
        "sequential_wins": sum(r["sequential_us"] < r["associative_us"] for r in records),
        "shapes": len(records),
    }
    with open(out, "w") as fh:
        json.dump({"header": header, "records": records}, fh, indent=1)
    print(header)


if __name__ == "__main__":
    main()
