"""Reads the logs of a sanitizer sweep (sanitize.sh) into OUTDIR/sanitize_summary.json.

    python tests/gpu_runs/sanitize_summary.py OUTDIR [--tools "memcheck racecheck synccheck"]
        [--sanitizer PATH] [--sanitizer-version TEXT] [--kernel-filter TEXT] [--jobs N]
    python tests/gpu_runs/sanitize_summary.py --next-attempt SHARD_LOG  # for sanitize.sh

Each OUTDIR/<run>.log holds the processes of one run between `##### shard I/N of RUN: COMMAND`
and `##### end shard I/N of RUN: rc=RC wall_s=S` lines (`of RUN attempt A` for the second and
later process of shard I): "plain" (the driver without a sanitizer), "canary" (a planted
out-of-bounds read under memcheck: shard 0 with the kernel filter, shard 1 without) and one log
per tool. From compute-sanitizer it reads `ERROR SUMMARY: N errors` and racecheck's
`RACECHECK SUMMARY` (racecheck prints no other); from the driver its `SWEEP-` lines: the calls
each process runs, the call in flight, the variants each call launched, the result.

A process counts as complete only with its end line, an exit status that is neither a timeout's
nor a crash's, the driver's result and last line and, under a sanitizer, the tool's summary. A
shard is checked when every one of its calls ran in a complete process; a run is "clean" only
when every shard is checked, every recorded variant was executed in a complete process and no
errors were reported. A crashed process (exit status 139 or 134) is retried once; if the retry
crashes too, the call in flight is set apart and the rest of the shard runs again, until the
crash is pinned to one call, run alone (`--next-attempt` plans these processes). Such a call, and
the variants that only it launches, are reported unchecked, never clean. Reported errors make a
run "errors" even when it is cut off. Exit status 0 only when the verdict is "clean".
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from pathlib import Path

START = re.compile(r"^##### shard (\d+)/(\d+) of (\S+?)(?: attempt (\d+))?: ?(.*)$")
END = re.compile(r"^##### end shard (\d+)/(\d+) of (\S+?)(?: attempt (\d+))?: rc=(-?\d+) wall_s=(\d+)")
# What sanitize.sh writes when the time left is too short to start a planned process.
NO_TIME = re.compile(r"^##### no time for attempt (\d+) of shard (\d+)/(\d+) of (\S+) \((-?\d+) s left\)", re.M)
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
CRASH_CODES = (134, 135, 139, -6, -7, -11)  # SIGABRT, SIGBUS, SIGSEGV (128 + signal, or negative)
ONLY = re.compile(r"--only[ =](\S+)")
SHARD = re.compile(r"--shard[ =](\S+)")
CANARY_REPORT = "Invalid __global__ read"
KERNEL_FILTER = re.compile(r"--kernel-(name|regex)\b")


def parse_shards(text: str) -> list[dict]:
    """The processes of one log, each with its header, its lines, and its end line if present.

    A log without shard lines (the output of one process) is one process, judged by its content.
    """
    if not any(START.match(line) for line in text.splitlines()):
        lines = [line for line in text.splitlines() if not NO_TIME.match(line)]
        one = {"index": 0, "total": 1, "attempt": 1, "command": "", "lines": lines, "rc": None, "ended": True}
        return [one] if lines else []
    shards: list[dict] = []
    current = None
    for line in text.splitlines():
        if m := START.match(line):
            current = {
                "index": int(m[1]),
                "total": int(m[2]),
                "attempt": int(m[4] or 1),
                "command": m[5],
                "lines": [],
                "rc": None,
                "ended": False,
            }
            shards.append(current)
        elif (
            (m := END.match(line))
            and current is not None
            and (int(m[1]), int(m[4] or 1)) == (current["index"], current["attempt"])
        ):
            current.update(ended=True, rc=int(m[5]), wall_s=int(m[6]))
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


def _calls(lines: list[str]) -> tuple[dict[int, str] | None, dict[int, dict], tuple[int, str] | None]:
    """The calls a driver process was given, those it finished (by index), and the one in flight."""
    given = _json_after("SWEEP-CALLS ", lines)
    finished: dict[int, dict] = {}
    in_flight = None
    for line in lines:
        if line.startswith("SWEEP-START "):
            index, _, cid = line[len("SWEEP-START ") :].partition(" ")
            if index.isdigit():
                in_flight = (int(index), cid)
        elif line.startswith("SWEEP-CALL "):
            try:
                record = json.loads(line[len("SWEEP-CALL ") :])
            except ValueError:
                continue
            finished[record["index"]] = record
            if in_flight and in_flight[0] == record["index"]:
                in_flight = None
    return ({int(i): cid for i, cid in given} if given else None), finished, in_flight


def analyse_shard(shard: dict, sanitized: bool) -> dict:
    """One process's error counts, driver result, and what (if anything) keeps it from being complete."""
    lines = shard["lines"]
    summaries = [int(m[1]) for line in lines if (m := ERROR_SUMMARY.search(line))]
    races = [tuple(map(int, m.groups())) for line in lines if (m := RACECHECK_SUMMARY.search(line))]
    reports = sum(1 for line in lines if REPORT.match(line))
    result = _json_after("SWEEP-RESULT ", lines)
    done = any(line.startswith("SWEEP-DONE") for line in lines)
    given, finished, in_flight = _calls(lines)
    only = _own_only(shard["command"])
    rc = shard["rc"]
    problems = []
    if not shard["ended"]:
        problems.append("cut off: no end line")
    if rc in TIMEOUT_CODES:
        problems.append(f"timed out or killed (exit status {rc})")
    if rc in CRASH_CODES:
        at = f" with call #{in_flight[0]} {in_flight[1]} in flight" if in_flight else ""
        problems.append(f"crashed (exit status {rc}){at}")
    if sanitized and not summaries and not races:
        problems.append("no ERROR SUMMARY")
    if result is None:
        problems.append("no SWEEP-RESULT")
    if not done:
        problems.append("no SWEEP-DONE")
    if result and result.get("aborted"):
        problems.append(f"aborted at {result['aborted']}")
    if summaries:
        errors = max(sum(summaries), sum(r[1] for r in races))
    elif races:
        errors = sum(r[1] for r in races)
    else:
        errors = None
    return {
        "shard": f"{shard['index']}/{shard['total']}",
        "attempt": shard.get("attempt", 1),
        "only": only[1] if only else None,
        "rc": rc,
        "wall_s": shard.get("wall_s"),
        "complete": not problems,
        "crashed": rc in CRASH_CODES,
        "problems": problems,
        "errors": errors,
        "reports": reports,
        "api_reports": sum(1 for line in lines if API_REPORT.match(line)),
        "race": [sum(r[i] for r in races) for i in range(3)] if races else None,
        "race_warnings": sum(1 for line in lines if RACE_WARNING.match(line)),
        "app_exit_errors": sum("Target application returned an error" in line for line in lines),
        "calls_given": given,
        "calls_finished": finished,
        "in_flight": in_flight,
        "result": result,
        "env": _json_after("SWEEP-ENV ", lines),
    }


def _own_only(command: str) -> re.Match | None:
    """The `--only` that picks a process's calls out of its shard: the last one (the driver's
    argparse keeps the last), unless a `--shard` follows it. sanitize.sh appends `--shard I/N` to
    a process that runs its whole shard and `--only` to one that runs part of it, after
    DRIVER_ARGS, whose own `--only` (the sweep's selection, sliced by `--shard`) is not a part."""
    onlys = list(ONLY.finditer(command))
    shards = list(SHARD.finditer(command))
    if not onlys or (shards and shards[-1].start() > onlys[-1].start()):
        return None
    return onlys[-1]


def parse_only(spec: str) -> list[int]:
    """The indices of a driver's `--only` (indices and ranges; call ids are not resolved here)."""
    out = []
    for item in filter(None, spec.split(",")):
        a, _, b = item.partition("-")
        if a.isdigit() and (not b or b.isdigit()):
            out.extend(range(int(a), int(b or a) + 1))
    return out


def format_only(indices) -> str:
    """`--only`'s text for `indices`: sorted, runs written as ranges (`3,7-9`)."""
    runs: list[list[int]] = []
    for i in sorted(set(indices)):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def _attempt_calls(a: dict, shard_calls: list[int] | None) -> list[int] | None:
    if a["calls_given"] is not None:
        return sorted(a["calls_given"])
    if a["only"] is not None:
        return parse_only(a["only"])
    return shard_calls


def plan(attempts: list[dict]) -> list[list[int] | None]:
    """The processes still to run for one shard, given its processes so far (`analyse_shard`'s).

    Each entry is the calls of one process (None: the whole shard, `--shard I/N`). Replays the
    history: the first process runs the whole shard; a crash (exit status 139 or 134) of the
    first is retried once, whole; a later crash of a process of several calls sets the call in
    flight apart, to run alone at the end, and runs the others again at once (without a call in
    flight, a crash at start-up or exit, it splits the calls in two halves). A crash of a process
    of one call pins the crash to that call. Any other outcome, complete or not, ends the shard.
    """
    queue: list[list[int] | None] = [None]
    shard_calls = None
    for n, a in enumerate(attempts):
        item = queue.pop(0) if queue else None
        if a["only"] is None and a["calls_given"] is not None and shard_calls is None:
            shard_calls = sorted(a["calls_given"])
        calls = _attempt_calls(a, item if item is not None else shard_calls)
        if not a["crashed"]:
            continue
        if n == 0:
            queue.insert(0, None)  # the retry
        elif calls is None or len(calls) <= 1:
            continue  # nothing known to split, or a crash pinned to one call
        elif a["in_flight"] and a["in_flight"][0] in calls:
            c = a["in_flight"][0]
            queue.insert(0, [x for x in calls if x != c])
            queue.append([c])
        else:
            h = len(calls) // 2
            queue[0:0] = [calls[:h], calls[h:]]
    return queue


def next_attempt(text: str) -> str | None:
    """The driver options of the next process for the shard whose log is `text`, or None: done."""
    attempts = [analyse_shard(s, True) for s in parse_shards(text)]
    if not attempts:
        return None
    queue = plan(attempts)
    if not queue:
        return None
    return f"--shard {attempts[0]['shard']}" if queue[0] is None else f"--only {format_only(queue[0])}"


def call_records(text: str | None) -> dict[int, dict]:
    """Every call a log's processes finished, by index: its id, status and variants."""
    out: dict[int, dict] = {}
    for shard in parse_shards(text or ""):
        out.update(_calls(shard["lines"])[1])
    return out


def _slot(attempts: list[dict], call_variants: dict[int, list[str]]) -> dict:
    """One shard over its processes: which calls ran in a complete process, which crashed the tool."""
    shard = attempts[0]["shard"]
    names: dict[int, str] = {}
    shard_calls = None
    for a in attempts:
        names.update(a["calls_given"] or {})
        names.update({i: r["id"] for i, r in a["calls_finished"].items()})
        if a["only"] is None and a["calls_given"] is not None and shard_calls is None:
            shard_calls = set(a["calls_given"])
    covered = set()
    for a in attempts:
        if a["complete"]:
            covered.update(a["result"].get("indices") or a["calls_given"] or ())
    whole_complete = any(a["complete"] and a["only"] is None for a in attempts)
    if shard_calls is None:
        checked, unchecked = whole_complete, []
    else:
        unchecked = sorted(shard_calls - covered)
        checked = not unchecked
    # A call crashes the tool when a process that ran it alone crashed; count every crashed
    # process in which it was in flight (or alone).
    crashes: dict[int, int] = {}
    for a in attempts:
        if not a["crashed"]:
            continue
        calls = _attempt_calls(a, sorted(shard_calls) if shard_calls else None)
        if a["in_flight"]:
            crashes[a["in_flight"][0]] = crashes.get(a["in_flight"][0], 0) + 1
        elif calls and len(calls) == 1:
            crashes[calls[0]] = crashes.get(calls[0], 0) + 1
    pinned: dict[int, dict] = {}
    for a in attempts:
        calls = _attempt_calls(a, sorted(shard_calls) if shard_calls else None)
        if a["crashed"] and calls and len(calls) == 1 and calls[0] not in covered:
            i = calls[0]
            pinned[i] = {"shard": shard, "index": i, "id": names.get(i), "crashes": crashes.get(i, 1), "rc": a["rc"]}
    return {
        "shard": shard,
        "checked": checked,
        "calls": sorted(shard_calls) if shard_calls is not None else None,
        "unchecked": [
            {"shard": shard, "index": i, "id": names.get(i), "variants": call_variants.get(i)} for i in unchecked
        ],
        "pinned": list(pinned.values()),
        "attempts": len(attempts),
        "wall_s": sum(a["wall_s"] or 0 for a in attempts),
    }


def analyse_run(
    name: str,
    text: str | None,
    sanitized: bool,
    jobs: int | None,
    call_variants: dict[int, list[str]] | None = None,
    recorded: set[str] | None = None,
) -> dict:
    """One run's verdict over its shards: errors, incomplete, mismatch or clean.

    `call_variants` (the variants each call launches, from the plain run) names the variants
    that only unchecked calls launch; `recorded` adds to the variants the run must execute.
    """
    if text is None:
        return {"verdict": "incomplete", "reasons": [f"{name}.log is missing"], "shards": []}
    attempts = [analyse_shard(s, sanitized) for s in parse_shards(text)]
    records = {i: r["variants"] for i, r in call_records(text).items()}
    call_variants = {**records, **(call_variants or {})}
    reasons = []
    totals = {int(a["shard"].split("/")[1]) for a in attempts}
    expected = jobs if jobs else max(totals, default=1)
    by_index: dict[int, list[dict]] = {}
    for a in attempts:
        by_index.setdefault(int(a["shard"].split("/")[0]), []).append(a)
    if not attempts or set(by_index) != set(range(expected)) or totals - {expected}:
        reasons.append(f"shards present {sorted(by_index)}, expected 0..{expected - 1}")
    for m in NO_TIME.finditer(text):
        if m[4] == name:
            reasons.append(f"shard {m[2]}/{m[3]}: no time left for attempt {m[1]} ({m[5]} s)")
    slots = [_slot(by_index[i], call_variants) for i in sorted(by_index)]
    pinned = [p for s in slots for p in s["pinned"]]
    for p in pinned:
        how = "reproducibly" if p["crashes"] > 1 else "when run alone"
        reasons.insert(
            0,
            f"call #{p['index']} {p['id']} (shard {p['shard']}) crashes the sanitizer {how} "
            f"({p['crashes']} crashed processes, exit status {p['rc']})",
        )
    for slot, i in zip(slots, sorted(by_index), strict=True):
        if slot["checked"]:
            continue
        if slot["calls"] is None:  # what each process lacks
            for a in by_index[i]:
                tag = f" attempt {a['attempt']}" if a["attempt"] > 1 else ""
                reasons += [f"shard {a['shard']}{tag}: {p}" for p in a["problems"]]
            continue
        names = ", ".join(f"#{u['index']} {u['id']}" for u in slot["unchecked"][:3])
        more = ", ..." if len(slot["unchecked"]) > 3 else ""
        last = by_index[i][-1]
        ended = f"; its last process: {', '.join(last['problems'])}" if last["problems"] else ""
        reasons.append(
            f"shard {slot['shard']}: {len(slot['unchecked'])} of {len(slot['calls'])} calls not run in a "
            f"complete process ({names}{more}){ended}"
        )
    # Errors: the summaries' counts; for a process without a summary, the reports it printed.
    errors = sum(a["errors"] if a["errors"] is not None else a["reports"] for a in attempts) if sanitized else None
    complete = [a for a in attempts if a["complete"]]
    results = [a["result"] for a in complete]
    every = [a["result"] for a in attempts if a["result"]]
    recorded = set(recorded or ()).union(*(r.get("recorded", ()) for r in every))
    executed = set().union(*(r.get("executed", ()) for r in results))
    missing = sorted(recorded - executed)
    if not recorded:
        reasons.append("no recorded variants reported")
    elif missing:
        reasons.append(f"{len(missing)} recorded variants not executed in a complete process")
    if any(r.get("quick") for r in every):
        reasons.append("a --quick run (a subset of the calls)")
    if any(r.get("trace_only") for r in every):
        reasons.append("a --trace-only run (nothing executed)")
    unchecked = [u for s in slots for u in s["unchecked"]]
    for u in unchecked:  # None: the call's variants are unknown (it finished in no process)
        variants = u.pop("variants")
        u["variants_only_here"] = None if variants is None else sorted(set(variants) & set(missing))
    calls = {k: sum(r.get(k, 0) for r in results) for k in ("ok", "failed")}
    # A mismatch counts wherever it was seen, in a process that completed or not.
    differ = {i: r for a in attempts for i, r in a["calls_finished"].items() if r["status"] == "mismatch"}
    calls["mismatched"] = max(len(differ), sum(r.get("mismatched", 0) for r in results))
    known = [s["calls"] for s in slots if s["calls"] is not None]
    calls["calls"] = len(set().union(*known)) if known else sum(r.get("calls", 0) for r in results)
    calls["unchecked"] = len(unchecked)
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
        "api_errors": sum(a["api_reports"] for a in attempts) if sanitized else None,
        "exit_codes": [a["rc"] for a in attempts],
        "wall_s": max((s["wall_s"] for s in slots), default=None),
        "variants_recorded": len(recorded),
        "variants_executed": len(executed & recorded),
        "variants_missing": len(missing),
        "missing": missing[:100],
        "calls": calls,
        "retried": [
            {
                "shard": s["shard"],
                "processes": s["attempts"],
                "checked": s["checked"],
                "exit_codes": [a["rc"] for a in by_index[i]],
            }
            for s, i in zip(slots, sorted(by_index), strict=True)
            if s["attempts"] > 1
        ],
        "crashing_calls": pinned,
        "unchecked_calls": unchecked,
        "mismatched_calls": [  # what differed, where the driver said (before 2026-12-05: only a count)
            {"index": i, "id": r["id"], "problems": r.get("problems")} for i, r in sorted(differ.items())
        ],
        "shards": [
            {k: v for k, v in a.items() if k not in ("result", "env", "calls_given", "calls_finished")}
            | {"in_flight": list(a["in_flight"]) if a["in_flight"] else None}
            for a in attempts
        ],
    }
    if name == "racecheck":
        out["hazards"] = dict(
            zip(
                ("displayed", "errors", "warnings"),
                [sum(a["race"][i] for a in attempts if a["race"]) for i in range(3)],
            )
        )
    return out


def _envs(text: str | None):
    for shard in parse_shards(text or ""):
        env = _json_after("SWEEP-ENV ", shard["lines"])
        if env:
            yield env


def analyse_canary(text: str | None) -> dict:
    """Whether memcheck reported the planted read, with the kernel filter and without (any attempt)."""
    out: dict = {}
    for shard in parse_shards(text or ""):
        key = "filtered" if KERNEL_FILTER.search(shard["command"]) else "unfiltered"
        body = "\n".join(shard["lines"])
        seen = out.get(key, {"detected": False, "names_kernel": False, "rc": []})
        out[key] = {
            "detected": seen["detected"] or CANARY_REPORT in body,
            "names_kernel": seen["names_kernel"] or "canary_kernel" in body,
            "rc": [*seen["rc"], shard["rc"]],
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
    budget_s: int | None = None,
) -> dict:
    outdir = Path(outdir)

    def read(name):
        path = outdir / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else None

    runs = {"plain": analyse_run("plain", read("plain"), False, None)}
    plain_calls = {i: r["variants"] for i, r in call_records(read("plain")).items()}
    plain_results = [s for s in parse_shards(read("plain") or "") if _json_after("SWEEP-RESULT ", s["lines"])]
    recorded = set().union(*(_json_after("SWEEP-RESULT ", s["lines"]).get("recorded", ()) for s in plain_results))
    for tool in tools:
        runs[tool] = analyse_run(tool, read(tool), True, jobs, plain_calls, recorded)
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
        "budget_s": budget_s,
        "canary": canary,
        "verdict": verdict,
        "notes": notes,
        "runs": runs,
    }


def table(summary: dict) -> str:
    rows = [
        (
            "run",
            "verdict",
            "errors",
            "variants exec/rec",
            "calls ok/mism/fail/unchecked",
            "retried",
            "exit codes",
            "wall s",
        )
    ]
    for name, r in summary["runs"].items():
        c = r.get("calls", {})
        rows.append(
            (
                name,
                r["verdict"],
                "-" if r.get("errors") is None else str(r["errors"]),
                f"{r.get('variants_executed', 0)}/{r.get('variants_recorded', 0)}",
                f"{c.get('ok', 0)}/{c.get('mismatched', 0)}/{c.get('failed', 0)}/{c.get('unchecked', 0)}",
                str(len(r.get("retried", []))),
                ",".join(map(str, r.get("exit_codes", []))) or "-",
                str(r.get("wall_s") or "-"),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    for name, r in summary["runs"].items():
        for s in r.get("retried", []):
            state = "all calls checked" if s["checked"] else "NOT all calls checked"
            lines.append(
                f"{name} shard {s['shard']}: {s['processes']} processes, exit codes {s['exit_codes']}: {state}"
            )
        for p in r.get("crashing_calls", []):
            lines.append(
                f"{name}: call #{p['index']} {p['id']} crashes compute-sanitizer "
                f"({p['crashes']} crashed processes, exit status {p['rc']})"
            )
        for u in r.get("unchecked_calls", []):
            only = u.get("variants_only_here")
            lines.append(
                f"{name}: UNCHECKED call #{u['index']} {u['id']} (shard {u['shard']}); "
                f"variants launched by no checked call: {'unknown' if only is None else len(only)}"
                + "".join(f"\n    {v}" for v in only or ())
            )
    canary = ", ".join(f"{k}: {'reported' if v['detected'] else 'NOT reported'}" for k, v in summary["canary"].items())
    lines.append(f"canary (planted out-of-bounds read under memcheck): {canary or 'not run'}")
    lines.append(f"kernel filter: {summary['kernel_filter'] or 'none (every kernel checked)'}")
    lines.append(f"other options: {summary['options'] or 'none'}")
    lines += [f"  - {n}" for n in summary["notes"]]
    lines.append(f"VERDICT: {summary['verdict'].upper()}")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("outdir", nargs="?")
    p.add_argument("--tools", default="memcheck racecheck synccheck")
    p.add_argument("--sanitizer")
    p.add_argument("--sanitizer-version")
    p.add_argument("--kernel-filter")
    p.add_argument("--options", help="the other options the tools ran with")
    p.add_argument("--jobs", type=int)
    p.add_argument("--budget", type=int, help="the sweep's time budget in seconds (recorded only)")
    p.add_argument(
        "--next-attempt",
        metavar="SHARD_LOG",
        help="print the driver options of the shard's next process; exit 1 when there is none",
    )
    opts = p.parse_args(argv)
    if opts.next_attempt:
        following = next_attempt(Path(opts.next_attempt).read_text(errors="replace"))
        if following is None:
            return 1
        print(following)
        return 0
    if not opts.outdir:
        p.error("OUTDIR is required")
    summary = summarize(
        opts.outdir,
        tools=opts.tools.split(),
        sanitizer=opts.sanitizer or None,
        sanitizer_version=opts.sanitizer_version,
        kernel_filter=opts.kernel_filter,
        options=opts.options,
        jobs=opts.jobs,
        budget_s=opts.budget,
    )
    with open(Path(opts.outdir) / "sanitize_summary.json", "w") as f:
        json.dump(summary, f, indent=1)
    print(table(summary))
    return 0 if summary["verdict"] == "clean" else 1


if __name__ == "__main__":
    sys.exit(main())
