"""The sanitizer sweep (gpu_runs/sanitize.sh) on a CPU: its summary on synthetic logs, its driver's bookkeeping.

A clean sweep is "clean"; reported errors make it "errors", also when the log is cut off; a log
cut off by a timeout, a missing shard, an unexecuted variant or an unreported canary make it
"incomplete", never "clean". A crashed sanitizer process is retried once; a crash that repeats is
pinned to one call (`next_attempt` plans the processes), and that call and the variants only it
launches are unchecked: "incomplete". The driver keys every launch as `record()` does, its PTX
cache compiles each kernel once, and its `SWEEP-` lines are what the summary reads.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest


def _load(name: str):
    """A module of tests/gpu_runs/ (a folder of scripts, not on the import path)."""
    if name not in sys.modules:
        path = Path(__file__).resolve().parent / "gpu_runs" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


sanitize_summary = _load("sanitize_summary")

TOOLS = ["memcheck", "racecheck", "synccheck"]
FILTER = "--kernel-name kns=_kernel"
RECORDED = ["gae_kernel[LAYOUT=0,PHASE=0]", "gae_kernel[LAYOUT=1,PHASE=3]", "linear_kernel[PHASE=0][bf16]"]
# Six calls (index: id, the variants it launches) in two shards of three; only call 4 launches
# RECORDED[2], and RECORDED[1] is launched by calls 1, 2, 3 and 5.
CALLS = {
    0: ("gae-nv-16x64-ax0-float32", RECORDED[:1]),
    1: ("gae-nv-2x4096-ax0-float32", RECORDED[:2]),
    2: ("gae-nv-2x8x3-ax1-bfloat16", RECORDED[1:2]),
    3: ("linear_scan-fwd-16x64-ax0-float32", RECORDED[1:2]),
    4: ("linear_scan-fwd-2x8x3-ax1-bfloat16", RECORDED[2:]),
    5: ("linear_scan-fwd-2x4096-ax0-float32", RECORDED[1:2]),
}
SHARDS = ([0, 1, 2], [3, 4, 5])
CRASH = 139


def driver(
    calls, *, executed=None, mismatched: int = 0, cut: str | None = None, crash_at: int | None = None
) -> list[str]:
    """The driver's output for `calls` (indices into CALLS).

    `executed` replaces the variants its result reports; the first `mismatched` calls differ from
    the reference; `cut` ("result", "json", "done") ends it early; `crash_at` ends it as a crash
    of the sanitizer does, with that call in flight.
    """
    env = {"device": "NVIDIA H200", "python": "3.12.3", "versions": {"jax": "0.11.2", "triton": "3.6.0"}}
    lines = [
        "SWEEP-ENV " + json.dumps(env),
        "SWEEP-CALLS " + json.dumps([[i, CALLS[i][0]] for i in calls]),
    ]
    for k, i in enumerate(calls):
        lines.append(f"SWEEP-START {i} {CALLS[i][0]}")
        if i == crash_at:
            return lines
        status = "mismatch" if k < mismatched else "ok"
        lines.append(f"[{k + 1}/{len(calls)}] #{i} {CALLS[i][0]}: {status} (3 launches, 0.3 s)")
        record = {"index": i, "id": CALLS[i][0], "status": status, "variants": CALLS[i][1]}
        if status == "mismatch":
            record["problems"] = ["out: max |err| 0.5"]
        lines.append("SWEEP-CALL " + json.dumps(record))
    if cut == "result":
        return lines
    result = {
        "shard": "0/1",
        "quick": False,
        "calls": len(calls),
        "indices": list(calls),
        "ok": len(calls) - mismatched,
        "mismatched": mismatched,
        "failed": 0,
        "aborted": None,
        "executed": sorted(set(executed if executed is not None else (v for i in calls for v in CALLS[i][1]))),
        "recorded": RECORDED,
    }
    text = "SWEEP-RESULT " + json.dumps(result)
    lines.append(text[: len(text) // 2] if cut == "json" else text)
    if cut in ("json", "done"):
        return lines
    return [*lines, "variants executed: 2; recorded by record(): 3", "SWEEP-DONE 12.5 s"]


def shard(
    run: str,
    i: int,
    n: int,
    body: list[str],
    *,
    rc: int | None = 0,
    summary: int | None = 0,
    attempt: int = 1,
    only: str | None = None,
    selection: str | None = None,
) -> str:
    """One process as sanitize.sh writes it: header, output, the sanitizer's summary, end line.

    Racecheck's summary is its RACECHECK SUMMARY line (it prints no ERROR SUMMARY). `selection`:
    the sweep's own `--only` (DRIVER_ARGS), which comes before the process's `--shard` or `--only`.
    """
    tag = f" attempt {attempt}" if attempt > 1 else ""
    which = f"--only {only}" if only else f"--shard {i}/{n}"
    if selection:
        which = f"--only {selection} {which}"
    if run == "plain":
        lines = [f"##### shard {i}/{n} of plain: python3 driver {which}", *body]
    else:
        lines = [f"##### shard {i}/{n} of {run}{tag}: compute-sanitizer --tool {run} {FILTER} python3 driver {which}"]
        lines += ["========= COMPUTE-SANITIZER", *body]
    if summary is not None and run == "racecheck":
        lines.append(f"========= RACECHECK SUMMARY: {summary} hazards displayed ({summary} errors, 0 warnings)")
    elif summary is not None:
        lines.append(f"========= ERROR SUMMARY: {summary} error{'s' if summary != 1 else ''}")
    if rc is not None:
        lines.append(f"##### end shard {i}/{n} of {run}{tag}: rc={rc} wall_s=95")
    return "\n".join(lines) + "\n"


def crashed(run: str, i: int, at: int | None, *, attempt: int = 1, calls=None, only: str | None = None, **kw) -> str:
    """A process of shard i/2 whose sanitizer crashed (exit status 139) with call `at` in flight."""
    body = driver(SHARDS[i] if calls is None else calls, crash_at=at, cut="result" if at is None else None)
    return shard(run, i, 2, body, rc=CRASH, summary=None, attempt=attempt, only=only, **kw)


def canary(detected: bool = True) -> str:
    report = ["========= Invalid __global__ read of size 4 bytes", "=========     at canary_kernel+0x70"]
    out = ""
    for i, flt in enumerate((FILTER, "")):
        body = report if detected else []
        out += f"##### shard {i}/2 of canary: compute-sanitizer {flt} --tool memcheck python3 driver --canary\n"
        out += "\n".join([*body, f"========= ERROR SUMMARY: {int(detected)} errors", "SWEEP-DONE canary"])
        out += f"\n##### end shard {i}/2 of canary: rc={86 if detected else 0} wall_s=20\n"
    return out


def clean(run: str, **kwargs) -> str:
    """Both shards of a run, each complete in one process."""
    summary = None if run == "plain" else 0
    return "".join(shard(run, i, 2, driver(SHARDS[i]), summary=summary, **kwargs) for i in range(2))


def write_sweep(path: Path, **overrides) -> Path:
    """A clean sweep's logs in `path`; `overrides` replace whole logs (None: no such log)."""
    logs = {"plain": clean("plain"), "canary": canary(), **{tool: clean(tool) for tool in TOOLS}}
    logs.update(overrides)
    for name, text in logs.items():
        if text is not None:
            (path / f"{name}.log").write_text(text)
    return path


def summarize(path: Path, **kwargs) -> dict:
    options = {"tools": TOOLS, "sanitizer": "/usr/local/cuda/bin/compute-sanitizer", "kernel_filter": FILTER, "jobs": 2}
    return sanitize_summary.summarize(path, **{**options, **kwargs})


def test_clean_sweep(tmp_path):
    s = summarize(write_sweep(tmp_path))
    assert s["verdict"] == "clean", s["notes"]
    assert s["device"] == "NVIDIA H200" and s["versions"]["triton"] == "3.6.0"
    assert s["canary"]["filtered"]["detected"] and s["canary"]["unfiltered"]["detected"]
    for name in ("plain", *TOOLS):
        run = s["runs"][name]
        assert run["verdict"] == "clean", (name, run["reasons"])
        assert (run["variants_executed"], run["variants_recorded"], run["variants_missing"]) == (3, 3, 0)
        assert run["calls"] == {"calls": 6, "ok": 6, "mismatched": 0, "failed": 0, "unchecked": 0}
        assert run["retried"] == run["crashing_calls"] == run["unchecked_calls"] == []
    assert [s["runs"][t]["errors"] for t in TOOLS] == [0, 0, 0]
    assert s["runs"]["plain"]["errors"] is None
    assert s["runs"]["racecheck"]["hazards"] == {"displayed": 0, "errors": 0, "warnings": 0}


def test_main_writes_the_json_and_exits_zero_only_when_clean(tmp_path, capsys):
    write_sweep(tmp_path)
    args = [str(tmp_path), "--sanitizer", "cs", "--kernel-filter", FILTER, "--jobs", "2"]
    assert sanitize_summary.main(args) == 0
    assert json.loads((tmp_path / "sanitize_summary.json").read_text())["verdict"] == "clean"
    assert "VERDICT: CLEAN" in capsys.readouterr().out
    (tmp_path / "memcheck.log").write_text(shard("memcheck", 0, 2, driver(SHARDS[0])))
    assert sanitize_summary.main(args) == 1


def test_errors(tmp_path):
    report = ["========= Invalid __global__ read of size 4 bytes", "=========     at gae_kernel+0x1a0 in gae.py:57"]
    bad = shard("memcheck", 0, 2, driver(SHARDS[0])) + shard(
        "memcheck", 1, 2, report + driver(SHARDS[1]), rc=86, summary=2
    )
    s = summarize(write_sweep(tmp_path, memcheck=bad))
    assert s["verdict"] == "errors"
    assert s["runs"]["memcheck"]["verdict"] == "errors"
    assert s["runs"]["memcheck"]["errors"] == 2
    assert s["runs"]["memcheck"]["exit_codes"] == [0, 86]


def test_racecheck_hazards(tmp_path):
    log = shard("racecheck", 0, 2, driver(SHARDS[0]), rc=86, summary=None) + shard("racecheck", 1, 2, driver(SHARDS[1]))
    log = log.replace(
        "##### end shard 0/2",
        "========= RACECHECK SUMMARY: 3 hazards displayed (1 error, 2 warnings)\n##### end shard 0/2",
    )
    s = summarize(write_sweep(tmp_path, racecheck=log))
    assert s["verdict"] == "errors"
    assert s["runs"]["racecheck"]["errors"] == 1
    assert s["runs"]["racecheck"]["hazards"] == {"displayed": 3, "errors": 1, "warnings": 2}


def test_racecheck_needs_no_error_summary(tmp_path):
    """racecheck ends with its RACECHECK SUMMARY alone (as on the H200): a complete process."""
    s = summarize(write_sweep(tmp_path))
    assert "ERROR SUMMARY" not in (tmp_path / "racecheck.log").read_text()
    assert s["runs"]["racecheck"]["verdict"] == "clean", s["runs"]["racecheck"]["reasons"]
    no_summary = "".join(shard("racecheck", i, 2, driver(SHARDS[i]), summary=None) for i in range(2))
    s = summarize(write_sweep(tmp_path, racecheck=no_summary))
    assert s["runs"]["racecheck"]["verdict"] == "incomplete"


@pytest.mark.parametrize(
    "second",
    [
        pytest.param(dict(body=driver(SHARDS[1], cut="result"), rc=None, summary=None), id="no-end-line"),
        pytest.param(dict(body=driver(SHARDS[1], cut="result"), rc=124, summary=0), id="timeout-rc"),
        pytest.param(dict(body=driver(SHARDS[1], cut="json"), rc=None, summary=None), id="json-cut"),
        pytest.param(dict(body=driver(SHARDS[1], cut="done"), rc=0, summary=0), id="no-sweep-done"),
        pytest.param(dict(body=driver(SHARDS[1]), rc=0, summary=None), id="no-error-summary"),
        pytest.param(dict(body=driver(SHARDS[1]), rc=CRASH, summary=0), id="crash-after-the-summary"),
    ],
)
def test_truncated_log_is_incomplete(tmp_path, second):
    """A process cut off by the time limit (even one whose sanitizer still said 0 errors) is not clean."""
    log = shard("memcheck", 0, 2, driver(SHARDS[0])) + shard("memcheck", 1, 2, **second)
    s = summarize(write_sweep(tmp_path, memcheck=log))
    assert s["runs"]["memcheck"]["verdict"] == "incomplete"
    assert s["verdict"] == "incomplete"
    assert not s["runs"]["memcheck"]["shards"][1]["complete"]


def test_truncated_log_with_reports_is_errors(tmp_path):
    report = ["========= Invalid __global__ write of size 4 bytes"]
    log = shard("memcheck", 0, 2, driver(SHARDS[0])) + shard(
        "memcheck", 1, 2, report + driver(SHARDS[1], cut="result"), rc=None, summary=None
    )
    s = summarize(write_sweep(tmp_path, memcheck=log))
    assert s["verdict"] == "errors"
    assert s["runs"]["memcheck"]["errors"] == 1


def test_reports_before_a_crash_are_errors(tmp_path):
    """A report printed before the sanitizer crashed counts, though a retry then completes."""
    report = ["========= Invalid __global__ read of size 4 bytes"]
    first = shard("memcheck", 1, 2, report + driver(SHARDS[1], crash_at=4), rc=CRASH, summary=None)
    log = shard("memcheck", 0, 2, driver(SHARDS[0])) + first + shard("memcheck", 1, 2, driver(SHARDS[1]), attempt=2)
    s = summarize(write_sweep(tmp_path, memcheck=log))
    assert s["verdict"] == "errors"
    assert s["runs"]["memcheck"]["errors"] == 1


@pytest.mark.parametrize(
    "overrides, options",
    [
        pytest.param({"synccheck": None}, {}, id="log-missing"),
        pytest.param({"memcheck": shard("memcheck", 0, 2, driver(SHARDS[0]))}, {}, id="shard-missing"),
        pytest.param(
            {"memcheck": "".join(shard("memcheck", i, 2, driver(SHARDS[i], executed=RECORDED[:2])) for i in range(2))},
            {},
            id="variant-not-executed",
        ),
        pytest.param({"canary": canary(detected=False)}, {}, id="canary-not-reported"),
        pytest.param({}, {"sanitizer": None}, id="no-sanitizer"),
        pytest.param({}, {"tools": []}, id="no-tools"),
        pytest.param(
            {"memcheck": clean("memcheck") + "##### no time for attempt 2 of shard 1/2 of memcheck (12 s left)\n"},
            {},
            id="no-time-for-a-planned-process",
        ),
    ],
)
def test_incomplete_sweeps(tmp_path, overrides, options):
    s = summarize(write_sweep(tmp_path, **overrides), **options)
    assert s["verdict"] == "incomplete", s["notes"]


def test_mismatch(tmp_path):
    log = shard("memcheck", 0, 2, driver(SHARDS[0], mismatched=1)) + shard("memcheck", 1, 2, driver(SHARDS[1]))
    s = summarize(write_sweep(tmp_path, memcheck=log))
    assert s["verdict"] == "mismatch"
    assert s["runs"]["memcheck"]["calls"]["mismatched"] == 1
    i = SHARDS[0][0]  # which call, and what the driver said differed
    want = [{"index": i, "id": CALLS[i][0], "problems": ["out: max |err| 0.5"]}]
    assert s["runs"]["memcheck"]["mismatched_calls"] == want


def test_a_log_without_shard_lines_is_one_shard(tmp_path):
    calls = [*SHARDS[0], *SHARDS[1]]
    text = "\n".join(["========= COMPUTE-SANITIZER", *driver(calls), "========= ERROR SUMMARY: 0 errors"])
    run = sanitize_summary.analyse_run("memcheck", text, True, None)
    assert run["verdict"] == "clean", run["reasons"]
    cut = "\n".join(["========= COMPUTE-SANITIZER", *driver(calls, cut="result")])
    assert sanitize_summary.analyse_run("memcheck", cut, True, None)["verdict"] == "incomplete"


def test_a_crash_retried_once_then_complete_is_clean(tmp_path):
    """A crash that does not repeat (the load-related ones on the H200) costs one more process."""
    log = clean("memcheck").split("##### shard 1/2")[0]
    log += crashed("memcheck", 1, 4) + shard("memcheck", 1, 2, driver(SHARDS[1]), attempt=2)
    s = summarize(write_sweep(tmp_path, memcheck=log))
    run = s["runs"]["memcheck"]
    assert s["verdict"] == "clean", s["notes"]
    assert run["retried"] == [{"shard": "1/2", "processes": 2, "checked": True, "exit_codes": [CRASH, 0]}]
    assert run["crashing_calls"] == run["unchecked_calls"] == []
    assert run["calls"] == {"calls": 6, "ok": 6, "mismatched": 0, "failed": 0, "unchecked": 0}


def test_a_sweep_of_selected_calls_retried_whole_is_checked(tmp_path):
    """With the sweep's own `--only` (DRIVER_ARGS) every process's command has one; a process that
    runs its whole shard (`--shard` after it) still counts as the whole shard, so a crash retried
    whole and then complete leaves the shard checked (run 12's VEC 8 sweep read "incomplete")."""
    sel = "0-5"
    log = shard("memcheck", 0, 2, driver(SHARDS[0]), selection=sel)
    log += crashed("memcheck", 1, 4, selection=sel) + shard(
        "memcheck", 1, 2, driver(SHARDS[1]), attempt=2, selection=sel
    )
    plain = "".join(shard("plain", i, 2, driver(SHARDS[i]), summary=None, selection=sel) for i in range(2))
    s = summarize(write_sweep(tmp_path, plain=plain, memcheck=log))
    run = s["runs"]["memcheck"]
    assert run["retried"] == [{"shard": "1/2", "processes": 2, "checked": True, "exit_codes": [CRASH, 0]}]
    assert run["verdict"] == "clean" and s["verdict"] == "clean", s["notes"]
    # a part of a shard (its own --only after the selection) is still only that part
    part = shard("memcheck", 1, 2, driver([3]), attempt=2, only="3", selection=sel)
    log = shard("memcheck", 0, 2, driver(SHARDS[0]), selection=sel) + crashed("memcheck", 1, 4, selection=sel) + part
    run = summarize(write_sweep(tmp_path, plain=plain, memcheck=log))["runs"]["memcheck"]
    assert run["verdict"] == "incomplete" and run["retried"][0]["checked"] is False, run


def pinned_log(call: int) -> str:
    """Shard 1/2 of memcheck when `call` crashes the sanitizer every time: the four processes."""
    rest = [i for i in SHARDS[1] if i != call]
    only = sanitize_summary.format_only(rest)
    return (
        crashed("memcheck", 1, call)
        + crashed("memcheck", 1, call, attempt=2)
        + shard("memcheck", 1, 2, driver(rest), attempt=3, only=only)
        + crashed("memcheck", 1, call, attempt=4, calls=[call], only=str(call))
    )


def test_a_crash_pinned_to_one_call_leaves_its_variants_unchecked(tmp_path, capsys):
    """Call 4 crashes memcheck every time: the other calls are checked, call 4 and RECORDED[2] are not."""
    log = clean("memcheck").split("##### shard 1/2")[0] + pinned_log(4)
    s = summarize(write_sweep(tmp_path, memcheck=log))
    run = s["runs"]["memcheck"]
    assert s["verdict"] == run["verdict"] == "incomplete"
    assert run["errors"] == 0
    assert run["retried"] == [
        {"shard": "1/2", "processes": 4, "checked": False, "exit_codes": [CRASH, CRASH, 0, CRASH]}
    ]
    assert run["crashing_calls"] == [{"shard": "1/2", "index": 4, "id": CALLS[4][0], "crashes": 3, "rc": CRASH}]
    assert run["unchecked_calls"] == [
        {"shard": "1/2", "index": 4, "id": CALLS[4][0], "variants_only_here": [RECORDED[2]]}
    ]
    assert (run["variants_executed"], run["variants_missing"], run["missing"]) == (2, 1, [RECORDED[2]])
    assert run["calls"] == {"calls": 6, "ok": 5, "mismatched": 0, "failed": 0, "unchecked": 1}
    assert CALLS[4][0] in run["reasons"][0] and "reproducibly" in run["reasons"][0]
    sanitize_summary.main([str(tmp_path), "--sanitizer", "cs", "--kernel-filter", FILTER, "--jobs", "2"])
    out = capsys.readouterr().out
    assert f"UNCHECKED call #4 {CALLS[4][0]}" in out and RECORDED[2] in out and "VERDICT: INCOMPLETE" in out


def test_a_pinned_call_is_unchecked_even_when_others_launch_its_variants(tmp_path):
    """Call 5's variant is launched by calls 1-3 too: every variant is checked, call 5 is not."""
    log = clean("memcheck").split("##### shard 1/2")[0] + pinned_log(5)
    run = summarize(write_sweep(tmp_path, memcheck=log))["runs"]["memcheck"]
    assert run["verdict"] == "incomplete"
    assert run["variants_missing"] == 0
    assert run["unchecked_calls"] == [{"shard": "1/2", "index": 5, "id": CALLS[5][0], "variants_only_here": []}]


def test_a_crash_that_no_retry_resolves_is_incomplete(tmp_path):
    """Both processes crash and no time is left for the others: nothing of shard 1 is checked."""
    log = (
        clean("memcheck").split("##### shard 1/2")[0] + crashed("memcheck", 1, 4) + crashed("memcheck", 1, 3, attempt=2)
    )
    log += "##### no time for attempt 3 of shard 1/2 of memcheck (5 s left)\n"
    run = summarize(write_sweep(tmp_path, memcheck=log))["runs"]["memcheck"]
    assert run["verdict"] == "incomplete"
    assert [u["index"] for u in run["unchecked_calls"]] == SHARDS[1]
    assert [u["variants_only_here"] for u in run["unchecked_calls"]] == [[], [RECORDED[2]], []]
    assert any("no time left for attempt 3" in r for r in run["reasons"])


def test_next_attempt_retries_then_pins(tmp_path):
    """The processes sanitize.sh runs for shard 1/2 when call 4 crashes memcheck every time."""
    plan = sanitize_summary.next_attempt
    log = crashed("memcheck", 1, 4)
    assert plan(log) == "--shard 1/2"  # the retry, whole
    log += crashed("memcheck", 1, 4, attempt=2)
    assert plan(log) == "--only 3,5"  # the others again, at once
    log += shard("memcheck", 1, 2, driver([3, 5]), attempt=3, only="3,5")
    assert plan(log) == "--only 4"  # then call 4 alone
    log += crashed("memcheck", 1, 4, attempt=4, calls=[4], only="4")
    assert plan(log) is None  # pinned
    assert plan(pinned_log(4)) is None


@pytest.mark.parametrize(
    "log, expected",
    [
        pytest.param(shard("memcheck", 1, 2, driver(SHARDS[1])), None, id="complete"),
        pytest.param(shard("memcheck", 1, 2, driver(SHARDS[1], cut="result"), rc=124), None, id="timed-out"),
        pytest.param(shard("memcheck", 1, 2, driver(SHARDS[1]), rc=86, summary=3), None, id="errors"),
        pytest.param(
            crashed("memcheck", 1, 4) + shard("memcheck", 1, 2, driver(SHARDS[1]), attempt=2), None, id="retry-complete"
        ),
        pytest.param(
            crashed("memcheck", 1, 4) + crashed("memcheck", 1, None, attempt=2), "--only 3", id="crash-at-exit-halves"
        ),
        pytest.param(
            crashed("memcheck", 1, 4)
            + crashed("memcheck", 1, 4, attempt=2)
            + crashed("memcheck", 1, 5, attempt=3, calls=[3, 5], only="3,5"),
            "--only 3",
            id="second-crash-peels-again",
        ),
        pytest.param(
            crashed("memcheck", 1, 4)
            + crashed("memcheck", 1, 4, attempt=2)
            + crashed("memcheck", 1, 5, attempt=3, calls=[3, 5], only="3,5")
            + shard("memcheck", 1, 2, driver([3]), attempt=4, only="3"),
            "--only 4",
            id="then-each-suspect-alone",
        ),
        pytest.param(
            crashed("memcheck", 1, 4)
            + crashed("memcheck", 1, 4, attempt=2)
            + shard("memcheck", 1, 2, driver([3, 5]), attempt=3, only="3,5")
            + shard("memcheck", 1, 2, driver([4]), attempt=4, only="4"),
            None,
            id="suspect-passes-alone",
        ),
    ],
)
def test_next_attempt(log, expected):
    assert sanitize_summary.next_attempt(log) == expected


def test_next_attempt_command_line(tmp_path, capsys):
    path = tmp_path / "memcheck.1.log"
    path.write_text(crashed("memcheck", 1, 4))
    assert sanitize_summary.main(["--next-attempt", str(path)]) == 0
    assert capsys.readouterr().out.strip() == "--shard 1/2"
    path.write_text(shard("memcheck", 1, 2, driver(SHARDS[1])))
    assert sanitize_summary.main(["--next-attempt", str(path)]) == 1


def test_a_call_that_passes_alone_is_checked(tmp_path):
    """A suspect that passes when run alone leaves nothing unchecked: the sweep is clean."""
    log = clean("memcheck").split("##### shard 1/2")[0]
    log += crashed("memcheck", 1, 4) + crashed("memcheck", 1, 4, attempt=2)
    log += shard("memcheck", 1, 2, driver([3, 5]), attempt=3, only="3,5")
    log += shard("memcheck", 1, 2, driver([4]), attempt=4, only="4")
    s = summarize(write_sweep(tmp_path, memcheck=log))
    assert s["verdict"] == "clean", s["notes"]
    assert s["runs"]["memcheck"]["crashing_calls"] == []


@pytest.mark.parametrize("indices, text", [([3], "3"), ([9, 3, 4, 5, 7], "3-5,7,9"), ([], "")])
def test_only_round_trip(indices, text):
    assert sanitize_summary.format_only(indices) == text
    assert sanitize_summary.parse_only(text) == sorted(indices)


def test_driver_keys_launches_as_record_does(monkeypatch, capsys):
    """The driver's wrapped `launch.call`, over `record()`'s calls, finds every recorded variant.

    Its `SWEEP-` lines are what the summary reads: the calls given, each call's variants, and
    with `--only` (indices, ranges, call ids) just those calls.
    """
    pytest.importorskip("triton", reason="the test extra installs triton")
    import jax

    from rlscan_jax._src import dispatch
    from rlscan_jax._src.triton import batching, launch, ops

    sanitize_driver = _load("sanitize_driver")
    real = launch.call
    name = "discounted_returns-nv-16x64-ax0-float32"
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # lets dispatch accept "triton"; nothing runs
    dispatch.triton_unavailable_reason.cache_clear()
    try:
        assert sanitize_driver.main(["--trace-only"]) == 0
        whole = capsys.readouterr().out
        assert sanitize_driver.main(["--trace-only", "--only", f"3-4,0,{name}"]) == 0
        only = capsys.readouterr().out
        assert sanitize_driver.main(["--trace-only", "--only", "100000"]) == 2
        assert sanitize_driver.main(["--trace-only", "--only", "0,3-4", "--shard", "1/2"]) == 0
        sliced = capsys.readouterr().out  # the second of two slices of --only's calls
    finally:
        jax.clear_caches()
        batching.launcher.cache_clear()
        ops._op.cache_clear()
        dispatch.triton_unavailable_reason.cache_clear()
    assert "COMPLETE: all" in whole and "not recorded by record()" not in whole
    assert launch.call is real

    def analysed(out: str, command: str = "") -> dict:
        process = {"index": 0, "total": 1, "attempt": 1, "command": command, "lines": out.splitlines()}
        return sanitize_summary.analyse_shard({**process, "rc": 0, "ended": True}, sanitized=False)

    a = analysed(whole)
    assert a["complete"] and a["in_flight"] is None
    assert sorted(a["calls_given"]) == sorted(a["calls_finished"]) == a["result"]["indices"]
    launched = {v for r in a["calls_finished"].values() for v in r["variants"]}
    assert launched == set(a["result"]["executed"]) == set(a["result"]["recorded"])
    index = {cid: i for i, cid in a["calls_given"].items()}[name]
    b = analysed(only, f"driver --only 3-4,0,{name}")
    assert b["complete"] and b["only"] == f"3-4,0,{name}"
    assert sorted(b["calls_given"]) == sorted(b["calls_finished"]) == b["result"]["indices"] == sorted({0, 3, 4, index})
    assert all(b["calls_finished"][i] == a["calls_finished"][i] for i in b["calls_given"])
    c = analysed(sliced)
    assert c["complete"] and sorted(c["calls_given"]) == sorted(c["calls_finished"]) == [3, 4]


def test_ptx_cache_compiles_each_kernel_once(tmp_path, monkeypatch):
    """The driver's disk cache of jax-triton 0.3.x compilations (run on the GPU only), on a stand-in."""
    pytest.importorskip("triton", reason="the test extra installs triton")
    import dataclasses
    import types

    @dataclasses.dataclass
    class CompilationResult:  # jax_triton.triton_lib's, field for field
        binary: str
        name: str
        shared_mem_bytes: int
        ttgir: str | None
        llir: str | None

    compiled = []

    def compile_ttir_inplace(ttir, backend, options, compute_capability, platform):
        compiled.append(ttir)
        return CompilationResult(f"// ptx of {ttir}", "gae_kernel", 1024, "ttgir", "llir")

    lib = types.SimpleNamespace(compile_ttir_inplace=compile_ttir_inplace, CompilationResult=CompilationResult)
    monkeypatch.setitem(sys.modules, "jax_triton", types.SimpleNamespace(triton_lib=lib))
    monkeypatch.setitem(sys.modules, "jax_triton.triton_lib", lib)
    sanitize_driver = _load("sanitize_driver")
    for _ in range(2):  # two processes: the second finds the first one's PTX on disk
        lib.compile_ttir_inplace = compile_ttir_inplace
        assert sanitize_driver.cache_ptx(str(tmp_path))
        first = lib.compile_ttir_inplace("tt.func @gae_kernel", None, "opts", 90, "cuda")
        again = lib.compile_ttir_inplace("tt.func @gae_kernel", None, "opts", 90, "cuda")
        other = lib.compile_ttir_inplace("tt.func @gae_kernel", None, "opts", 80, "cuda")
    assert compiled == ["tt.func @gae_kernel", "tt.func @gae_kernel"]  # once for cc 90, once for cc 80
    assert (again.binary, again.name, again.shared_mem_bytes) == (first.binary, "gae_kernel", 1024)
    assert other.binary == first.binary and len(list(tmp_path.glob("*.json"))) == 2


def test_ptx_diff_ignores_debug_information_only():
    """ptx_diff.py compares instructions: line-table entries, comments and debug labels aside."""
    ptx_diff = _load("ptx_diff")
    a = "\n".join(
        [
            "// generated by triton",
            '.file 1 "common.py"',
            ".loc 1 40 5",
            "$L__tmp1:",
            "\tld.global.b32 %r1, [%rd1];",
            ".section .debug_abbrev",
            "{",
            ".b8 1",
            "}",
            "\tst.global.b32 [%rd2], %r1;",
        ]
    )
    b = "\n".join([".loc 1 77 2", "ld.global.b32 %r1, [%rd1];", "$L__tmp9:", "st.global.b32 [%rd2], %r1;"])
    assert ptx_diff.normalized(a) == ptx_diff.normalized(b) == "ld.global.b32 %r1, [%rd1];\nst.global.b32 [%rd2], %r1;"
    reordered = "st.global.b32 [%rd2], %r1;\nld.global.b32 %r1, [%rd1];"
    assert ptx_diff.normalized(reordered) != ptx_diff.normalized(b)


def test_reference_cache_keeps_a_call_of_some_inputs_apart(tmp_path):
    """The driver's on-disk reference of a call that differentiates some inputs (Inputs.wrt) is
    not the reference of the call with the same id and arrays that differentiates all of them:
    sharing one key gave that call every input's gradient, a KeyError in `run_one` (the 4 calls
    of 68 that failed in the forty-third session's memcheck). Each is the sequential scan's own,
    first computed and then read back from the cache."""
    import dataclasses

    import numpy as np
    import triton_variants

    sanitize_driver = _load("sanitize_driver")
    whole, args = triton_variants._call("retrace", "nv", 16, (4,), 0, np.float32, np.bool_, 0.9)
    some = dataclasses.replace(whole, wrt=("q_values",))
    first = {inp.wrt: sanitize_driver.reference(inp, args, str(tmp_path)) for inp in (whole, some)}
    again = {inp.wrt: sanitize_driver.reference(inp, args, str(tmp_path)) for inp in (whole, some)}
    assert len(list(tmp_path.iterdir())) == 2
    assert sorted(first[None][1]) == sorted(whole.float_names()) and sorted(first[("q_values",)][1]) == ["q_values"]
    for key in first:
        outs, grads = first[key]
        assert sorted(again[key][1]) == sorted(grads)
        for k, g in grads.items():
            np.testing.assert_array_equal(again[key][1][k], g)
        for o, w in zip(again[key][0], outs, strict=True):
            np.testing.assert_array_equal(o, w)
    np.testing.assert_array_equal(first[("q_values",)][1]["q_values"], first[None][1]["q_values"])


def test_calls_keep_log_rhos_clear_of_the_clip_kinks():
    """The sweep's calls hold no log ρ within KINK_MARGIN of a clip's kink (log of the call's
    ρ̄, c̄ and ρ̄_pg, 1 where not given), where the GPU's float32 exp and XLA's round e^x to either
    side of the clip (the forty-fourth session: 2 of V-trace's 68 GAMMA_GRAD calls differed in
    d/dlog_rhos by 1.24 at log ρ = -8.0e-8). The helper moves only those values, and keeps the
    dtype."""
    import numpy as np
    import triton_variants
    from ml_dtypes import bfloat16

    margin = triton_variants.KINK_MARGIN
    x = np.array([-8.0e-8, 0.3, np.log(2.0) + 1e-6, np.log(0.5) - 2e-5, -0.5], np.float32)
    moved = triton_variants.clear_of_clip_kinks(x, {"rho_clip": 2.0, "c_clip": None, "pg_rho_clip": 0.5})
    assert moved.dtype == np.float32
    want = [-8.0e-8, 0.3, np.log(2.0) + 10 * margin, np.log(0.5) - 10 * margin, -0.5]
    np.testing.assert_allclose(moved, want, rtol=1e-6)
    moved = triton_variants.clear_of_clip_kinks(x.astype(bfloat16), {})  # every clip 1: a kink at 0
    assert moved.dtype == bfloat16 and float(moved[0]) == np.float32(bfloat16(-10 * margin))
    np.testing.assert_array_equal(moved[1:], x[1:].astype(bfloat16))

    checked = 0
    for inp, args in triton_variants.calls():
        if "log_rhos" not in args:
            continue
        x = np.asarray(args["log_rhos"], np.float64)
        for name, default in triton_variants.CLIPS.items():
            clip = args.get(name, default)
            if clip is not None:
                assert np.abs(x - np.log(clip)).min() >= margin * (1 - 1e-3), (inp.op, inp.mode, name)
                checked += 1
    assert checked > 100
