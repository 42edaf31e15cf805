"""How many Triton launches the compiled gradient holds, with γ (linear_scan: b of one value)
differentiated or only traced, in float32 and bfloat16: the bfloat16 backward runs the forward
kernel again with a float32 output for the parameters' gradients (ops.py, param_residual), a
launch XLA should drop where that gradient is not used (GAE), and cannot for linear_scan (its
fused backward writes d b beside d a). Prints one line per case; needs a GPU."""

import functools

import jax
import jax.numpy as jnp
import numpy as np

import rlscan_jax

T, N = 1024, 4096
rng = np.random.default_rng(0)
x = {k: rng.normal(size=(T, N)).astype(np.float32) for k in ("rewards", "values", "next_values", "a")}
done = rng.random((T, N)) < 0.02


def gae(r, v, g, *, dt):
    adv, ret = rlscan_jax.gae(
        rewards=r.astype(dt),
        values=v.astype(dt),
        next_values=jnp.asarray(x["next_values"], dt),
        terminated=done,
        gamma=g,
        lambda_=0.95,
        implementation="triton",
    )
    return jnp.sum(adv.astype(jnp.float32) * ret.astype(jnp.float32))


def linear(a, _, b, *, dt):
    h = rlscan_jax.linear_scan(a.astype(dt), jnp.asarray(b, dt), reverse=True, implementation="triton")
    return jnp.sum(h.astype(jnp.float32) ** 2)


for name, f, args in (("gae", gae, ("rewards", "values")), ("linear_scan", linear, ("a", "a"))):
    for dt in (jnp.float32, jnp.bfloat16):
        for argnums, what in (((0, 1), "inputs only"), ((0, 1, 2), "and the parameter")):
            fn = jax.jit(jax.grad(functools.partial(f, dt=dt), argnums))
            hlo = fn.lower(*(jnp.asarray(x[k]) for k in args), jnp.float32(0.97)).compile().as_text()
            launches = hlo.count('custom_call_target="triton_kernel_call')
            print(f"{name:12s} {jnp.dtype(dt).name:9s} gradient of {what:18s}: {launches} Triton launches")
