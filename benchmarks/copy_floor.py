"""Device time of a plain copy at the sizes the grid moves: the floor under any kernel of that size.

    python -m benchmarks.copy_floor benchmarks/results/copy_floor_h200.json

The suite's bandwidth limit is a case's bytes_min over the rate of one large copy (2 GiB). Small
calls cannot reach that rate, because some costs do not shrink with the size: the launch's ramp,
one DRAM round trip, and the tail of the last wave. This measures a jitted `x + c` over float32
arrays that move 2^16 to 2^30 bytes (half read, half written), timed the way the suite times a
case: device time from the profiler trace, with the L2 flushed before every window. `python -m
benchmarks.report --copy-floor` then shows, for each case, how long a copy of its bytes_min takes.
Without a GPU the wall clock stands in, which only keeps the script working.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks import devicetime, run


def sizes(lo: int, hi: int, per_octave: int) -> list[int]:
    """Bytes moved, from 2^lo to 2^hi, `per_octave` sizes per doubling, each a multiple of 4 KiB.

    XLA copies an array whose length is not a multiple of its vector width at a fraction of the
    rate (on an H200, 2965821 float32 elements took 15.2 µs where 4194304 took 9.2), while every
    case of the grid moves a multiple of 4 KiB; so the sizes are too, and the curve is the floor.
    """
    steps = (hi - lo) * per_octave
    return sorted({4096 * max(1, round(2 ** (lo + i / per_octave) / 4096)) for i in range(steps + 1)})


def measure(nbytes: Sequence[int], windows: int, flush_bytes: int) -> list[dict]:
    """Device µs (median, p10, p90 over `windows`) of the copy moving each of `nbytes`."""
    f = jax.jit(lambda x, c: x + c)
    c = jnp.float32(0.0)  # an argument, so `x + c` cannot be folded away
    arrays = {b: jnp.zeros((b // 8,), jnp.float32) for b in nbytes}
    for x in arrays.values():
        jax.block_until_ready(f(x, c))
    calls = {str(b): (lambda x=x: f(x, c)) for b, x in arrays.items()}
    timed, gpu = devicetime.time_calls(calls, windows, flush_bytes)
    samples = {b: timed[str(b)] for b in arrays}
    out = []
    for b in nbytes:
        s = samples.get(b) or []
        if not s:
            continue
        us = float(np.median(s))
        out.append(
            {
                "bytes_moved": b,
                "device_us" if gpu else "wall_us": round(us, 3),
                "p10": round(float(np.percentile(s, 10)), 3),
                "p90": round(float(np.percentile(s, 90)), 3),
                "gbps": round(b / us / 1e3, 1),
                "samples": len(s),
            }
        )
    return out


def floor_us(curve: Sequence[dict], nbytes: float) -> float | None:
    """The copy's device µs at `nbytes`, interpolated log-log between measured sizes; None outside them."""
    pts = sorted((r["bytes_moved"], r["device_us"]) for r in curve if r.get("device_us"))
    for (b0, t0), (b1, t1) in itertools.pairwise(pts):
        if b0 <= nbytes <= b1:
            w = (math.log(nbytes) - math.log(b0)) / (math.log(b1) - math.log(b0)) if b1 > b0 else 0.0
            return math.exp(math.log(t0) + w * (math.log(t1) - math.log(t0)))
    return None


def load(path: str) -> list[dict]:
    with open(path) as f:
        return json.load(f)["records"]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.copy_floor", description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="results JSON")
    p.add_argument("--lo", type=int, default=16, help="smallest size, log2 bytes moved (default 16)")
    p.add_argument("--hi", type=int, default=30, help="largest size, log2 bytes moved (default 30)")
    p.add_argument("--per-octave", type=int, default=4, help="sizes per doubling (default 4)")
    p.add_argument("--windows", type=int, default=10, help="timed calls per size (default 10)")
    p.add_argument("--l2-flush-mib", type=int, default=256, help="flushed before each window (default 256)")
    a = p.parse_args(argv)
    if not 0 < a.lo <= a.hi or a.per_octave < 1 or a.windows < 1:
        p.error("need 0 < --lo <= --hi, --per-octave >= 1 and --windows >= 1")
    records = measure(sizes(a.lo, a.hi, a.per_octave), a.windows, a.l2_flush_mib * 2**20)
    head = {**run.environment(), "l2_flush_bytes": a.l2_flush_mib * 2**20, "argv": sys.argv[1:]}
    with open(a.out, "w") as f:
        json.dump({**head, "records": records}, f, indent=1)
    for r in records:
        t = r.get("device_us", r.get("wall_us"))
        print(f"{r['bytes_moved']:>12d} B  {t:9.2f} µs  {r['gbps']:8.1f} GB/s")
    print(f"wrote {len(records)} sizes to {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
