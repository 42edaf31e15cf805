"""A quick first look at kernel throughput on the GPU (the full suite is benchmarks/run.py).

In-jit time per call of each op's forward (K dependent calls inside one jitted loop), the
fewest bytes it must move, and the fraction of the measured copy bandwidth it reaches.
"""

import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

import rlscan_jax

K = 20


def timed(fn, *args, reps=5):
    jax.block_until_ready(fn(*args))
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        ts.append(time.perf_counter() - t0)
    return float(np.median(ts)) / K


def copy_bw():
    x = jnp.ones((1 << 29,), jnp.float32)
    f = jax.jit(lambda x: jax.lax.fori_loop(0, K, lambda i, y: y * 1.0000001, x))
    return 2 * x.nbytes / timed(f, x)


def run(op, shape, axis, dtype, impl):
    key = jax.random.PRNGKey(0)
    ks = jax.random.split(key, 4)
    r = jax.random.normal(ks[0], shape, dtype)
    v = jax.random.normal(ks[1], shape, dtype)
    done = jax.random.bernoulli(ks[2], 0.02, shape)
    batch = tuple(s for i, s in enumerate(shape) if i != axis % len(shape))
    boot = jnp.zeros(batch, dtype)
    it = jnp.dtype(dtype).itemsize
    n = int(np.prod(shape))
    if op == "gae":
        f = lambda r: rlscan_jax.gae(r, v, terminated=done, bootstrap_value=boot, time_axis=axis, implementation=impl)[
            0
        ]
        nbytes = n * (2 * it + 1 + 2 * it)
    elif op == "vtrace":
        f = lambda r: rlscan_jax.vtrace(
            r, v, v * 0.1, terminated=done, bootstrap_value=boot, time_axis=axis, implementation=impl
        )[0]
        nbytes = n * (3 * it + 1 + 2 * it)
    elif op == "retrace":
        f = lambda r: rlscan_jax.retrace(r, v, v, v * 0.1, terminated=done, time_axis=axis, implementation=impl)
        nbytes = n * (4 * it + 1 + it)
    elif op == "lambda_returns":
        f = lambda r: rlscan_jax.lambda_returns(
            r, v, terminated=done, bootstrap_value=boot, time_axis=axis, implementation=impl
        )
        nbytes = n * (2 * it + 1 + it)
    elif op == "discounted_returns":
        f = lambda r: rlscan_jax.discounted_returns(r, terminated=done, time_axis=axis, implementation=impl)
        nbytes = n * (it + 1 + it)
    elif op == "eligibility_traces":
        f = lambda r: rlscan_jax.eligibility_traces(
            r, done, gamma=0.99, lambda_=0.9, time_axis=axis, implementation=impl
        )
        nbytes = n * (it + 1 + it)
    elif op == "episodic_cumsum":
        f = lambda r: rlscan_jax.episodic_cumsum(r, done, reverse=True, time_axis=axis, implementation=impl)
        nbytes = n * (it + 1 + it)
    else:
        f = lambda r: rlscan_jax.linear_scan(r, v * 0.5, time_axis=axis, implementation=impl)
        nbytes = n * (3 * it)
    loop = jax.jit(lambda r: jax.lax.fori_loop(0, K, lambda i, x: x + f(x).astype(x.dtype) * 1e-6, r))
    return timed(loop, r), nbytes


def main():
    print(jax.devices()[0].device_kind, jax.__version__)
    bw = copy_bw()
    print(f"copy bandwidth {bw / 1e9:.0f} GB/s")
    shapes = [
        ((1024, 4096), 0),
        ((4096, 1024), 1),
        ((16, 65536), 0),
        ((8, 32768), 0),
        ((131072, 8), 0),
        ((8, 131072), 1),
        ((1 << 20,), 0),
        ((512, 16384), 0),
        ((16384, 512), 1),
    ]
    ops = (
        sys.argv[1].split(",")
        if len(sys.argv) > 1
        else [
            "gae",
            "vtrace",
            "retrace",
            "lambda_returns",
            "discounted_returns",
            "eligibility_traces",
            "episodic_cumsum",
            "linear_scan",
        ]
    )
    for op in ops:
        for shape, axis in shapes:
            for dtype in (jnp.float32, jnp.bfloat16):
                t, nb = run(op, shape, axis, dtype, "triton")
                extra = ""
                if op == "gae" and dtype == jnp.float32:
                    ta, _ = run(op, shape, axis, dtype, "associative")
                    extra = f" assoc {ta * 1e6:8.1f}us x{ta / t:5.1f}"
                print(
                    f"{op:18s} {shape!s:14s} ax{axis} {jnp.dtype(dtype).name:8s} {t * 1e6:8.1f}us "
                    f"{nb / t / 1e9:6.0f}GB/s {100 * nb / t / bw:5.1f}%{extra}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
