"""Reads the logs of a sanitizer sweep (sanitize.sh) into OUTDIR/sanitize_summary.json.

    python tests/gpu_runs/sanitize_summary.py OUTDIR [--tools "memcheck racecheck synccheck"]
        [--sanitizer PATH] [--sanitizer-version TEXT] [--kernel-filter TEXT] [--jobs N]

Each OUTDIR/<run>.log holds the shards of one run between `##### shard I/N of RUN: COMMAND`
and `##### end shard I/N of RUN: rc=RC wall_s=S` lines: "plain" (the driver without a
sanitizer), "canary" (a planted out-of-bounds read under memcheck: shard 0 with the kernel
filter, shard 1 without) and one log per tool. From compute-sanitizer it reads
`ERROR SUMMARY: N errors` and racecheck's `RACECHECK SUMMARY`; from the driver its
`SWEEP-ENV`, `SWEEP-RESULT` and `SWEEP-DONE` lines, and the variants executed over all shards.

A shard counts as complete only with its end line, an exit status that is not a timeout's, the
driver's result and last line and, under a sanitizer, the error summary. Anything less makes its
run "incomplete", never "clean"; reported errors make it "errors" even when cut off.
Exit status 0 only when the verdict is "clean".
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from pathlib import Path

START = re.compile(r"^##### shard (\d+)/(\d+) of (\S+): ?(.*)$")
END = re.compile(r"^##### end shard (\d+)/(\d+) of (\S+): rc=(-?\d+) wall_s=(\d+)")
ERROR_SUMMARY = re.compile(r"ERROR SUMMARY:\s*(\d+)\s+errors?")
RACECHECK_SUMMARY = re.compile(
    r"RACECHECK SUMMARY:\s*(\d+)\s+hazards?\s+displayed\s*\((\d+)\s+errors?,\s*(\d+)\s+warnings?\)"
)
# The first line of each report the tools print (a lower bound on the errors of a cut-off log);
# API_REPORT: a failed CUDA API call (reported unless the tools run with --report-api-errors no).
REPORT = re.compile(
    r"^=+\s+(Invalid __|Misaligned |Out-of-range |Program hit |Uninitialized |"
    r"Error: Race reported|Barrier error|Divergent thread|Malloc/Free error)"
)
API_REPORT = re.compile(r"^=+\s+Program hit ")
RACE_WARNING = re.compile(r"^=+\s+Warning: Race reported")
TIMEOUT_CODES = (124, 137, -9, -15)  # timeout(1), SIGKILL, and the same as negative statuses
CANARY_REPORT = "Invalid __global__ read"
KERNEL_FILTER = re.compile(r"--kernel-(name|regex)\b")


def parse_shards(text: str) -> list[dict]:
    """The shards of one log, each with its header, its lines, and its end line if present.

    A log without shard lines (the output of one process) is one shard, judged by its content.
    """
    if not any(START.match(line) for line in text.splitlines()):
        lines = text.splitlines()
        return [{"index": 0, "total": 1, "command": "", "lines": lines, "rc": None, "ended": True}] if lines else []
    shards: list[dict] = []
    current = None
    for line in text.splitlines():
        if m := START.match(line):
            current = {"index": int(m[1]), "total": int(m[2]), "command": m[4], "lines": [], "rc": None, "ended": False}
            shards.append(current)
        elif (m := END.match(line)) and current is not None and int(m[1]) == current["index"]:
            current.update(ended=True, rc=int(m[4]), wall_s=int(m[5]))
            current = None
        elif current is not None:
            current["lines"].append(line)
    return shards


def _json_after(prefix: str, lines: list[str]):
    for line in lines:
        if line.startswith(prefix):
            try:
                return json.loads(line[len(prefix) :])
            except ValueError:
                return None  # a line cut off mid-way
    return None


def analyse_shard(shard: dict, sanitized: bool) -> dict:
    """One shard's error counts, driver result, and what (if anything) keeps it from being complete."""
    lines = shard["lines"]
    summaries = [int(m[1]) for line in lines if (m := ERROR_SUMMARY.search(line))]
    races = [tuple(map(int, m.groups())) for line in lines if (m := RACECHECK_SUMMARY.search(line))]
    reports = sum(1 for line in lines if REPORT.match(line))
    result = _json_after("SWEEP-RESULT ", lines)
    done = any(line.startswith("SWEEP-DONE") for line in lines)
    rc = shard["rc"]
    problems = []
    if not shard["ended"]:
        problems.append("cut off: no end line")
    if rc in TIMEOUT_CODES:
        problems.append(f"timed out or killed (exit status {rc})")
    if sanitized and not summaries:
        problems.append("no ERROR SUMMARY")
    if result is None:
        problems.append("no SWEEP-RESULT")
    if not done:
        problems.append("no SWEEP-DONE")
    if result and result.get("aborted"):
        problems.append(f"aborted at {result['aborted']}")
    return {
        "shard": f"{shard['index']}/{shard['total']}",
        "rc": rc,
        "wall_s": shard.get("wall_s"),
        "complete": not problems,
        "problems": problems,
        "errors": max(sum(summaries), sum(r[1] for r in races)) if summaries else None,
        "reports": reports,
        "api_reports": sum(1 for line in lines if API_REPORT.match(line)),
        "race": [sum(r[i] for r in races) for i in range(3)] if races else None,
        "race_warnings": sum(1 for line in lines if RACE_WARNING.match(line)),
        "app_exit_errors": sum("Target application returned an error" in line for line in lines),
        "result": result,
        "env": _json_after("SWEEP-ENV ", lines),
    }


def analyse_run(name: str, text: str | None, sanitized: bool, jobs: int | None) -> dict:
    """One run's verdict over its shards: errors, incomplete, mismatch or clean."""
    if text is None:
        return {"verdict": "incomplete", "reasons": [f"{name}.log is missing"], "shards": []}
    shards = [analyse_shard(s, sanitized) for s in parse_shards(text)]
    reasons = []
    totals = {int(s["shard"].split("/")[1]) for s in shards}
    expected = jobs if jobs else max(totals, default=1)
    seen = {int(s["shard"].split("/")[0]) for s in shards}
    if not shards or seen != set(range(expected)) or totals - {expected}:
        reasons.append(f"shards present {sorted(seen)}, expected 0..{expected - 1}")
    for s in shards:
        reasons += [f"shard {s['shard']}: {p}" for p in s["problems"]]
    # Errors: the summaries' counts; for a shard without a summary, the reports it printed.
    errors = sum(s["errors"] if s["errors"] is not None else s["reports"] for s in shards) if sanitized else None
    results = [s["result"] for s in shards if s["result"]]
    recorded = set().union(*(r.get("recorded", ()) for r in results)) if results else set()
    executed = set().union(*(r.get("executed", ()) for r in results)) if results else set()
    missing = sorted(recorded - executed)
    if not recorded:
        reasons.append("no recorded variants reported")
    elif missing:
        reasons.append(f"{len(missing)} recorded variants not executed")
    if any(r.get("quick") for r in results):
        reasons.append("a --quick run (a subset of the calls)")
    if any(r.get("trace_only") for r in results):
        reasons.append("a --trace-only run (nothing executed)")
    calls = {k: sum(r.get(k, 0) for r in results) for k in ("calls", "ok", "mismatched", "failed")}
    if calls["failed"]:
        reasons.append(f"{calls['failed']} calls failed")
    incomplete = bool(reasons)
    if calls["mismatched"]:
        reasons.append(f"{calls['mismatched']} calls differ from the reference")
    if errors:
        verdict = "errors"
        reasons.insert(0, f"{errors} errors reported")
    elif incomplete:
        verdict = "incomplete"
    elif calls["mismatched"]:
        verdict = "mismatch"
    else:
        verdict = "clean"
    out = {
        "verdict": verdict,
        "reasons": reasons,
        "errors": errors,
        "api_errors": sum(s["api_reports"] for s in shards) if sanitized else None,
        "exit_codes": [s["rc"] for s in shards],
        "wall_s": max((s["wall_s"] or 0 for s in shards), default=None),
        "variants_recorded": len(recorded),
        "variants_executed": len(executed & recorded),
        "variants_missing": len(missing),
        "missing": missing[:100],
        "calls": calls,
        "shards": [{k: v for k, v in s.items() if k not in ("result", "env")} for s in shards],
    }
    if name == "racecheck":
        out["hazards"] = dict(
            zip(("displayed", "errors", "warnings"), [sum(s["race"][i] for s in shards if s["race"]) for i in range(3)])
        )
    return out


def _envs(text: str | None):
    for shard in parse_shards(text or ""):
        env = _json_after("SWEEP-ENV ", shard["lines"])
        if env:
            yield env


def analyse_canary(text: str | None) -> dict:
    """Whether memcheck reported the planted read, with the kernel filter and without."""
    out = {}
    for shard in parse_shards(text or ""):
        key = "filtered" if KERNEL_FILTER.search(shard["command"]) else "unfiltered"
        body = "\n".join(shard["lines"])
        out[key] = {
            "detected": CANARY_REPORT in body,
            "names_kernel": "canary_kernel" in body,
            "rc": shard["rc"],
            "command": shard["command"],
        }
    return out


def summarize(
    outdir: str | Path,
    *,
    tools: list[str],
    sanitizer: str | None = None,
    sanitizer_version: str | None = None,
    kernel_filter: str | None = None,
    options: str | None = None,
    jobs: int | None = None,
) -> dict:
    outdir = Path(outdir)

    def read(name):
        path = outdir / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else None

    runs = {"plain": analyse_run("plain", read("plain"), False, None)}
    for tool in tools:
        runs[tool] = analyse_run(tool, read(tool), True, jobs)
    canary = analyse_canary(read("canary"))
    env = next((e for name in runs for e in _envs(read(name))), {})

    notes = []
    if not sanitizer:
        notes.append("compute-sanitizer was not found: nothing was checked")
    used = "filtered" if kernel_filter else "unfiltered"
    if sanitizer and not canary.get(used, {}).get("detected"):
        notes.append(f"the canary's out-of-bounds read was not reported ({used}): the checks are unproven")
    checked = [runs[t]["verdict"] for t in tools]
    if "errors" in checked:
        verdict = "errors"
    elif notes or not tools or "incomplete" in checked:
        verdict = "incomplete"
    elif any(r["verdict"] == "mismatch" for r in runs.values()):
        verdict = "mismatch"
    else:
        verdict = "clean"  # the plain run, without a sanitizer, may be cut off: noted below
    for name, r in runs.items():
        if r["verdict"] != "clean":
            notes.append(f"{name}: {r['verdict']}" + (f" ({'; '.join(r['reasons'][:3])})" if r["reasons"] else ""))
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "device": env.get("device"),
        "python": env.get("python"),
        "versions": env.get("versions", {}),
        "compute_sanitizer": {"path": sanitizer, "version": sanitizer_version},
        "kernel_filter": kernel_filter or None,
        "options": options or None,
        "shards_per_tool": jobs,
        "canary": canary,
        "verdict": verdict,
        "notes": notes,
        "runs": runs,
    }


def table(summary: dict) -> str:
    rows = [("run", "verdict", "errors", "variants exec/rec", "calls ok/mism/fail", "exit codes", "wall s")]
    for name, r in summary["runs"].items():
        c = r.get("calls", {})
        rows.append(
            (
                name,
                r["verdict"],
                "-" if r.get("errors") is None else str(r["errors"]),
                f"{r.get('variants_executed', 0)}/{r.get('variants_recorded', 0)}",
                f"{c.get('ok', 0)}/{c.get('mismatched', 0)}/{c.get('failed', 0)}",
                ",".join(map(str, r.get("exit_codes", []))) or "-",
                str(r.get("wall_s") or "-"),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    canary = ", ".join(f"{k}: {'reported' if v['detected'] else 'NOT reported'}" for k, v in summary["canary"].items())
    lines.append(f"canary (planted out-of-bounds read under memcheck): {canary or 'not run'}")
    lines.append(f"kernel filter: {summary['kernel_filter'] or 'none (every kernel checked)'}")
    lines.append(f"other options: {summary['options'] or 'none'}")
    lines += [f"  - {n}" for n in summary["notes"]]
    lines.append(f"VERDICT: {summary['verdict'].upper()}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("outdir")
    p.add_argument("--tools", default="memcheck racecheck synccheck")
    p.add_argument("--sanitizer")
    p.add_argument("--sanitizer-version")
    p.add_argument("--kernel-filter")
    p.add_argument("--options", help="the other options the tools ran with")
    p.add_argument("--jobs", type=int)
    opts = p.parse_args(argv)
    summary = summarize(
        opts.outdir,
        tools=opts.tools.split(),
        sanitizer=opts.sanitizer or None,
        sanitizer_version=opts.sanitizer_version,
        kernel_filter=opts.kernel_filter,
        options=opts.options,
        jobs=opts.jobs,
    )
    with open(Path(opts.outdir) / "sanitize_summary.json", "w") as f:
        json.dump(summary, f, indent=1)
    print(table(summary))
    return 0 if summary["verdict"] == "clean" else 1


if __name__ == "__main__":
    sys.exit(main())
