"""The sanitizer sweep (gpu_runs/sanitize.sh) on a CPU: its summary on synthetic logs, its driver's bookkeeping.

A clean sweep is "clean"; reported errors make it "errors", also when the log is cut off; a log
cut off by a timeout, a missing shard, an unexecuted variant or an unreported canary make it
"incomplete", never "clean". The driver keys every launch as `record()` does, and its PTX cache
compiles each kernel once.
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
# What each of two shards executes: together, every recorded variant.
EXECUTED = (RECORDED[:2], RECORDED[1:])


def driver(shard: str, executed, *, mismatched: int = 0, cut: str | None = None) -> list[str]:
    """The driver's output for one shard; `cut` ("result", "json", "done") ends it early."""
    env = {"device": "NVIDIA H200", "python": "3.12.3", "versions": {"jax": "0.11.2", "triton": "3.6.0"}}
    result = {
        "shard": shard,
        "quick": False,
        "calls": 3,
        "ok": 3 - mismatched,
        "mismatched": mismatched,
        "failed": 0,
        "aborted": None,
        "executed": list(executed),
        "recorded": RECORDED,
    }
    lines = ["SWEEP-ENV " + json.dumps(env), "[1/3] gae-nv-16x64-ax0-float32: ok (3 launches, 2 new variants, 0.3 s)"]
    if cut == "result":
        return lines
    text = "SWEEP-RESULT " + json.dumps(result)
    lines.append(text[: len(text) // 2] if cut == "json" else text)
    if cut in ("json", "done"):
        return lines
    return [*lines, "variants executed: 2; recorded by record(): 3", "SWEEP-DONE 12.5 s"]


def shard(run: str, i: int, n: int, body: list[str], *, rc: int | None = 0, summary: int | None = 0) -> str:
    """One shard as sanitize.sh writes it: header, output, the sanitizer's summary, end line."""
    if run == "plain":
        lines = [f"##### shard {i}/{n} of plain: python3 driver --shard {i}/{n}", *body]
    else:
        lines = [
            f"##### shard {i}/{n} of {run}: compute-sanitizer --tool {run} {FILTER} python3 driver --shard {i}/{n}"
        ]
        lines += ["========= COMPUTE-SANITIZER", *body]
    if summary is not None:
        lines.append(f"========= ERROR SUMMARY: {summary} error{'s' if summary != 1 else ''}")
    if rc is not None:
        lines.append(f"##### end shard {i}/{n} of {run}: rc={rc} wall_s=95")
    return "\n".join(lines) + "\n"


def canary(detected: bool = True) -> str:
    report = ["========= Invalid __global__ read of size 4 bytes", "=========     at canary_kernel+0x70"]
    out = ""
    for i, flt in enumerate((FILTER, "")):
        body = report if detected else []
        out += f"##### shard {i}/2 of canary: compute-sanitizer {flt} --tool memcheck python3 driver --canary\n"
        out += "\n".join([*body, f"========= ERROR SUMMARY: {int(detected)} errors", "SWEEP-DONE canary"])
        out += f"\n##### end shard {i}/2 of canary: rc={86 if detected else 0} wall_s=20\n"
    return out


def write_sweep(path: Path, **overrides) -> Path:
    """A clean sweep's logs in `path`; `overrides` replace whole logs (None: no such log)."""
    logs = {
        "plain": "".join(shard("plain", i, 2, driver(f"{i}/2", EXECUTED[i]), summary=None) for i in range(2)),
        "canary": canary(),
    }
    for tool in TOOLS:
        body = (
            ["========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"] if tool == "racecheck" else []
        )
        logs[tool] = "".join(shard(tool, i, 2, driver(f"{i}/2", EXECUTED[i]) + body) for i in range(2))
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
    assert [s["runs"][t]["errors"] for t in TOOLS] == [0, 0, 0]
    assert s["runs"]["plain"]["errors"] is None
    assert s["runs"]["racecheck"]["hazards"] == {"displayed": 0, "errors": 0, "warnings": 0}


def test_main_writes_the_json_and_exits_zero_only_when_clean(tmp_path, capsys):
    write_sweep(tmp_path)
    args = [str(tmp_path), "--sanitizer", "cs", "--kernel-filter", FILTER, "--jobs", "2"]
    assert sanitize_summary.main(args) == 0
    assert json.loads((tmp_path / "sanitize_summary.json").read_text())["verdict"] == "clean"
    assert "VERDICT: CLEAN" in capsys.readouterr().out
    (tmp_path / "memcheck.log").write_text(shard("memcheck", 0, 2, driver("0/2", EXECUTED[0])))
    assert sanitize_summary.main(args) == 1


def test_errors(tmp_path):
    report = ["========= Invalid __global__ read of size 4 bytes", "=========     at gae_kernel+0x1a0 in gae.py:57"]
    bad = shard("memcheck", 0, 2, driver("0/2", EXECUTED[0])) + shard(
        "memcheck", 1, 2, report + driver("1/2", EXECUTED[1]), rc=86, summary=2
    )
    s = summarize(write_sweep(tmp_path, memcheck=bad))
    assert s["verdict"] == "errors"
    assert s["runs"]["memcheck"]["verdict"] == "errors"
    assert s["runs"]["memcheck"]["errors"] == 2
    assert s["runs"]["memcheck"]["exit_codes"] == [0, 86]


def test_racecheck_hazards(tmp_path):
    body = ["========= RACECHECK SUMMARY: 3 hazards displayed (1 error, 2 warnings)"]
    log = shard("racecheck", 0, 2, driver("0/2", EXECUTED[0]) + body, rc=86, summary=1) + shard(
        "racecheck", 1, 2, driver("1/2", EXECUTED[1])
    )
    s = summarize(write_sweep(tmp_path, racecheck=log))
    assert s["verdict"] == "errors"
    assert s["runs"]["racecheck"]["hazards"] == {"displayed": 3, "errors": 1, "warnings": 2}


@pytest.mark.parametrize(
    "second",
    [
        pytest.param(dict(body=driver("1/2", EXECUTED[1], cut="result"), rc=None, summary=None), id="no-end-line"),
        pytest.param(dict(body=driver("1/2", EXECUTED[1], cut="result"), rc=124, summary=0), id="timeout-rc"),
        pytest.param(dict(body=driver("1/2", EXECUTED[1], cut="json"), rc=None, summary=None), id="json-cut"),
        pytest.param(dict(body=driver("1/2", EXECUTED[1], cut="done"), rc=0, summary=0), id="no-sweep-done"),
        pytest.param(dict(body=driver("1/2", EXECUTED[1]), rc=0, summary=None), id="no-error-summary"),
    ],
)
def test_truncated_log_is_incomplete(tmp_path, second):
    """A shard cut off by the time limit (even one whose sanitizer still said 0 errors) is not clean."""
    log = shard("memcheck", 0, 2, driver("0/2", EXECUTED[0])) + shard("memcheck", 1, 2, **second)
    s = summarize(write_sweep(tmp_path, memcheck=log))
    assert s["runs"]["memcheck"]["verdict"] == "incomplete"
    assert s["verdict"] == "incomplete"
    assert not s["runs"]["memcheck"]["shards"][1]["complete"]


def test_truncated_log_with_reports_is_errors(tmp_path):
    report = ["========= Invalid __global__ write of size 4 bytes"]
    log = shard("memcheck", 0, 2, driver("0/2", EXECUTED[0])) + shard(
        "memcheck", 1, 2, report + driver("1/2", EXECUTED[1], cut="result"), rc=None, summary=None
    )
    s = summarize(write_sweep(tmp_path, memcheck=log))
    assert s["verdict"] == "errors"
    assert s["runs"]["memcheck"]["errors"] == 1


@pytest.mark.parametrize(
    "overrides, options",
    [
        pytest.param({"synccheck": None}, {}, id="log-missing"),
        pytest.param({"memcheck": shard("memcheck", 0, 2, driver("0/2", EXECUTED[0]))}, {}, id="shard-missing"),
        pytest.param(
            {"memcheck": "".join(shard("memcheck", i, 2, driver(f"{i}/2", EXECUTED[0])) for i in range(2))},
            {},
            id="variant-not-executed",
        ),
        pytest.param({"canary": canary(detected=False)}, {}, id="canary-not-reported"),
        pytest.param({}, {"sanitizer": None}, id="no-sanitizer"),
        pytest.param({}, {"tools": []}, id="no-tools"),
    ],
)
def test_incomplete_sweeps(tmp_path, overrides, options):
    s = summarize(write_sweep(tmp_path, **overrides), **options)
    assert s["verdict"] == "incomplete", s["notes"]


def test_mismatch(tmp_path):
    log = shard("memcheck", 0, 2, driver("0/2", EXECUTED[0], mismatched=1)) + shard(
        "memcheck", 1, 2, driver("1/2", EXECUTED[1])
    )
    s = summarize(write_sweep(tmp_path, memcheck=log))
    assert s["verdict"] == "mismatch"
    assert s["runs"]["memcheck"]["calls"]["mismatched"] == 1


def test_a_log_without_shard_lines_is_one_shard(tmp_path):
    text = "\n".join(["========= COMPUTE-SANITIZER", *driver("0/1", RECORDED), "========= ERROR SUMMARY: 0 errors"])
    run = sanitize_summary.analyse_run("memcheck", text, True, None)
    assert run["verdict"] == "clean", run["reasons"]
    cut = "\n".join(["========= COMPUTE-SANITIZER", *driver("0/1", RECORDED, cut="result")])
    assert sanitize_summary.analyse_run("memcheck", cut, True, None)["verdict"] == "incomplete"


def test_driver_keys_launches_as_record_does(monkeypatch, capsys):
    """The driver's wrapped `launch.call`, over `record()`'s calls, finds every recorded variant."""
    pytest.importorskip("triton", reason="the test extra installs triton")
    import jax

    from rlscan_jax._src import dispatch
    from rlscan_jax._src.triton import batching, launch, ops

    sanitize_driver = _load("sanitize_driver")
    real = launch.call
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # lets dispatch accept "triton"; nothing runs
    dispatch.triton_unavailable_reason.cache_clear()
    try:
        assert sanitize_driver.main(["--trace-only"]) == 0
    finally:
        jax.clear_caches()
        batching.launcher.cache_clear()
        ops._op.cache_clear()
        dispatch.triton_unavailable_reason.cache_clear()
    out = capsys.readouterr().out
    assert "COMPLETE: all" in out and "not recorded by record()" not in out
    assert launch.call is real


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
