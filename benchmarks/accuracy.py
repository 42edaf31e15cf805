"""Accuracy of every estimator and implementation against the float64 oracle at T = 4096.

Two settings: γ = 0.99, λ = 0.99 (γλ ≈ 0.98) and γ = λ = 1 (no discounting: the largest
sums). Inputs are float32 or bfloat16 (bf16-rounded inputs go to the oracle too, so the error
is the computation's, not the input rounding's). Error = max |out - oracle| / max |oracle|.

    python -m benchmarks.accuracy                       # associative, sequential (and triton on a GPU)
    TRITON_INTERPRET=1 python -m benchmarks.accuracy --impls triton --rows 1   # the kernels on a CPU

Writes benchmarks/results/accuracy[_<impls>].json and prints a Markdown table; README.md's table is
`table()` of the committed files' records together (a test checks it).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import cases

from rlscan_jax._src import dispatch

SETTINGS = {"gl0.99": (0.99, 0.99), "g1-l1": (1.0, 1.0)}
DTYPES = {"float32": np.float32, "bfloat16": jnp.bfloat16}


def measure(op: str, impl: str, setting: str, dtype: str, T: int, rows: int) -> float:
    g, lam = SETTINGS[setting]
    spec = cases.OPS[op]
    inp = cases.build(
        op,
        cases.MAIN_MODE[op],
        T,
        (rows,),
        0,
        dtype=DTYPES[dtype],
        gamma=g if spec.has_gamma else None,
        lambda_=lam if spec.has_lambda else None,
    )
    got = [np.asarray(o, np.float64) for o in cases.call(inp, impl)]
    want = [np.asarray(o, np.float64) for o in cases.call_oracle(inp)]
    err = max(float(np.max(np.abs(a - b))) for a, b in zip(got, want, strict=True))
    scale = max(float(np.max(np.abs(b))) for b in want)
    return err / max(scale, 1e-30)


def table(records: list[dict]) -> str:
    """README.md's table: per op, each implementation and dtype's error, the worse of the settings."""
    worst: dict = {}
    for r in records:
        if r.get("record") != "header":
            k = (r["op"], r["implementation"], r["dtype"])
            worst[k] = max(worst.get(k, 0.0), r["rel_err"])
    cols = [(i, d) for i in dict.fromkeys(k[1] for k in worst) for d in DTYPES if any(k[1:] == (i, d) for k in worst)]
    short = {"float32": "f32", "bfloat16": "bf16"}
    lines = ["| op | " + " | ".join(f"{i} {short[d]}" for i, d in cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for op in dict.fromkeys(k[0] for k in worst):
        cells = ["" if (op, *c) not in worst else f"{worst[(op, *c)]:.1e}" for c in cols]
        lines.append(f"| {op} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impls", default=None, help="comma-separated; default: every implementation that can run")
    ap.add_argument("--T", type=int, default=4096)
    ap.add_argument("--rows", type=int, default=8)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    impls = args.impls.split(",") if args.impls else ["associative", "sequential"]
    if args.impls is None and dispatch.triton_unavailable_reason() is None and not dispatch.interpret_mode():
        impls.append("triton")
    records = []
    for op in cases.OP_NAMES:
        for impl in impls:
            for setting in SETTINGS:
                for dtype in DTYPES:
                    e = measure(op, impl, setting, dtype, args.T, args.rows)
                    records.append(dict(op=op, implementation=impl, setting=setting, dtype=dtype, rel_err=e))
                    print(f"{op:20s} {impl:12s} {setting:7s} {dtype:9s} {e:.2e}", flush=True)
    header = {
        "record": "header",
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "backend": jax.default_backend(),
        "device": jax.devices()[0].device_kind,
        "interpreter": dispatch.interpret_mode(),
        "jax": jax.__version__,
        "T": args.T,
        "rows": args.rows,
        "metric": "max |out - oracle| / max |oracle| over all outputs, oracle in float64 on the same inputs",
    }
    out = args.out or f"benchmarks/results/accuracy_{'-'.join(impls)}.json"
    with open(out, "w") as fh:
        json.dump([header, *records], fh, indent=1)
    print(f"wrote {out}")
    print(table(records))


if __name__ == "__main__":
    main()
