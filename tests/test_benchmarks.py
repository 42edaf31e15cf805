"""Smoke tests of the benchmark harness in benchmarks/: the --quick run, the gate, the report."""

from __future__ import annotations

import gzip
import itertools
import json
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from benchmarks import copy_floor, devicetime, report, run, shapes


def test_quick_run_and_report(tmp_path, capsys):
    # One test, so that pytest-xdist never runs the quick suite twice.
    out = tmp_path / "quick.json"
    assert run.main(["--quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    head, results = data[0], data[1:]
    assert head["record"] == "header"
    assert [r for r in data if r["record"] == "header"] == [head]
    for field in run.HEADER_FIELDS:
        assert field in head, field
    assert head["copy_bw_gbps"] > 0

    settings, _ = run.parse_args(["--quick"])
    expected = {c.key for u in run.plan(settings, run.IMPLEMENTATIONS) for c in u.cases}
    assert {run.key_of(r) for r in results} == expected
    assert {r["implementation"] for r in results} == {"associative", "sequential", "rlax"}
    assert {r["layout"] for r in results} == set(shapes.LAYOUTS)
    assert {r["mode"] for r in results} == set(shapes.MODES)
    for r in results:
        for field in run.RESULT_FIELDS:
            assert field in r, (field, r)
        assert r["status"] == "ok" and r["correct"] is True, r
        assert r["max_err"] <= r["tolerance"]
        assert r["device_us"] is None  # no device events on the CPU
        assert r["injit_us"] > 0
        assert r["injit_us_p10"] <= r["injit_us"] <= r["injit_us_p90"]
        assert r["bytes_min"] == shapes.bytes_min(r["op"], r["N"], r["T"], r["dtype"], r["mode"])
        assert r["copy_bw_gbps"] > 0

    capsys.readouterr()
    assert report.main([str(out), "--out-dir", str(tmp_path), "--stem", "q", "--targets"]) == 0
    md = (tmp_path / "q.md").read_text()
    assert "| op | N×T | layout |" in md and "gae" in md and "episodic_cumsum" in md
    assert (tmp_path / "q_bandwidth.png").stat().st_size > 0
    assert "[NOT MEASURED]" in capsys.readouterr().out  # no triton on the CPU


def test_launch_overrides_are_checked_and_recorded(tmp_path, monkeypatch):
    """--launch NAME=VALUE sets a launch constant for the run (a tuning run's plans), checked at
    parse time, and is written into the header and into every record (as its Python literal where
    JSON cannot hold the value: ROW_REGISTERS' tuple keys)."""
    from rlscan_jax._src.triton import launch

    settings, _ = run.parse_args(["--quick", "--launch", "VECTOR_SPLIT_ELEMS=0", "--launch", "THREADS_PER_ELEM=0.125"])
    assert settings.launch == (("VECTOR_SPLIT_ELEMS", 0), ("THREADS_PER_ELEM", 0.125))
    for bad in (
        "NO_SUCH_CONSTANT=1",
        "VECTOR_SPLIT_ELEMS",
        "VECTOR_SPLIT_ELEMS=[1",
        "VECTOR_SPLIT_ELEMS=0.5",
        "plan=1",
    ):
        with pytest.raises(SystemExit):
            run.parse_args(["--quick", "--launch", bad])
    monkeypatch.setattr(launch, "VECTOR_SPLIT_ELEMS", launch.VECTOR_SPLIT_ELEMS)  # main sets them: undone after
    monkeypatch.setattr(launch, "ROW_REGISTERS", launch.ROW_REGISTERS)
    caps = {"gae_kernel": {(4096, 8): 80}}
    out = tmp_path / "launch.json"
    argv = ["--quick", "--ops", "gae", "--shapes", "64x16", "--impls", "associative", "--modes", "fwd"]
    assert (
        run.main(
            [
                *argv,
                "--dtypes",
                "float32",
                "--layouts",
                "time_major",
                "--launch",
                "VECTOR_SPLIT_ELEMS=0",
                "--launch",
                f"ROW_REGISTERS={caps!r}",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert launch.VECTOR_SPLIT_ELEMS == 0 and launch.ROW_REGISTERS == caps
    data = json.loads(out.read_text())
    recorded = {"VECTOR_SPLIT_ELEMS": 0, "ROW_REGISTERS": "{'gae_kernel': {(4096, 8): 80}}"}
    assert data[0]["settings"]["launch"] == recorded
    assert data[1:] and all(r["launch"] == recorded for r in data[1:])


def _forgets_boundaries(op, layout):
    """A deliberately wrong implementation: the reference with every episode flag cleared."""

    def fn(inputs):
        x = {k: jnp.zeros_like(v) if v.dtype == jnp.bool_ else v for k, v in inputs.items()}
        return shapes.call(op, x, layout=layout, implementation="associative")

    return fn


def test_gate_rejects_a_wrong_implementation():
    impls = {**run.IMPLEMENTATIONS, "wrong": run.Implementation("wrong", _forgets_boundaries)}
    settings = run.Settings(
        ops=("gae",),
        impls=("wrong", "associative"),
        grid=((8, 64),),
        layouts=("batch_major",),
        dtypes=("float32",),
        modes=("fwd", "fwd+bwd"),
        loop_elements=2**12,
        max_calls_per_loop=4,
        compile_workers=2,
        copy_bytes=2**20,
    )
    _, records = run.run_suite(settings, impls)
    wrong = [r for r in records if r["implementation"] == "wrong"]
    assert len(wrong) == 2
    for r in wrong:
        assert r["status"] == "failed" and r["correct"] is False
        assert r["max_err"] > r["tolerance"]
        assert r["injit_us"] is None and r["device_us"] is None
    right = {(r["mode"]): r for r in records if r["implementation"] == "associative"}
    for r in wrong:
        assert report.speedup(r, right[r["mode"]]) is None
    table = report.markdown_table({}, records, subject="wrong")
    assert table.count("FAILED") == 2


def test_bytes_min_formula():
    e = 4096 * 1024
    assert shapes.bytes_min("gae", 4096, 1024, "float32", "fwd") == e * (4 * (3 + 2) + 2)
    assert shapes.bytes_min("gae", 4096, 1024, "float32", "fwd+bwd") == e * (4 * (3 * 3 + 2 * 2) + 2 * 2)
    assert shapes.bytes_min("linear_scan", 1, 1048576, "bfloat16", "fwd") == 1048576 * 2 * (2 + 1)
    assert shapes.bytes_min("vtrace", 8, 8, jnp.bfloat16, "fwd+bwd") == 64 * (2 * (3 * 4 + 2 * 2) + 2 * 2)


@pytest.mark.parametrize("op", shapes.OPS)
def test_make_inputs(op):
    spec = shapes.SPECS[op]
    a = shapes.make_inputs(op, 16, 256, "time_major", "float32", seed=3)
    b = shapes.make_inputs(op, 16, 256, "batch_major", "bfloat16", seed=3)
    c = shapes.make_inputs(op, 16, 256, "time_major", "float32", seed=4)
    assert set(a) == set(spec.floats) | set(spec.flags)
    for k in spec.floats:
        assert a[k].shape == (256, 16) and a[k].dtype == jnp.float32
        assert b[k].shape == (16, 256) and b[k].dtype == jnp.bfloat16
        np.testing.assert_array_equal(np.asarray(b[k].T), np.asarray(a[k].astype(jnp.bfloat16)))
        assert not np.array_equal(np.asarray(a[k]), np.asarray(c[k]))
    for k in spec.flags:
        assert a[k].dtype == jnp.bool_ and 0 < int(a[k].sum()) < a[k].size
        np.testing.assert_array_equal(np.asarray(b[k].T), np.asarray(a[k]))
    again = shapes.make_inputs(op, 16, 256, "time_major", "float32", seed=3)
    for k in a:
        np.testing.assert_array_equal(np.asarray(a[k]), np.asarray(again[k]))
    out = shapes.call(op, b, layout="batch_major", implementation="sequential")
    assert len(out) == len(spec.outputs) and all(o.shape == (16, 256) for o in out)


def _synthetic_trace(path):
    """A trace shaped like the profiler's on a GPU: a device process with a stream and a derived line."""
    meta = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "pid": 701, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "M", "pid": 1, "tid": 7, "name": "thread_name", "args": {"name": "Stream #7(Compute)"}},
        {"ph": "M", "pid": 1, "tid": 3735928559, "name": "thread_name", "args": {"name": "XLA Ops"}},
        {"ph": "M", "pid": 701, "tid": 5, "name": "thread_name", "args": {"name": "python"}},
    ]
    host = [
        {"ph": "X", "pid": 701, "tid": 5, "ts": 100.0, "dur": 100.0, "name": "rlscan_bench/a#0"},
        {"ph": "X", "pid": 701, "tid": 5, "ts": 1000.0, "dur": 100.0, "name": "rlscan_bench/a#1"},
        {"ph": "X", "pid": 701, "tid": 5, "ts": 2000.0, "dur": 50.0, "name": "rlscan_bench/b#0"},
        {"ph": "X", "pid": 701, "tid": 5, "ts": 120.0, "dur": 5.0, "name": "PjitFunction(loop)"},
    ]
    kernels = []
    for start in (110.0, 1010.0):  # two windows of 2 calls x 2 kernels (2 + 3 µs)
        for i, dur in enumerate((2.0, 3.0, 2.0, 3.0)):
            kernels.append({"ph": "X", "pid": 1, "tid": 7, "ts": start + 10 * i, "dur": dur, "name": f"k{i % 2}"})
            kernels.append({"ph": "X", "pid": 1, "tid": 3735928559, "ts": start + 10 * i, "dur": dur, "name": "op"})
    kernels.append({"ph": "X", "pid": 1, "tid": 7, "ts": 2052.0, "dur": 4.0, "name": "late"})  # just after b#0
    kernels.append({"ph": "X", "pid": 1, "tid": 7, "ts": 9000.0, "dur": 1.0, "name": "stray"})
    with gzip.open(path, "wt") as f:
        json.dump({"displayTimeUnit": "ns", "traceEvents": meta + host + kernels}, f)


def test_device_time_attribution(tmp_path):
    path = tmp_path / "perfetto_trace.json.gz"
    _synthetic_trace(path)
    session = devicetime.attribute(devicetime.load_events(str(path)))
    assert session.has_device
    assert session.device_events == 10  # the stream only: the derived "XLA Ops" line is left out
    assert session.unattributed == 1
    assert [len(w) for w in session.windows["a"]] == [4, 4]
    samples, per_call = devicetime.per_call_us(session.windows["a"], 2)
    assert samples == [5.0, 5.0, 5.0, 5.0] and per_call == 2.0
    samples, per_call = devicetime.per_call_us(session.windows["b"], 1)
    assert samples == [4.0] and per_call == 1.0


def test_profiler_session_finds_its_windows():
    f = jax.jit(lambda x: jnp.cumsum(x) * 2)
    x = jnp.ones(1000)
    jax.block_until_ready(f(x))
    session = devicetime.run([devicetime.Job("cumsum", lambda: f(x), windows=2)])
    assert len(session.windows["cumsum"]) == 2
    if jax.default_backend() == "gpu":
        samples, _ = devicetime.per_call_us(session.windows["cumsum"], 1)
        assert len(samples) == 2 and all(s > 0 for s in samples)


def test_profiler_session_flushes_before_each_window():
    """before_window runs before every window, in windows of its own that the jobs never see."""
    order = []
    f = jax.jit(lambda x: jnp.cumsum(x) * 2)
    x = jnp.ones(1000)
    jax.block_until_ready(f(x))
    flush = devicetime.cache_flush(1 << 20)

    def before():
        order.append("flush")
        return flush()

    def call():
        order.append("call")
        return f(x)

    jobs = [devicetime.Job("a", call, windows=2), devicetime.Job("b", call, windows=1)]
    session = devicetime.run(jobs, before_window=before)
    assert order == ["flush", "call"] * 3
    assert len(session.windows["a"]) == 2 and len(session.windows["b"]) == 1
    assert len(session.windows[devicetime.FLUSH_JOB]) == 3


def _record(impl, n, t, dtype="float32", mode="fwd", *, fraction=None, injit=None, device=None, status="ok"):
    """A result record; `fraction` sets the device time to that fraction of the bandwidth limit."""
    b = shapes.bytes_min("gae", n, t, dtype, mode)
    if fraction is not None:
        device = b / (4000.0 * 1e3) / fraction
    return {
        "op": "gae",
        "implementation": impl,
        "layout": "time_major",
        "dtype": dtype,
        "N": n,
        "T": t,
        "mode": mode,
        "status": status,
        "device_us": device if status == "ok" else None,
        "injit_us": (injit or (device and 1.2 * device)) if status == "ok" else None,
        "bytes_min": b,
        "copy_bw_gbps": 4000.0,
    }


def test_targets_on_made_up_records():
    records = [
        _record("triton", 4096, 1024, fraction=0.85),
        _record("triton", 1024, 4096, fraction=0.70),  # misses 80%
        _record("triton", 65536, 16, fraction=0.65),
        _record("triton", 32768, 8, status="failed"),  # a failed case misses
        _record("associative", 4096, 1024, injit=1000.0),
        _record("sequential", 4096, 1024, status="skipped"),
    ]
    results = dict((detail.split(":")[0], status) for status, detail in report.targets({}, records))
    assert results["fp32 fwd ≥ 80% of the bandwidth limit at N·T ≥ 2^22"] == "MISSED"
    assert results["fp32 fwd ≥ 60% at 65536×16, 32768×8, 8×131072, 1×1048576"] == "MISSED"
    assert results["≥ 3× faster than associative (in-jit) at T ≥ 128"] == "MET"
    assert results["≥ 50× faster than sequential (in-jit) at T ≥ 128"] == "NOT MEASURED"
    assert results["bf16 device time ≤ 0.65× fp32 at N·T ≥ 2^22"] == "NOT MEASURED"
    assert results["in-jit ≤ 1.5× device time at N·T ≥ 2^22"] == "MET"
    frac, device = report.fraction(records[0])
    assert device and frac == pytest.approx(0.85)


def test_targets_markdown_lists_every_miss_with_its_factor(tmp_path):
    """--targets-md: every target's status, and every missed case, farthest first, with the factor
    by which its value must improve to pass (level / value for "at least" targets, value / level for
    "at most"); a failed case is listed as FAILED."""
    records = [
        _record("triton", 4096, 1024, fraction=0.85),
        _record("triton", 1024, 4096, fraction=0.40),  # needs 2x to reach 80 %
        _record("triton", 16384, 512, fraction=0.64),  # needs 1.25x
        _record("triton", 8192, 512, status="failed"),
        _record("triton", 4096, 1024, dtype="bfloat16", fraction=0.85),  # 0.52x the fp32 time: passes
        # 0.8x the fp32 time: needs 0.8 / 0.65
        _record(
            "triton",
            16384,
            512,
            dtype="bfloat16",
            device=0.8 * _record("triton", 16384, 512, fraction=0.64)["device_us"],
        ),
    ]
    text = report.targets_markdown({"device": "made up"}, records)
    assert "| fp32 fwd ≥ 80% of the bandwidth limit at N·T ≥ 2^22 | MISSED | 1/4 |" in text
    assert "| bf16 device time ≤ 0.65× fp32 at N·T ≥ 2^22 | MISSED | 1/2 |" in text
    rows = [line for line in text.splitlines() if line.startswith("| gae ")]
    assert rows[:3] == [
        "| gae 8192x512 time_major float32 fwd | FAILED |  |",
        "| gae 1024x4096 time_major float32 fwd | 40% | 2.00× |",
        "| gae 16384x512 time_major float32 fwd | 64% | 1.25× |",
    ]
    assert f"| gae 16384x512 time_major bfloat16 fwd | 0.80 | {0.8 / 0.65:.2f}× |" in rows
    assert "Missed by layout, dtype and mode: time_major float32 fwd 3." in text
    assert "| ≥ 50× faster than sequential (in-jit) at T ≥ 128 | NOT MEASURED | – |" in text
    results = tmp_path / "r.json"
    run.write_results(str(results), {"record": "header", "device": "made up"}, records)
    out = tmp_path / "t.md"
    assert report.main([str(results), "--no-plot", "--out-dir", str(tmp_path), "--targets-md", str(out)]) == 0
    assert out.read_text() == report.targets_markdown({"device": "made up"}, records, source=str(results))


def test_targets_markdown_best_possible_from_the_copy_floor(tmp_path):
    """With a copy floor, each missed case's best possible value: the fraction of the limit a plain
    copy of its bytes reaches, the baseline's in-jit time over that copy, and (bf16) that copy over the
    fp32 case's device time; a miss whose best value misses the target too is out of reach."""
    # A made-up copy that runs at 2200 of the suite's 4000 GB/s at every size: 55 % of every limit.
    curve = [{"bytes_moved": b, "device_us": b / (2200.0 * 1e3)} for b in (2**16, 2**34)]
    fp32 = _record("triton", 4096, 1024, fraction=0.45)
    copy_us = fp32["bytes_min"] / (2200.0 * 1e3)
    bf16_bytes = shapes.bytes_min("gae", 4096, 1024, "bfloat16", "fwd")
    records = [
        fp32,  # in-jit 1.2x its device time: 2.67x its limit
        _record("associative", 4096, 1024, injit=2.5 * copy_us),  # 2.5 / 0.55 / 2.67: 1.70x; at most 2.5x
        _record("triton", 4096, 1024, "bfloat16", device=0.9 * fp32["device_us"]),
        _record("triton", 4096, 1024, mode="fwd+bwd", fraction=0.4),  # a copy's 55 % would pass
        _record("triton", 32768, 8, fraction=0.3),
    ]
    text = report.targets_markdown({"device": "made up"}, records, floor=curve, floor_source="cf.json")
    assert '"best possible" is drawn from the device time of a plain copy at each size (`cf.json`' in text
    for title, out in (("80%", "1 of the 1"), ("60%", "1 of the 1"), ("associative", "1 of the 1"),
                       ("fwd+bwd", "0 of the 1"), ("bf16", "0 of the 1")):  # fmt: skip
        section = next(part for part in text.split("\n## ")[1:] if title in part.splitlines()[0])
        assert f"Out of reach by it: {out} misses." in section, section
    assert "| case | value | needs | best possible |" in text
    assert "| gae 4096x1024 time_major float32 fwd | 45% | 1.78× | 55%, out of reach |" in text
    assert "| gae 32768x8 time_major float32 fwd | 30% | 2.00× | 55%, out of reach |" in text
    assert "| gae 4096x1024 time_major float32 fwd | 1.7 | 1.76× | 2.5, out of reach |" in text
    assert "| gae 4096x1024 time_major float32 fwd+bwd | 40% | 1.25× | 55% |" in text
    best = bf16_bytes / (2200.0 * 1e3) / fp32["device_us"]
    assert f"| gae 4096x1024 time_major bfloat16 fwd | 0.90 | {0.9 / 0.65:.2f}× | {best:.2f} |" in text
    assert "best possible" not in report.targets_markdown({"device": "made up"}, records)
    (tmp_path / "cf.json").write_text(json.dumps({"records": curve}))
    results = tmp_path / "r.json"
    run.write_results(str(results), {"record": "header", "device": "made up"}, records)
    out = tmp_path / "t.md"
    argv = [str(results), "--no-plot", "--out-dir", str(tmp_path), "--targets-md", str(out)]
    assert report.main([*argv, "--copy-floor", str(tmp_path / "cf.json")]) == 0
    assert out.read_text() == report.targets_markdown(
        {"device": "made up"}, records, source=str(results), floor=curve, floor_source=str(tmp_path / "cf.json")
    )


def test_check_shows_a_value_that_rounds_to_the_level_with_more_digits():
    """A missed 1.502 of an at-most-1.5 target reads 1.502, not 1.50; other values keep the format."""
    c = report._Check("in-jit", ".2f", 1.5, at_least=False)
    assert [c.show(1.502), c.show(1.5), c.show(1.7), c.show(1.50004)] == ["1.502", "1.50", "1.70", "1.50004"]
    c = report._Check("fraction", ".0%", 0.5)
    assert [c.show(0.4996), c.show(0.42)] == ["49.96%", "42%"]


def test_committed_targets_match_the_committed_results():
    """results/h200_targets.md is what --targets-md makes of results/h200.json with the H200's copy
    floor (regenerate it after a merge: benchmarks/README.md)."""
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    source, floor_source = "benchmarks/results/h200.json", "benchmarks/results/copy_floor_h200.json"
    head, records = report.load([os.path.join(root, source)])
    floor = copy_floor.load(os.path.join(root, floor_source))
    with open(os.path.join(root, "benchmarks/results/h200_targets.md")) as f:
        assert f.read() == report.targets_markdown(head, records, source=source, floor=floor, floor_source=floor_source)


def test_readme_table_is_generated_from_the_committed_results():
    """README.md's Performance table is what --readme-table makes of results/h200.json with the
    H200's copy floor: every row of it, nothing else, and the rows of GAE float32 forward alone."""
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    head, records = report.load([os.path.join(root, "benchmarks/results/h200.json")])
    floor = copy_floor.load(os.path.join(root, "benchmarks/results/copy_floor_h200.json"))
    table = report.markdown_table(head, records, None, floor, report.README_TABLE)
    rows = table.splitlines()[2:]
    assert len(rows) == 20 and all(r.startswith("| gae | ") and "| float32 | fwd |" in r for r in rows)
    with open(os.path.join(root, "README.md")) as f:
        readme = f.read()
    assert table in readme


def test_readme_accuracy_table_is_the_committed_measurement():
    """README.md's accuracy table is benchmarks.accuracy.table of the committed results: every
    implementation's error in float32 and bfloat16, the worse of the two settings, for every op."""
    import json
    import os

    import cases

    from benchmarks import accuracy

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    records = []
    for name in ("accuracy_associative-sequential.json", "accuracy_triton.json"):
        with open(os.path.join(root, "benchmarks/results", name)) as f:
            records += json.load(f)
    made = accuracy.table(records)
    assert len(made.splitlines()) == 2 + len(cases.OP_NAMES) and made.count("e-0") == 6 * len(cases.OP_NAMES)
    with open(os.path.join(root, "README.md")) as f:
        assert made in f.read()


def test_copy_floor_curve_and_report(tmp_path, capsys):
    """benchmarks.copy_floor runs (wall clock on the CPU), its sizes double per_octave times an
    octave, its interpolation is log-log linear, and the report's vs-copy column and floor lines
    come from it: a case whose device time equals a copy of its bytes reads 100 %."""
    assert (
        copy_floor.main([str(tmp_path / "cf.json"), "--lo", "16", "--hi", "17", "--per-octave", "2", "--windows", "2"])
        == 0
    )
    measured = copy_floor.load(tmp_path / "cf.json")
    assert [r["bytes_moved"] for r in measured] == [65536, 94208, 131072]  # 2^16.5 rounded to 4 KiB
    assert all(r["wall_us"] > 0 and r["samples"] == 2 for r in measured)
    # A made-up device curve: 2 µs at 1 MB, 8 µs at 16 MB, so 4 µs at 4 MB (log-log midpoint).
    curve = [{"bytes_moved": 2**20, "device_us": 2.0}, {"bytes_moved": 2**24, "device_us": 8.0}]
    assert copy_floor.floor_us(curve, 2**22) == pytest.approx(4.0)
    assert copy_floor.floor_us(curve, 2**20) == pytest.approx(2.0)
    assert copy_floor.floor_us(curve, 2**25) is None and copy_floor.floor_us(curve, 2**19) is None
    r = _record("triton", 32768, 8, fraction=0.3)
    curve = [{"bytes_moved": r["bytes_min"] // 2, "device_us": r["device_us"] / 2},
             {"bytes_moved": r["bytes_min"] * 2, "device_us": r["device_us"] * 2}]  # fmt: skip
    md = report.markdown_table({}, [r], "triton", curve)
    assert "vs copy |" in md and "| 30% | 100% |" in md, md
    lines = report.floor_summary([r], curve)
    assert lines == ["32768x8 time_major: a copy of the same bytes 30-30% of the limit; triton 30-30% (1 ops)"]
    (tmp_path / "curve.json").write_text(json.dumps({"records": curve}))
    results = tmp_path / "r.json"
    run.write_results(str(results), {"record": "header"}, [r])
    capsys.readouterr()
    assert report.main([str(results), "--no-plot", "--targets", "--copy-floor", str(tmp_path / "curve.json")]) == 0
    assert "a copy of the same bytes 30-30%" in capsys.readouterr().out


def test_ppo_update_quick(tmp_path):
    pytest.importorskip("gymnax")
    pytest.importorskip("optax")
    from benchmarks import ppo_update

    out = tmp_path / "ppo.json"
    assert ppo_update.main(["--quick", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    head, records = data[0], data[1:]
    assert head["record"] == "header" and head["benchmark"] == "ppo_update"
    assert all(r["record"] == "result" for r in records)
    for field in ("device", "platform", "jax", "jaxlib", "date", "config", "dispatch_us"):
        assert field in head, field
    assert head["config"]["env_name"] == "CartPole-v1"
    assert {(r["num_envs"], r["implementation"]) for r in records} == {(32, "associative"), (32, "sequential")}
    by_impl = {r["implementation"]: r for r in records}
    for r in records:
        assert r["status"] == "ok", r
        assert r["gae_max_err"] <= ppo_update.TOLERANCE
        assert np.isfinite(r["total_loss"])
        for name in ("update_ms", "gae_ms"):
            lo, med, hi = r[f"{name}_min"], r[name], r[f"{name}_max"]
            assert all(np.isfinite(x) and x > 0 for x in (lo, med, hi)), r
            assert lo <= med <= hi
        assert 0 < r["gae_share"] <= 1
        assert r["gae_share"] == pytest.approx(r["gae_ms"] / r["update_ms"], rel=1e-3)
        for base in ("sequential", "associative"):
            expected = by_impl[base]["update_ms"] / r["update_ms"]
            assert r[f"update_speedup_vs_{base}"] == pytest.approx(expected, rel=1e-3)
        if jax.default_backend() == "gpu":
            assert 0 < r["gae_share_device"] <= 1
        else:
            assert r["update_device_ms"] is None  # not profiled
    assert "| envs×steps | implementation |" in (tmp_path / "ppo.md").read_text()


def test_multi_gpu_quick(tmp_path):
    """The scaling harness on two forced CPU devices: every variant correct, no collective."""
    import os
    import subprocess
    import sys

    out = tmp_path / "mg.json"
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2").strip()
    env.pop("TRITON_INTERPRET", None)
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.multi_gpu", "--quick", "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    head, *records = json.loads(out.read_text())
    assert head["record"] == "header" and head["devices_sharded"] == 2
    # gae and linear_scan forward, gae fwd+bwd; both layouts; 1 device, 2 Auto, 2 Explicit.
    assert len(records) == 3 * 2 * 3
    assert {(r["devices"], r["axis_type"]) for r in records} == {(1, None), (2, "Auto"), (2, "Explicit")}
    for r in records:
        assert r["correct"] and r["collectives"] == [] and r["rel_err"] <= 1e-4, r
        assert r["injit_us"] > 0 and r["speedup"] > 0
    table = (tmp_path / "mg.md").read_text()
    assert table.count("\n| gae |") == 4 and "2 devices, Explicit" in table


def test_occupancy_arithmetic():
    """Compute capability 9.0 limits, worked by hand: 65536 registers in 256-register units per
    warp, 64 warps, 32 blocks, 228 KB of shared memory with 1 KB reserved per block."""
    from benchmarks import kernel_resources as kr

    # 178 registers -> 5696 a warp, rounded to 5888; 65536 // 5888 = 11 warps -> one block of 8.
    assert kr.occupancy(178, 32768, 8) == {
        "blocks_per_sm": 1,
        "warps_per_sm": 8,
        "occupancy": 0.125,
        "limited_by": "registers",
    }
    # 48 registers -> 1536 a warp; 42 warps -> 5 blocks of 8 = 40 warps.
    assert kr.occupancy(48, 256, 8)["warps_per_sm"] == 40
    # 32 registers, 4 warps: registers allow 16 blocks, warps 16, shared memory (60 KB) 3.
    occ = kr.occupancy(32, 60 * 1024, 4)
    assert occ["blocks_per_sm"] == 3 and occ["limited_by"] == "shared"
    # Tiny blocks: the 32-block limit.
    assert kr.occupancy(16, 0, 1) == {"blocks_per_sm": 32, "warps_per_sm": 32, "occupancy": 0.5, "limited_by": "blocks"}


def test_kernel_resources_declares_pointers_aligned():
    """The compile marks exactly the pointer parameters 16-byte aligned, as jax-triton does."""
    from benchmarks import kernel_resources as kr

    got = kr.aligned_pointers(("*fp32", "i32", "*bf16", "i64", "*i1"))
    assert got == {(0,): [["tt.divisibility", 16]], (2,): [["tt.divisibility", 16]], (4,): [["tt.divisibility", 16]]}


def test_kernel_resources_records_launches():
    """The recorder sees the launches a traced call makes, with the launch plan's grid."""
    pytest.importorskip("triton")
    from benchmarks import kernel_resources as kr
    from rlscan_jax._src.triton import launch

    (one,) = kr.case_launches("gae", 4096, 128, "batch_major", "fwd")
    p = launch.plan(launch.geometry((4096, 128), 1))
    assert one.kernel.fn.__name__ == "gae_kernel"
    assert one.grid == (p.row_blocks, 1) and one.num_warps == p.num_warps
    assert dict(one.constexprs)["BT"] == p.BT and dict(one.constexprs)["BB"] == p.BB
    # fwd+bwd: the forward (with the scan's h kept) and the fused backward (ops.FUSED_BACKWARD).
    names = [x.kernel.fn.__name__ for x in kr.case_launches("gae", 4096, 128, "batch_major", "fwd+bwd")]
    assert names == ["gae_kernel", "adjoint_kernel"]
    # Rows split in three launches: summaries, carries, rescan; the fused backward likewise.
    split = [
        (x.kernel.fn.__name__, dict(x.constexprs).get("PHASE"))
        for x in kr.case_launches("gae", 1024, 4096, "time_major", "fwd+bwd")
    ]
    assert split == [
        ("gae_kernel", 1),
        ("carry_kernel", None),
        ("gae_kernel", 2),
        ("adjoint_kernel", 1),
        ("carry_kernel", None),
        ("adjoint_kernel", 2),
    ]


def test_kernel_resources_dtypes_and_launch_overrides(tmp_path, monkeypatch):
    """--dtypes compiles each case's launches for every dtype asked (a dtype column in the table),
    and --launch overrides a launch constant before tracing, recorded in the header, as benchmarks.run
    does; a name that is not a launch constant is refused."""
    pytest.importorskip("triton")
    from benchmarks import kernel_resources as kr
    from rlscan_jax._src.triton import launch

    monkeypatch.setattr(launch, "MAX_WARPS", launch.MAX_WARPS)  # restored after the override
    out = tmp_path / "kr.json"
    argv = ["--out", str(out), "--ops", "gae", "--shapes", "64x128", "--layouts", "batch_major", "--modes", "fwd"]
    assert kr.main([*argv, "--dtypes", "float32,bfloat16", "--launch", "MAX_WARPS=2"]) == 0
    head, *records = json.loads(out.read_text())
    assert head["launch"] == {"MAX_WARPS": 2}
    assert [r["dtype"] for r in records] == ["float32", "bfloat16"]
    assert all(x["num_warps"] == 2 for r in records for x in r["launches"])
    table = (tmp_path / "kr.md").read_text()
    assert "| mode | dtype |" in table and "| fwd | bfloat16 | gae_kernel P0 |" in table
    assert "--launch): {'MAX_WARPS': 2}" in table
    with pytest.raises(SystemExit):
        kr.main([*argv, "--launch", "NOT_A_CONSTANT=1"])


def test_kernel_resources_counts_vector_loads(tmp_path, monkeypatch):
    """Each launch's global loads in its PTX, vector and scalar. GAE's time-major [128, 8] blocks of
    4096 columns load 16 bytes at a time as shipped (launch.TIME_MAJOR_CVEC_ALIGNED), and one
    element an instruction with it empty (the compile, as jax-triton's, is told nothing of N)."""
    pytest.importorskip("triton")
    from benchmarks import kernel_resources as kr
    from rlscan_jax._src.triton import launch

    monkeypatch.setattr(launch, "TIME_MAJOR_CVEC_ALIGNED", launch.TIME_MAJOR_CVEC_ALIGNED)  # restored after
    assert "gae_kernel" in launch.TIME_MAJOR_CVEC_ALIGNED
    got = {}
    for name, value in (("off", "{}"), ("shipped", repr(launch.TIME_MAJOR_CVEC_ALIGNED))):
        out = tmp_path / f"kr_{name}.json"
        argv = ["--out", str(out), "--ops", "gae", "--shapes", "4096x128", "--layouts", "time_major", "--modes", "fwd"]
        assert kr.main([*argv, "--launch", f"TIME_MAJOR_CVEC_ALIGNED={value}"]) == 0
        (x,) = json.loads(out.read_text())[1]["launches"]
        assert (x["BT"], x["BB"]) == (128, 8), x
        got[name] = (x["vector_loads"], x["scalar_loads"])
    assert got["off"][0] == 0 and got["off"][1] > 0, got
    assert got["shipped"][0] > 0 and got["shipped"][1] < got["off"][1], got


def test_kernel_resources_param_forms():
    """With a parameter form (benchmarks.param_forms), a case's launches take γ and λ (linear_scan's
    b) in that form: GAMMA_FULL 3 for one a row, 4 for one a time step (time-major: a [BT] vector),
    in the forward and fused backward launches alike; b is then no input of the case."""
    pytest.importorskip("triton")
    from benchmarks import kernel_resources as kr

    for form, code in (("row", 3), ("time", 4), ("scalar", 0)):
        launches = kr.case_launches("gae", 4096, 128, "time_major", "fwd+bwd", param_form=form)
        assert [x.kernel.fn.__name__ for x in launches] == ["gae_kernel", "adjoint_kernel"]
        assert all(dict(x.constexprs)["GAMMA_FULL"] == dict(x.constexprs)["LAMBDA_FULL"] == code for x in launches)
    (fwd,) = kr.case_launches("linear_scan", 64, 128, "batch_major", "fwd", param_form="row")
    assert dict(fwd.constexprs)["GAMMA_FULL"] == 3 and not dict(fwd.constexprs)["HAS_B"]


@pytest.mark.parametrize("k, unroll", [(1, 1), (5, 1), (9, 4), (13, 3), (1, 2)])
def test_make_loop_keeps_every_call(k, unroll):
    # The compiled loop holds one call before the loop and `unroll` in its body: a call whose
    # outputs XLA could drop would be gone from the program (as it was when only the body's
    # last call reached the result). The result is the last `unroll` calls' outputs.
    loop = jax.jit(run.make_loop(jax.jit(lambda x: jnp.sin(x) * 2.0), k, unroll))
    x = jnp.arange(3.0)
    hlo = loop.lower(x).compile().as_text()
    assert len(re.findall(r"\bsine\(", hlo)) == (1 if k == 1 else 1 + unroll)
    out = loop(x)
    outs = (out,) if unroll == 1 else out
    assert len(outs) == unroll
    for o in outs:
        np.testing.assert_allclose(np.asarray(o), 2.0 * np.sin(np.arange(3.0)), rtol=1e-6)


def test_make_loop_unroll_checks_k():
    assert run.unrolled_calls(64, 8) == 65 and run.unrolled_calls(65, 8) == 65 and run.unrolled_calls(1, 8) == 1
    with pytest.raises(ValueError, match="unroll"):
        run.make_loop(lambda x: x, 64, 8)


def test_run_with_unrolled_loop(tmp_path):
    out = tmp_path / "unroll.json"
    argv = ["--quick", "--ops", "gae", "--impls", "associative", "--layouts", "batch_major", "--modes", "fwd+bwd"]
    assert run.main([*argv, "--injit-unroll", "4", "--out", str(out)]) == 0
    head, *records = json.loads(out.read_text())
    assert head["settings"]["injit_unroll"] == 4
    assert records and all(r["status"] == "ok" and r["correct"] for r in records)
    for r in records:  # the gate compared the last call's outputs, and K fits the unroll
        assert r["injit_unroll"] == 4 and (r["calls_per_loop"] - 1) % 4 == 0 and r["injit_us"] > 0
    with pytest.raises(SystemExit):
        run.parse_args(["--injit-unroll", "0"])


def test_param_forms_launch_override(tmp_path, monkeypatch):
    """param_forms --launch sets a launch constant for the run and records it (and --forms keeps
    the forms named): with
    STEP_VECTOR_KERNELS=() a γ one a time step reaches time-major launches as form 2 (the A/B of
    the vector load against the block load)."""
    import triton_variants

    from benchmarks import param_forms
    from rlscan_jax._src.triton import launch

    monkeypatch.setattr(launch, "STEP_VECTOR_KERNELS", launch.STEP_VECTOR_KERNELS)  # main sets it: undone after
    out = tmp_path / "forms.json"
    argv = ["--out", str(out), "--ops", "gae", "--shapes", "8x16", "--layouts", "time_major", "--windows", "1"]
    assert param_forms.main([*argv, "--forms", "time", "--launch", "STEP_VECTOR_KERNELS=()"]) == 0
    results = json.loads(out.read_text())
    assert results["launch"] == {"STEP_VECTOR_KERNELS": []}
    assert sorted((r["form"], r["mode"]) for r in results["records"]) == [("time", "fwd"), ("time", "fwd+bwd")]
    assert launch.STEP_VECTOR_KERNELS == ()
    seen = []

    def on_launch(kernel, grid, args, out_shapes, num_warps, constexprs):
        seen.append(constexprs["GAMMA_FULL"])

    with triton_variants.recording(on_launch):
        fn, args = param_forms.make_call("gae", "time", 8, 16, "time_major", "fwd+bwd", "triton")
        jax.eval_shape(fn, *args)
    assert seen and set(seen) == {2}, seen
    with pytest.raises(SystemExit):
        param_forms.main([*argv, "--launch", "STEP_VECTOR_KERNELS=1"])


def test_grad_subsets_quick(tmp_path, monkeypatch):
    """benchmarks.grad_subsets runs (wall clock on the CPU), one record per op, layout and subset
    that applies ("first" only for ops of two outputs), each gated before it is timed; on the
    Triton path each subset reaches the fused backward as it says (traced, not run): the stores of
    only the inputs differentiated (DR, DV, DNV), none for "params" (γ's and λ's segment sums
    instead), and no read of the unused output's cotangent for "first" (HAS_G2). A gate that
    fails leaves the case untimed."""
    import triton_variants

    from benchmarks import grad_subsets

    out = tmp_path / "subsets.json"
    ops = "gae,retrace,eligibility_traces"
    argv = ["--out", str(out), "--ops", ops, "--shapes", "8x16", "--layouts", "time_major", "--windows", "1"]
    assert grad_subsets.main(argv) == 0
    records = json.loads(out.read_text())["records"]
    assert sorted((r["op"], r["subset"]) for r in records) == [
        *[("eligibility_traces", s) for s in ("all", "params")],
        *[("gae", s) for s in sorted(grad_subsets.SUBSETS)],
        *[("retrace", s) for s in ("all", "critic", "params")],
    ]
    assert all(r["correct"] and r["wall_us"] > 0 and r["samples"] == 1 for r in records)
    assert {r["subset"]: r["wrt"] for r in records if r["op"] == "gae"} == {
        "all": ["rewards", "values", "next_values"],
        "critic": ["values", "next_values"],
        "params": ["gamma", "lambda_"],
        "first": ["rewards", "values", "next_values"],
    }
    want = {  # (DR, DV, DNV, HAS_G2, GAMMA_GRAD)
        "all": (True, True, True, True, 0),
        "critic": (False, True, True, True, 0),
        "params": (False, False, False, True, 2),
        "first": (True, True, True, False, 0),
    }
    for subset, flags in want.items():
        seen = []

        def on_launch(kernel, grid, args, out_shapes, num_warps, constexprs, seen=seen):
            if kernel.fn.__name__ == "adjoint_kernel":
                seen.append(tuple(constexprs[k] for k in ("DR", "DV", "DNV", "HAS_G2", "GAMMA_GRAD")))

        fn, x = grad_subsets.make_call("gae", 8, 16, "time_major", "float32", subset, "triton")
        with triton_variants.recording(on_launch):
            jax.eval_shape(fn, x)
        assert seen and set(seen) == {flags}, (subset, seen)
    sizes = []  # how many records are handed over after each case
    on_record = lambda records: sizes.append(len(records))  # noqa: E731
    kept = grad_subsets.measure(
        ["gae"], [(8, 16)], ["batch_major"], ["float32"], ["all", "params"], 1, 0, None, on_record
    )
    assert sizes == [1, 2] and [r["subset"] for r in kept] == ["all", "params"]
    monkeypatch.setitem(run.TOLERANCE, "float32", -1.0)  # no result passes
    assert grad_subsets.main([*argv, "--ops", "gae", "--subsets", "all"]) == 0
    (record,) = json.loads(out.read_text())["records"]
    assert record["correct"] is False and "wall_us" not in record and "device_us" not in record


def test_param_forms_quick(tmp_path):
    """benchmarks.param_forms runs (wall clock on the CPU) and writes one record per op, shape,
    layout, mode and form; on the Triton path each form reaches the kernels as it says (traced,
    not run): launch.param's form 0 for "scalar", 3 for "row", 2 for "time" (4, a [BT] vector, in
    time-major launches), and 1 (an array of the
    steps' shape) for "full" and "row-broadcast"."""
    import triton_variants

    from benchmarks import param_forms

    out = tmp_path / "forms.json"
    argv = ["--out", str(out), "--ops", "gae", "--shapes", "8x16", "--layouts", "batch_major", "--windows", "1"]
    assert param_forms.main(argv) == 0
    records = json.loads(out.read_text())["records"]
    assert len(records) == 2 * len(param_forms.FORMS)  # modes × forms
    assert all(r["wall_us"] > 0 and r["samples"] == 1 for r in records)
    want = {"scalar": 0, "row": 3, "time": 2, "full": 1, "row-broadcast": 1}
    for op in param_forms.OPS:
        for layout, form in itertools.product(shapes.LAYOUTS, param_forms.FORMS):
            seen = []

            def on_launch(kernel, grid, args, out_shapes, num_warps, constexprs, seen=seen):
                if "BT" in constexprs:  # linear_kernel reading linear_scan's b as an array: HAS_B
                    code = 1 if constexprs.get("HAS_B") else constexprs.get("B_FULL", constexprs.get("GAMMA_FULL"))
                    seen.append((kernel.fn.__name__, code))

            def expected(kernel, layout=layout, form=form):
                """One a time step, time-major: a [BT] vector (4) in every kernel."""
                return 4 if form == "time" and layout == "time_major" else want[form]

            with triton_variants.recording(on_launch):
                fn, args = param_forms.make_call(op, form, 8, 16, layout, "fwd+bwd", "triton")
                jax.eval_shape(fn, *args)
            # The parameters are arguments of the jitted call, not constants XLA could fold.
            given = {"b"} if op == "linear_scan" else set(shapes.SPECS[op].params)
            assert given <= set(args[0]), (op, given)
            # The forward launch, and the backward's where it is fused (eligibility traces' backward
            # with a γλ that varies in time is the reference's vjp, with b as an array).
            assert seen[0][1] == expected(seen[0][0]), (op, layout, form, seen)
            if op != "eligibility_traces" or form != "time":
                assert all(code == expected(k) for k, code in seen), (op, layout, form, seen)


def test_param_forms_dtypes_and_parameter_gradients(tmp_path):
    """param_forms --dtypes sets the per-step inputs' dtype (the parameters stay float32) and
    --param-grads adds the parameters' gradients to fwd+bwd: the gradient of γ and λ in each form
    has the form's shape, and on the Triton path with bfloat16 inputs the backward traces the forward
    kernel again with a float32 output (ops.param_residual), which is what the option times."""
    import triton_variants

    from benchmarks import param_forms

    out = tmp_path / "forms.json"
    argv = ["--out", str(out), "--ops", "gae", "--shapes", "8x16", "--layouts", "time_major", "--windows", "1"]
    argv += ["--forms", "scalar,row", "--dtypes", "float32,bfloat16", "--param-grads"]
    assert param_forms.main(argv) == 0
    records = json.loads(out.read_text())["records"]
    got = sorted((r["form"], r["mode"], r["dtype"], r.get("param_grads")) for r in records)
    cases = itertools.product(("row", "scalar"), ("fwd", "fwd+bwd"), ("bfloat16", "float32"))
    assert got == sorted((f, m, d, True if m == "fwd+bwd" else None) for f, m, d in cases)
    for form, shape in (("scalar", ()), ("row", (8,))):
        fn, args = param_forms.make_call("gae", form, 8, 16, "time_major", "fwd+bwd", None, "bfloat16", True)
        assert args[0]["rewards"].dtype == jnp.bfloat16 and args[0]["gamma"].dtype == jnp.float32
        outputs, grads = jax.jit(fn)(*args)
        assert outputs[0].dtype == jnp.bfloat16
        assert grads["gamma"].shape == grads["lambda_"].shape == shape and grads["gamma"].dtype == jnp.float32
        assert np.isfinite(np.asarray(grads["gamma"])).all() and np.abs(np.asarray(grads["gamma"])).sum() > 0
        fn, args = param_forms.make_call("gae", form, 8, 16, "time_major", "fwd+bwd", None, "bfloat16")
        assert "gamma" not in jax.eval_shape(fn, *args)[1]  # held constant without param_grads
    outs = []

    def on_launch(kernel, grid, args, out_shapes, num_warps, constexprs):
        outs.append((kernel.fn.__name__, tuple(str(o.dtype) for o in out_shapes)))

    with triton_variants.recording(on_launch):
        fn, args = param_forms.make_call("gae", "scalar", 8, 16, "time_major", "fwd+bwd", "triton", "bfloat16", True)
        jax.eval_shape(fn, *args)
    advantages = [o[0] for name, o in outs if name == "gae_kernel"]  # its first output
    assert "bfloat16" in advantages and "float32" in advantages, outs
