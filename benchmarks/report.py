"""Markdown table, bandwidth plot and target check from the harness's JSON.

    python -m benchmarks.report benchmarks/results/h200.json            # -> h200.md, h200_bandwidth.png
    python -m benchmarks.report benchmarks/results/h200.json --targets
    python -m benchmarks.report a.json b.json --merged-out benchmarks/results/h200.json   # join parts
    python -m benchmarks.report h200.json --targets --copy-floor benchmarks/results/copy_floor_h200.json
    python -m benchmarks.report h200.json --copy-floor … --readme-table OUT   # README.md's table

Definitions (per op, N×T, layout, dtype, mode):
- bandwidth limit: bytes_min / copy bandwidth, the time a kernel that moves only the
  unavoidable bytes would take at the measured device-to-device copy rate;
- % of the limit: limit / device time (in-jit time where no device time was measured,
  marked *);
- speed-up vs X: X's in-jit time / the subject's in-jit time, both on the same inputs in the
  same run (in-jit time is what a jitted training step pays, launch gaps included);
- vs copy (with --copy-floor, benchmarks.copy_floor's curve): the device time of a plain copy
  moving bytes_min / the subject's device time, how close a case comes to the fastest call of
  its size (small calls cannot reach the large copy's rate that the limit assumes).
Cases that failed the correctness gate carry no time and never count as a speed-up.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence

from benchmarks import copy_floor, run, shapes

BASELINES = ("associative", "sequential", "rlax")
BIG = 2**22
# The rows of README.md's table (--readme-table).
README_TABLE = {"op": "gae", "dtype": "float32", "mode": "fwd"}
# The short-horizon and long-row shapes of the 60 % target (N, T).
SHORT_LONG = {(65536, 16), (32768, 8), (8, 131072), (1, 1048576)}


def load(paths: Sequence[str]) -> tuple[dict, list[dict]]:
    """Reads one or more results files; later files win on duplicate cases.

    Returns:
      (a merged header: the first file's, with every file's "runs"), the result records.
    """
    heads, by_key = [], {}
    for path in paths:
        h, records = run.load_results(path)
        if h is not None:
            heads.append(h)
        for r in records:
            by_key[run.key_of(r)] = r
    head = dict(heads[0]) if heads else {"record": "header"}
    if len(heads) > 1:
        head["runs"] = [
            {**{k: h[k] for k in run.RUN_SETUP_KEYS if k in h}, **x} for h in heads for x in h.get("runs", [])
        ]
        head["complete"] = all(h.get("complete", True) for h in heads)
        head["remaining_units"] = [u for h in heads for u in h.get("remaining_units", [])]
        head["part"] = "merged: " + ", ".join(str(h.get("part")) for h in heads)
    return head, list(by_key.values())


def _index(records: Sequence[dict]) -> dict:
    return {run.key_of(r): r for r in records}


def _order(records: Sequence[dict]) -> list[tuple]:
    """Distinct (op, N, T, layout, dtype, mode) in a reading order."""
    grid = {s: i for i, s in enumerate(shapes.GRID + shapes.QUICK_GRID)}
    ops = {o: i for i, o in enumerate(shapes.OPS)}
    seen = {(r["op"], r["N"], r["T"], r["layout"], r["dtype"], r["mode"]) for r in records}
    return sorted(
        seen,
        key=lambda k: (
            ops.get(k[0], 99),
            grid.get((k[1], k[2]), 99),
            k[1] * k[2],
            shapes.LAYOUTS.index(k[3]) if k[3] in shapes.LAYOUTS else 9,
            k[4],
            k[5],
        ),
    )


def subject_of(records: Sequence[dict], subject: str | None) -> str:
    """The implementation the table is about: as asked, else triton if measured, else associative."""
    if subject:
        return subject
    impls = {r["implementation"] for r in records}
    return "triton" if "triton" in impls else "associative"


def limit_us(r: dict) -> float:
    """Case `r`'s bandwidth limit: its bytes_min at the run's copy bandwidth, in µs."""
    return r["bytes_min"] / (r["copy_bw_gbps"] * 1e3)


def fraction(r: dict | None) -> tuple[float | None, bool]:
    """(achieved fraction of the bandwidth limit, whether it used device time)."""
    if r is None or r.get("status") != "ok" or not r.get("copy_bw_gbps"):
        return None, False
    t, device = (r["device_us"], True) if r.get("device_us") else (r.get("injit_us"), False)
    if not t:
        return None, False
    return limit_us(r) / t, device


def speedup(subject: dict | None, base: dict | None) -> float | None:
    """base in-jit time / subject in-jit time; None unless both passed the gate and were timed."""
    if not subject or not base or subject.get("status") != "ok" or base.get("status") != "ok":
        return None
    if not subject.get("injit_us") or not base.get("injit_us"):
        return None
    return base["injit_us"] / subject["injit_us"]


def _cell_speedup(subject: dict | None, base: dict | None) -> str:
    if base is None:
        return ""
    if base["status"] == "skipped":
        return "skipped"
    if base["status"] in ("failed", "error"):
        return base["status"]
    x = speedup(subject, base)
    return "" if x is None else f"{_us(x)}×"


def _us(x) -> str:
    return "" if x is None else f"{x:.3g}" if x < 1000 else f"{x:,.0f}"


def markdown_table(
    head: dict,
    records: Sequence[dict],
    subject: str | None = None,
    floor: Sequence[dict] | None = None,
    only: dict | None = None,
) -> str:
    """Per op / shape / layout / dtype / mode: the subject's times, % of the limit, speed-ups, and
    with a copy-floor curve (`floor`) the same-size copy's device time over the subject's. With
    `only` ({"op": "gae", "dtype": "float32", "mode": "fwd"}, as README.md's table): those rows
    alone, without the notes above the table."""
    subject = subject_of(records, subject)
    vs_copy = " vs copy |" if floor else ""
    idx = _index(records)
    lines = [
        f"Subject: **{subject}**. Device: {head.get('device')} ({head.get('platform')}), "
        f"copy bandwidth {head.get('copy_bw_gbps')} GB/s, jax {head.get('jax')}, triton {head.get('triton')}, "
        f"jax-triton {head.get('jax_triton')}, {head.get('date')}.",
        "",
        "% limit = bytes_min / copy bandwidth / device time (* in-jit time: no device time measured). "
        "Speed-ups are in-jit time ratios. Device µs marked † were timed with the L2 cache flushed before "
        "each call (`--l2-flush-mib`); the others before the harness flushed it, so a case whose bytes fit "
        "the L2 may have read part of its inputs from there. ‡: a launch plan other than the shipped "
        "one (`--launch`, see the record's `launch`)."
        + (
            " vs copy: a plain copy moving the case's bytes_min (device time, L2 flushed; "
            "benchmarks.copy_floor) over the device time."
            if floor
            else ""
        ),
        "",
        f"| op | N×T | layout | dtype | mode | device µs | in-jit µs | % limit |{vs_copy} "
        f"{' | '.join(f'vs {b}' for b in BASELINES if b != subject)} |",
        "|" + "---|" * (8 + bool(floor) + sum(b != subject for b in BASELINES)),
    ]
    if only:
        lines = lines[-2:]
    for op, n, t, layout, dtype, mode in _order(records):
        case = {"op": op, "layout": layout, "dtype": dtype, "mode": mode}
        if only and any(case[k] != v for k, v in only.items()):
            continue
        s = idx.get((op, subject, layout, dtype, n, t, mode))
        row = [op, f"{n}×{t}", layout, dtype, mode]
        if s is None:
            continue
        if s["status"] != "ok":
            note = f"max_err {s.get('max_err')}" if s["status"] == "failed" else (s.get("note") or "")
            note = note.replace("|", "/")
            row += [s["status"].upper(), "", note] + [""] * bool(floor)
            row += ["" for b in BASELINES if b != subject]
        else:
            frac, device = fraction(s)
            flushed = "†" if s.get("l2_flush_bytes") and s.get("device_us") is not None else ""
            flushed += "‡" if s.get("launch") else ""
            row += [_us(s.get("device_us")) + flushed, _us(s.get("injit_us"))]
            row += ["" if frac is None else f"{100 * frac:.0f}%{'' if device else '*'}"]
            if floor:
                c = copy_floor.floor_us(floor, s["bytes_min"])
                row += ["" if c is None or not s.get("device_us") else f"{100 * c / s['device_us']:.0f}%"]
            row += [_cell_speedup(s, idx.get((op, b, layout, dtype, n, t, mode))) for b in BASELINES if b != subject]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def short_table(head: dict, records: Sequence[dict]) -> str:
    """A compact summary for the terminal: one row per op and shape (time-major float32 fwd where
    measured), the in-jit µs of every implementation and the subject's % of the bandwidth limit."""
    idx = _index(records)
    names = {r["implementation"] for r in records}
    impls = [i for i in ("triton", *BASELINES) if i in names] + sorted(names - {"triton", *BASELINES})
    subject = subject_of(records, None)
    status = {}
    for r in records:
        status[r["status"]] = status.get(r["status"], 0) + 1
    lines = [
        f"{head.get('device')} | copy {head.get('copy_bw_gbps')} GB/s | cases: "
        + ", ".join(f"{v} {k}" for k, v in sorted(status.items())),
        f"in-jit µs per call; % = {subject}'s fraction of the bandwidth limit (* from in-jit time);"
        " every layout, dtype and mode: python -m benchmarks.report",
        f"{'op':<19} {'N×T':>10} {'layout':<11} {'dtype':<8} {'mode':<7} "
        + " ".join(f"{i[:11]:>11}" for i in impls)
        + f" {'%':>5}",
    ]
    rows: dict = {}  # (op, N, T) -> the case shown, in reading order, the preferred one if measured
    for k in _order(records):
        if k[:3] not in rows or k[3:] == _PREFERRED:
            rows[k[:3]] = k
    for op, n, t, layout, dtype, mode in rows.values():
        cells = []
        for i in impls:
            r = idx.get((op, i, layout, dtype, n, t, mode))
            if r is None:
                cells.append("")
            elif r["status"] != "ok":
                cells.append(r["status"])
            else:
                cells.append(_us(r.get("injit_us")))
        frac, device = fraction(idx.get((op, subject, layout, dtype, n, t, mode)))
        pct = "" if frac is None else f"{100 * frac:.0f}{'' if device else '*'}"
        lines.append(
            f"{op:<19} {f'{n}x{t}':>10} {layout:<11} {dtype:<8} {mode:<7} "
            + " ".join(f"{c:>11}" for c in cells)
            + f" {pct:>5}"
        )
    return "\n".join(lines)


_PREFERRED = ("time_major", "float32", "fwd")


def plot(head: dict, records: Sequence[dict], path: str, subject: str | None = None) -> str:
    """Achieved fraction of the bandwidth limit per shape, one line per op, one panel per dtype × mode."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    subject = subject_of(records, subject)
    mine = [r for r in records if r["implementation"] == subject]
    dtypes = [d for d in shapes.DTYPES if any(r["dtype"] == d for r in mine)] or ["float32"]
    modes = [m for m in shapes.MODES if any(r["mode"] == m for r in mine)] or ["fwd"]
    sizes = sorted({(r["N"], r["T"]) for r in mine}, key=lambda s: (shapes.GRID + shapes.QUICK_GRID + (s,)).index(s))
    fig, axes = plt.subplots(len(modes), len(dtypes), figsize=(5.5 * len(dtypes), 3.8 * len(modes)), squeeze=False)
    any_injit, top = False, 1.0
    for i, mode in enumerate(modes):
        for j, dtype in enumerate(dtypes):
            ax = axes[i][j]
            for k, op in enumerate(shapes.OPS):
                for layout, style in (("time_major", "-"), ("batch_major", "--")):
                    ys = []
                    for n, t in sizes:
                        r = next(
                            (
                                r
                                for r in mine
                                if (r["op"], r["layout"], r["dtype"], r["mode"], r["N"], r["T"])
                                == (op, layout, dtype, mode, n, t)
                            ),
                            None,
                        )
                        frac, device = fraction(r)
                        any_injit |= frac is not None and not device
                        ys.append(float("nan") if frac is None else frac)
                        top = max(top, frac or 0.0)
                    if any(y == y for y in ys):
                        ax.plot(
                            range(len(sizes)),
                            ys,
                            style,
                            marker="o",
                            ms=3,
                            color=f"C{k}",
                            label=op if layout == "time_major" else None,
                        )
            for level in (0.8, 0.6, 0.5):
                ax.axhline(level, color="grey", lw=0.5, ls=":")
            ax.set_xticks(range(len(sizes)), [f"{n}×{t}" for n, t in sizes], rotation=45, ha="right", fontsize=7)
            ax.set_title(f"{dtype} {mode}", fontsize=9)
            if j == 0:
                ax.set_ylabel("fraction of bandwidth limit")
    for ax in axes.flat:
        ax.set_ylim(0, 1.05 * top)
    axes[0][-1].legend(fontsize=7, loc="upper right")
    basis = "in-jit time (no device time)" if any_injit else "device time"
    bws = sorted({r["copy_bw_gbps"] for r in mine if r.get("copy_bw_gbps")}) or [head.get("copy_bw_gbps")]
    bw = f"{bws[0]}" if len(bws) == 1 else f"{min(bws):.0f}–{max(bws):.0f}"  # each record's own run's
    fig.suptitle(
        f"{subject} on {head.get('device')}: bytes_min / copy bw of the run ({bw} GB/s) / {basis}"
        "\nsolid: time-major [T, N], dashed: batch-major [N, T]",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


# --------------------------------------------------------------------------- targets


def _rows(records, subject, **where) -> list[dict]:
    """The subject's cases (not skipped) whose fields equal the values, or pass the predicates, in `where`."""
    out = []
    for r in records:
        if r["implementation"] != subject or r["status"] == "skipped":
            continue
        if all(f(r) if callable(f) else r[k] == f for k, f in where.items()):
            out.append(r)
    return out


def _name(r: dict) -> str:
    return f"{r['op']} {r['N']}x{r['T']} {r['layout']} {r['dtype']} {r['mode']}"


class _Check:
    """Collects the cases of one target: passed, missed (a failed gate misses), or not measured.

    A case passes where its value is at least `level` (at_least), or at most `level`; a missed
    case needs its value to change by the factor `level / value` (or `value / level`) to pass.
    `bounds` holds, where a copy floor is given, the best value a case could have: `bound` says
    how it is drawn, and a missed case whose best value misses the level too is out of reach."""

    def __init__(self, title: str, fmt: str, level: float, at_least: bool = True, bound: str = ""):
        self.title, self.fmt, self.level, self.at_least, self.bound = title, fmt, level, at_least, bound
        self.items: list[tuple[str, float | None, bool]] = []
        self.bounds: dict[str, float] = {}
        self.unmeasured = 0

    def passes(self, value: float) -> bool:
        return value >= self.level if self.at_least else value <= self.level

    def add(self, name: str, value: float | None) -> None:
        """A case's value (None: it failed the gate, which misses)."""
        self.items.append((name, value, value is not None and self.passes(value)))

    def add_value(self, r: dict, value: float | None) -> None:
        """A value computed from case `r` (None: not measured, unless `r` failed, which misses)."""
        if r["status"] != "ok":
            self.add(_name(r), None)
        elif value is None:
            self.unmeasured += 1
        else:
            self.add(_name(r), value)

    def out_of_reach(self, name: str) -> bool:
        """Whether case `name`'s best possible value (`bounds`) misses the level."""
        return name in self.bounds and not self.passes(self.bounds[name])

    def show(self, value: float) -> str:
        """`value` in the check's format, with up to 3 more digits where it would read as the level."""
        digits, kind = int(self.fmt[1:-1]), self.fmt[-1]
        for extra in range(4 if value != self.level else 1):
            fmt = f".{digits + extra}{kind}"
            if format(value, fmt) != format(self.level, fmt):
                break
        return format(value, fmt)

    def factor(self, value: float | None) -> float | None:
        """How many times better a missed case's value must get to pass (None: it failed the gate)."""
        if value is None:
            return None
        return self.level / value if self.at_least else value / self.level

    def missed(self) -> list[tuple[str, float | None, bool]]:
        """The missed cases, the farthest from the target first (failed ones before them)."""
        out = [i for i in self.items if not i[2]]
        return sorted(out, key=lambda i: -math.inf if i[1] is None else -self.factor(i[1]))

    def result(self) -> tuple[str, str]:
        if not self.items:
            why = f"{self.unmeasured} cases without the times needed" if self.unmeasured else "no cases"
            return "NOT MEASURED", f"{self.title}: {why}"
        missed = [i for i in self.items if not i[2]]
        status = "MET" if not missed else "MISSED"
        shown = missed[:5] if missed else sorted(self.items, key=lambda i: i[1])[:1]
        detail = "; ".join(f"{c} {'FAILED' if v is None else format(v, self.fmt)}" for c, v, _ in shown)
        text = f"{self.title}: {len(self.items) - len(missed)}/{len(self.items)} cases pass"
        text += f"; {'missed' if missed else 'worst'}: {detail}"
        if self.unmeasured:
            text += f" ({self.unmeasured} not measured)"
        return status, text


def targets(head: dict, records: Sequence[dict], subject: str = "triton") -> list[tuple[str, str]]:
    """Checks the performance targets; returns (MET | MISSED | NOT MEASURED, detail) per target.

    Fractions of the bandwidth limit use device time only. A case that failed the gate counts
    as missed; a case without the needed times as not measured.
    """
    return [c.result() for c in _checks(records, subject)]


# What a check's best possible value is, given a copy floor (benchmarks.copy_floor's curve).
_COPY_FRACTION = "the fraction of the limit that a plain copy of the case's bytes reaches"
_COPY_SPEEDUP = "the baseline's in-jit time over a plain copy of the case's bytes (no loop overhead)"
_COPY_BF16 = "a plain copy of the bf16 case's bytes over the fp32 case's device time as measured"


def _checks(records: Sequence[dict], subject: str, floor: Sequence[dict] | None = None) -> list[_Check]:
    """Every target's cases (see `targets`); with a copy floor, each case's best possible value."""
    idx = _index(records)
    checks = []

    def copy_us(r):
        return copy_floor.floor_us(floor, r["bytes_min"]) if floor and r.get("bytes_min") else None

    def bound(c, r, value):
        if value is not None and r["status"] == "ok":
            c.bounds[_name(r)] = value

    def copy_fraction(r):
        t = copy_us(r)
        return limit_us(r) / t if t and r.get("copy_bw_gbps") else None

    def device_fraction(r):
        frac, device = fraction(r)
        return frac if device else None

    def other(r, **change):
        k = {"op": r["op"], "impl": subject, "layout": r["layout"], "dtype": r["dtype"], "mode": r["mode"], **change}
        return idx.get((k["op"], k["impl"], k["layout"], k["dtype"], r["N"], r["T"], k["mode"]))

    big = {"N": lambda r: r["N"] * r["T"] >= BIG}
    fractions = (
        ("fp32 fwd ≥ 80% of the bandwidth limit at N·T ≥ 2^22", 0.8, {"dtype": "float32", "mode": "fwd", **big}),
        (
            "fp32 fwd ≥ 60% at 65536×16, 32768×8, 8×131072, 1×1048576",
            0.6,
            {"dtype": "float32", "mode": "fwd", "N": lambda r: (r["N"], r["T"]) in SHORT_LONG},
        ),
    )
    for title, level, where in fractions:
        c = _Check(title, ".0%", level, bound=_COPY_FRACTION)
        for r in _rows(records, subject, **where):
            c.add_value(r, device_fraction(r))
            bound(c, r, copy_fraction(r))
        checks.append(c)
    for base, level in (("associative", 3.0), ("sequential", 50.0)):
        c = _Check(f"≥ {level:g}× faster than {base} (in-jit) at T ≥ 128", ".3g", level, bound=_COPY_SPEEDUP)
        for r in _rows(records, subject, T=lambda r: r["T"] >= 128):
            b = other(r, impl=base)
            if b is not None and b["status"] == "ok":
                c.add_value(r, speedup(r, b))
                t = copy_us(r)
                bound(c, r, b["injit_us"] / t if t and b.get("injit_us") else None)
        checks.append(c)
    c = _Check("fwd+bwd ≥ 50% of its own limit at N·T ≥ 2^22", ".0%", 0.5, bound=_COPY_FRACTION)
    for r in _rows(records, subject, mode="fwd+bwd", **big):
        c.add_value(r, device_fraction(r))
        bound(c, r, copy_fraction(r))
    checks.append(c)
    c = _Check("bf16 device time ≤ 0.65× fp32 at N·T ≥ 2^22", ".2f", 0.65, at_least=False, bound=_COPY_BF16)
    for r in _rows(records, subject, dtype="bfloat16", **big):
        f = other(r, dtype="float32")
        if f is not None and f["status"] != "ok":
            c.add(_name(f), None)
        elif f is not None:
            ratio = r["device_us"] / f["device_us"] if r.get("device_us") and f.get("device_us") else None
            c.add_value(r, ratio)
            t = copy_us(r)
            bound(c, r, t / f["device_us"] if t and f.get("device_us") else None)
    checks.append(c)
    c = _Check("retrace fraction at T=4096 ≥ 0.9 × fraction at T=128 (≈)", ".2f", 0.9)
    for layout in shapes.LAYOUTS:
        for dtype in shapes.DTYPES:
            for mode in shapes.MODES:
                sel = {"op": "retrace", "layout": layout, "dtype": dtype, "mode": mode}
                long, short = _rows(records, subject, T=4096, **sel), _rows(records, subject, T=128, **sel)
                if not long or not short:
                    continue
                name = f"retrace {layout} {dtype} {mode}"
                if any(r["status"] != "ok" for r in long + short):
                    c.add(name, None)
                    continue
                lf = [f for f in map(device_fraction, long) if f is not None]
                sf = [f for f in map(device_fraction, short) if f is not None]
                if lf and sf:
                    c.add(name, (sum(lf) / len(lf)) / (sum(sf) / len(sf)))
                else:
                    c.unmeasured += 1
    checks.append(c)
    c = _Check("in-jit ≤ 1.5× device time at N·T ≥ 2^22", ".2f", 1.5, at_least=False)
    for r in _rows(records, subject, **big):
        ratio = r["injit_us"] / r["device_us"] if r.get("injit_us") and r.get("device_us") else None
        c.add_value(r, ratio)
    checks.append(c)
    return checks


def targets_markdown(
    head: dict,
    records: Sequence[dict],
    subject: str = "triton",
    source: str = "",
    floor: Sequence[dict] | None = None,
    floor_source: str = "",
) -> str:
    """Every target with its status, and every missed case with its value and the factor by which it
    must get better to pass (the farthest first): what `--targets` prints, in full. With a copy
    floor (`floor`, benchmarks.copy_floor's curve), each missed case's best possible value too, and
    how many misses are out of reach by it."""
    lines = [
        f"# Performance targets: {subject}",
        "",
        f"Device: {head.get('device')}; jax {head.get('jax')}, triton {head.get('triton')}, "
        f"jax-triton {head.get('jax_triton')}" + (f"; from `{source}`" if source else "") + ". Generated by "
        "`python -m benchmarks.report RESULTS --targets-md OUT`. Each target's text is in issue 4 and "
        '`benchmarks/README.md`; "needs" is the factor by which a missed case\'s value must improve to pass '
        "(its time, fraction or ratio), FAILED a case that failed the correctness gate.",
        "",
        "| target | status | cases passing |",
        "|---|---|---|",
    ]
    if floor:
        where = f"`{floor_source}`, " if floor_source else ""
        lines[2] += (
            f' "best possible" is drawn from the device time of a plain copy at each size ({where}'
            "`benchmarks.copy_floor`); a case is out of reach where even that misses the target."
        )
    checks = _checks(records, subject, floor)
    for c in checks:
        status, _ = c.result()
        passing = f"{len(c.items) - len(c.missed())}/{len(c.items)}" if c.items else "–"
        lines.append(f"| {c.title} | {status} | {passing} |")
    for c in checks:
        missed = c.missed()
        if not missed:
            continue
        lines += ["", f"## {c.title}: {len(missed)} missed", ""]
        by = {}
        for name, _, _ in missed:  # names: op NxT layout dtype mode (retrace's: retrace layout dtype mode)
            key = " ".join(w for w in name.split()[1:] if not w[0].isdigit())
            by[key] = by.get(key, 0) + 1
        lines.append("Missed by layout, dtype and mode: " + ", ".join(f"{k} {v}" for k, v in sorted(by.items())) + ".")
        bounded = any(name in c.bounds for name, _, _ in missed)
        if bounded:
            out = sum(c.out_of_reach(name) for name, _, _ in missed)
            lines.append(f"Best possible: {c.bound}. Out of reach by it: {out} of the {len(missed)} misses.")
        lines += ["", "| case | value | needs |" + " best possible |" * bounded, "|---|---|---|" + "---|" * bounded]
        for name, value, _ in missed:
            shown = "FAILED" if value is None else c.show(value)
            needs = c.factor(value)
            row = f"| {name} | {shown} | {'' if needs is None else f'{needs:.2f}×'} |"
            if bounded:
                best = c.bounds.get(name)
                row += "" if best is None else f" {c.show(best)}{', out of reach' * c.out_of_reach(name)}"
                row += " |"
            lines.append(row)
    return "\n".join(lines) + "\n"


def floor_summary(records: Sequence[dict], floor: Sequence[dict], subject: str = "triton") -> list[str]:
    """For the fraction targets' float32 forward shapes: the fraction of the limit that a plain copy
    of the same bytes reaches (its device time, `floor`), and the subject's, by shape and layout."""
    lines = []
    groups: dict = {}
    for r in _rows(records, subject, dtype="float32", mode="fwd"):
        if r["status"] != "ok" or not r.get("device_us") or not r.get("copy_bw_gbps"):
            continue
        if (r["N"], r["T"]) not in SHORT_LONG and r["N"] * r["T"] < BIG:
            continue
        c = copy_floor.floor_us(floor, r["bytes_min"])
        if c is None:
            continue
        limit = limit_us(r)
        groups.setdefault((r["N"], r["T"], r["layout"]), []).append((limit / c, limit / r["device_us"]))
    for (n, t, layout), v in sorted(groups.items(), key=lambda kv: (kv[0][0] * kv[0][1], kv[0])):
        cf, sf = [x for x, _ in v], [y for _, y in v]
        lines.append(
            f"{n}x{t} {layout}: a copy of the same bytes {100 * min(cf):.0f}-{100 * max(cf):.0f}% of the limit; "
            f"{subject} {100 * min(sf):.0f}-{100 * max(sf):.0f}% ({len(v)} ops)"
        )
    return lines


# --------------------------------------------------------------------------- command line


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.report", description=__doc__.split("\n\n")[0])
    p.add_argument("results", nargs="+", help="results JSON file(s); several are merged")
    p.add_argument("--subject", help="the implementation tabulated (default: triton if measured, else associative)")
    p.add_argument("--out-dir", help="where the .md and .png go (default: next to the first results file)")
    p.add_argument("--stem", help="output file stem (default: the first results file's name)")
    p.add_argument("--merged-out", help="also write the merged results JSON here")
    p.add_argument("--targets", action="store_true", help="print which performance targets are met / missed")
    p.add_argument("--strict", action="store_true", help="with --targets: exit 1 if any target is missed")
    p.add_argument("--targets-md", help="write every target and every missed case (with the factor it needs) here")
    p.add_argument("--no-plot", action="store_true")
    p.add_argument("--copy-floor", help="benchmarks.copy_floor's JSON: a vs-copy column, and the floor with --targets")
    p.add_argument("--readme-table", help="write README.md's table here: GAE's float32 forward rows")
    a = p.parse_args(argv)
    floor = copy_floor.load(a.copy_floor) if a.copy_floor else None

    head, records = load(a.results)
    if a.merged_out:
        run.write_results(a.merged_out, head, records)
        print(f"wrote {len(records)} merged records to {a.merged_out}")
    out_dir = a.out_dir or os.path.dirname(os.path.abspath(a.results[0]))
    stem = a.stem or os.path.splitext(os.path.basename(a.merged_out or a.results[0]))[0]
    os.makedirs(out_dir, exist_ok=True)
    md = os.path.join(out_dir, f"{stem}.md")
    with open(md, "w") as f:
        f.write(f"# Benchmark results: {stem}\n\n")
        f.write(markdown_table(head, records, a.subject, floor))
    print(f"wrote {md}")
    if not a.no_plot:
        print(f"wrote {plot(head, records, os.path.join(out_dir, f'{stem}_bandwidth.png'), a.subject)}")
    if a.readme_table:
        with open(a.readme_table, "w") as f:
            f.write(markdown_table(head, records, a.subject, floor, README_TABLE))
        print(f"wrote {a.readme_table}")
    code = 0
    if a.targets_md:
        with open(a.targets_md, "w") as f:
            f.write(targets_markdown(head, records, a.subject or "triton", " + ".join(a.results), floor, a.copy_floor))
        print(f"wrote {a.targets_md}")
    if a.targets:
        subject = a.subject or "triton"
        print(f"\nTargets for {subject} on {head.get('device')}:")
        for status, detail in targets(head, records, subject):
            print(f"  [{status}] {detail}")
            code |= a.strict and status == "MISSED"
        if floor:
            print("\nA plain copy of each case's bytes_min (device time, benchmarks.copy_floor), fp32 fwd:")
            for line in floor_summary(records, floor, subject):
                print(f"  {line}")
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
