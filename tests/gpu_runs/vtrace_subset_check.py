"""The forty-first session's check of test_gradients_of_some_inputs' V-trace case that failed on an
H100 (4096 steps × 33 rows, batch-major, mode "boot"), through the Triton interpreter on the CPU.

    TRITON_INTERPRET=1 JAX_PLATFORMS=cpu python tests/gpu_runs/vtrace_subset_check.py 4096 33 0,1,2
    (cd .old && TRITON_INTERPRET=1 JAX_PLATFORMS=cpu python ../tests/gpu_runs/vtrace_subset_check.py \
        4096 33 4 --old)   # 4529933's package in .old/ (git archive 4529933 rlscan_jax)
    JAX_PLATFORMS=cpu python tests/gpu_runs/vtrace_subset_check.py 4096 33 4 --float64

Arguments: T, rows, and the indices of the subsets to run: each floating input alone (0-3), γ and λ
alone (4), every input with the first output alone (5), with the second alone (6); the same inputs,
log ρ nudge and weights as the GPU test. Prints, for each gradient, the kernels' value (sums only)
and associative's, the error relative to max(1, |d|), and whether the float32 tolerance holds
(about 4 minutes a subset at 4096×33). --float64 prints associative's γ and λ gradients in float32
and float64 instead (no kernels). Outputs of 2026-12-06: 2026-12-06-cpu-interp-s41-vtrace-subsets.txt.
"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
if "--old" in sys.argv:
    sys.path.insert(0, os.getcwd())  # the package in the working directory (.old/), not the checkout's

import cases
import jax
import jax.numpy as jnp
import numpy as np
from conftest import enable_x64


def main() -> None:
    op, T, batch, axis = "vtrace", int(sys.argv[1]), (int(sys.argv[2]),), -1
    inp = cases.Case(op, cases.OTHER_MODE[op], T, batch, axis, 0.95, 0.9).build()
    lr = np.asarray(inp.args["log_rhos"], np.float32)
    inp.args["log_rhos"] = jnp.asarray(np.where(np.abs(lr) < 1e-6, np.where(lr < 0, -1e-6, 1e-6), lr))
    rng = np.random.default_rng(cases.seed_of(f"{op}-{T}-{batch}-{axis} some inputs"))
    weights = [rng.normal(size=o.shape).astype(np.float32) for o in cases.call(inp, "associative")]
    inputs = inp.float_names()
    choices = [((k,), (0, 1)) for k in inputs] + [(("gamma", "lambda_"), (0, 1)), (inputs, (0,)), (inputs, (1,))]
    choices = [choices[int(i)] for i in sys.argv[3].split(",")]

    def grads(impl, wrt, used, dtype=np.float32):
        def loss(fl):
            args = {
                k: v.astype(dtype) if isinstance(v, np.ndarray) and v.dtype.kind == "f" else v
                for k, v in inp.args.items()
            }
            outs = cases.call(inp, impl, {**args, **fl})
            return sum(jnp.sum(outs[i] * weights[i].astype(dtype)) for i in used)

        return jax.grad(loss)({k: jnp.asarray(inp.args[k], dtype) for k in wrt})

    for wrt, used in choices:
        wrt, used = tuple(wrt), tuple(used)
        if "--float64" in sys.argv:
            g32 = grads("associative", wrt, used)
            with enable_x64():
                g64 = {k: float(v) for k, v in grads("associative", wrt, used, np.float64).items()}
            for k in wrt:
                print(
                    k,
                    float(g32[k]),
                    g64[k],
                    "rel err f32 associative vs f64:",
                    abs(float(g32[k]) - g64[k]) / max(1, abs(g64[k])),
                )
            continue
        t = time.time()
        got, want = grads("triton", wrt, used), grads("associative", wrt, used)
        for k in wrt:
            g, w = np.asarray(got[k], np.float64), np.asarray(want[k], np.float64)
            err = np.max(np.abs(g - w)) / max(1, np.abs(w).max())
            try:
                cases.assert_close(got[k], want[k], np.float32)
                ok = "ok"
            except AssertionError as e:
                ok = "FAIL " + str(e)[:600]
            vals = f"{float(g):.1f} {float(w):.1f} " if g.ndim == 0 else ""
            print(wrt, used, k, vals + f"{err:.2e}", ok, f"{time.time() - t:.0f}s", flush=True)


if __name__ == "__main__":
    main()
