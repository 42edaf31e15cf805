"""Device time from the JAX profiler's trace.

The calls to measure run inside one `jax.profiler.trace(dir, create_perfetto_trace=True)`
session, each inside a host annotation `rlscan_bench/<job>#<window>` and separated by an idle
gap. After the session, `perfetto_trace.json.gz` is read back: its complete events
(`ph == "X"`) on the device's compute-stream threads are the kernels (and memcpy / memset
operations) that ran, and each is attributed to the annotation window it falls in. A window's
device time is the sum of the durations of its events; a call that launches several kernels
counts them all.

In the trace, a device is a process named "/device:GPU:<i>" (the host is "/host:CPU"). Its
threads are the CUDA streams ("Stream #<id>(...)") plus lines the profiler derives from them
("XLA Ops", "XLA Modules", ...), which repeat the same time and are left out.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import glob
import gzip
import json
import os
import re
import tempfile
import time
from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp

PREFIX = "rlscan_bench/"
_DERIVED_LINES = re.compile(r"^(xla|framework|tensorflow|steps|source|launch|sparsecore|host offload)", re.IGNORECASE)
_GPU_PROCESS = re.compile(r"^/device:(?!CPU)")


@dataclasses.dataclass
class Job:
    """Calls to profile: `fn()` runs once per window, and its result is waited for.

    Attributes:
      name: unique in the session.
      fn: runs the work and returns arrays to block on.
      windows: how many annotated calls of `fn` to make.
    """

    name: str
    fn: Callable[[], object]
    windows: int = 1


@dataclasses.dataclass
class Session:
    """What one profiler session saw: per job, the device events of each of its windows."""

    windows: dict[str, list[list[tuple[float, float, str]]]]
    device_events: int
    unattributed: int
    has_device: bool
    trace_file: str | None


def _profile_options():
    opts = jax.profiler.ProfileOptions()
    opts.python_tracer_level = 0  # no Python call events: they swamp the trace
    opts.host_tracer_level = 1  # user annotations and top-level runtime events only
    opts.enable_hlo_proto = False
    return opts


FLUSH_JOB = "_flush"


def cache_flush(nbytes: int) -> Callable[[], jax.Array]:
    """A compiled pass that reads and writes `nbytes` of device memory, for `run`'s before_window:
    at several times the L2 cache's size it leaves none of the previous call's data there."""
    x = jnp.zeros((max(1, nbytes // 4),), jnp.float32)
    f = jax.jit(lambda x: x + 1.0).lower(x).compile()  # compiled now: jax.clear_caches() keeps it
    jax.block_until_ready(f(x))
    return lambda: f(x)


def run(
    jobs: Sequence[Job],
    *,
    log_dir: str | None = None,
    gap_s: float = 2e-3,
    before_window: Callable[[], object] | None = None,
) -> Session:
    """Runs every job's windows inside one profiler session and attributes device events.

    Args:
      jobs: the calls; each job's `fn` must already be compiled and warmed up.
      log_dir: where the trace goes (a fresh temporary directory, removed after, by default).
      gap_s: idle time before each window, so windows never touch on the device timeline.
      before_window: run (and waited for) before each window, in a window of its own named
        FLUSH_JOB, e.g. a pass over a buffer larger than the L2 cache, so that a call's inputs
        come from device memory, not from the cache where the previous call left them.

    Returns:
      a `Session`.
    """
    with contextlib.ExitStack() as stack:
        if log_dir is None:
            log_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="rlscan_trace_"))
        with jax.profiler.trace(log_dir, create_perfetto_trace=True, profiler_options=_profile_options()):
            flushes = 0
            for job in jobs:
                for w in range(job.windows):
                    if before_window is not None:
                        time.sleep(gap_s)
                        with jax.profiler.TraceAnnotation(f"{PREFIX}{FLUSH_JOB}#{flushes}"):
                            jax.block_until_ready(before_window())
                        flushes += 1
                    time.sleep(gap_s)
                    with jax.profiler.TraceAnnotation(f"{PREFIX}{job.name}#{w}"):
                        jax.block_until_ready(job.fn())
            time.sleep(gap_s)
        path = latest_trace(log_dir)
        events = load_events(path)
        session = attribute(events)
        session.trace_file = path
        return session


def time_calls(calls: dict[str, Callable[[], object]], windows: int, flush_bytes: int) -> tuple[dict, bool]:
    """µs of each call in `calls` (compiled and warmed up), `windows` samples each: device time from
    the profiler trace on a GPU, with `flush_bytes` of memory passed over before each window (0:
    none); the wall clock elsewhere, which only keeps a script working without a GPU.

    Returns:
      ({name: [µs, ...]}, whether the times are device times).
    """
    if jax.default_backend() == "gpu":
        flush = cache_flush(flush_bytes) if flush_bytes else None
        session = run([Job(name, fn, windows=windows) for name, fn in calls.items()], before_window=flush)
        return {name: per_call_us(session.windows.get(name, []), 1)[0] for name in calls}, True
    samples = {}
    for name, fn in calls.items():
        times = []
        for _ in range(windows):
            t0 = time.perf_counter()
            jax.block_until_ready(fn())
            times.append((time.perf_counter() - t0) * 1e6)
        samples[name] = times
    return samples, False


def latest_trace(log_dir: str) -> str:
    """The newest perfetto_trace.json.gz under `log_dir`."""
    paths = glob.glob(os.path.join(log_dir, "plugins", "profile", "*", "perfetto_trace.json.gz"))
    if not paths:
        raise FileNotFoundError(f"no perfetto_trace.json.gz under {log_dir}/plugins/profile")
    return max(paths, key=os.path.getmtime)


def load_events(path: str) -> list[dict]:
    with gzip.open(path, "rt") as f:
        data = json.load(f)
    return data["traceEvents"] if isinstance(data, dict) else data


def device_events(events: Sequence[dict]) -> tuple[list[tuple[float, float, str]], bool]:
    """The (start µs, duration µs, name) of every kernel / memcpy on a device stream, by start.

    Returns:
      (events, whether the trace has any device process at all).
    """
    device_pids = set()
    thread_names: dict[tuple, str] = {}
    for e in events:
        if e.get("ph") != "M":
            continue
        name = (e.get("args") or {}).get("name", "")
        if e.get("name") == "process_name" and _GPU_PROCESS.match(name):
            device_pids.add(e["pid"])
        elif e.get("name") == "thread_name":
            thread_names[(e.get("pid"), e.get("tid"))] = name
    streams = {k for k, v in thread_names.items() if k[0] in device_pids and v.lower().startswith("stream")}
    pids_with_streams = {k[0] for k in streams}

    def on_stream(e) -> bool:
        pid, tid = e.get("pid"), e.get("tid")
        if pid not in device_pids:
            return False
        if pid in pids_with_streams:
            return (pid, tid) in streams
        # No stream names (older profilers): keep the low thread ids, which are the streams.
        name = thread_names.get((pid, tid), "")
        return isinstance(tid, int) and tid < 100 and not _DERIVED_LINES.match(name)

    out = [
        (float(e["ts"]), float(e.get("dur", 0.0)), e.get("name", ""))
        for e in events
        if e.get("ph") == "X" and "ts" in e and on_stream(e)
    ]
    out.sort()
    return out, bool(device_pids)


def annotation_windows(events: Sequence[dict]) -> list[tuple[float, float, str]]:
    """The (start µs, end µs, name) of every host annotation this module made, by start."""
    out = [
        (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0.0)), e["name"][len(PREFIX) :])
        for e in events
        if e.get("ph") == "X" and str(e.get("name", "")).startswith(PREFIX)
    ]
    out.sort()
    return out


def attribute(events: Sequence[dict], slack_us: float = 500.0) -> Session:
    """Assigns each device event to the annotation window it overlaps most.

    An event that overlaps no window is given to the nearest window within `slack_us` (the
    device clock is aligned to the host's by the profiler, to within a few µs), else counted
    as unattributed.
    """
    dev, has_device = device_events(events)
    wins = annotation_windows(events)
    starts = [w[0] for w in wins]
    per_window: list[list[tuple[float, float, str]]] = [[] for _ in wins]
    unattributed = 0
    for ev in dev:
        ts, dur, _ = ev
        end = ts + dur
        i = bisect.bisect_right(starts, end) - 1  # the last window starting before the event ends
        best, best_overlap, best_dist = None, 0.0, float("inf")
        for j in (i - 1, i, i + 1):
            if 0 <= j < len(wins):
                s, e, _ = wins[j]
                overlap = min(end, e) - max(ts, s)
                dist = max(s - end, ts - e, 0.0)
                if overlap > best_overlap or (best_overlap <= 0 and overlap <= 0 and dist < best_dist):
                    best, best_overlap, best_dist = j, overlap, dist
        if best is None or (best_overlap <= 0 and best_dist > slack_us):
            unattributed += 1
        else:
            per_window[best].append(ev)
    windows: dict[str, list[list[tuple[float, float, str]]]] = {}
    for (_, _, label), evs in zip(wins, per_window, strict=True):
        job, _, _ = label.rpartition("#")
        windows.setdefault(job, []).append(evs)
    return Session(
        windows=windows, device_events=len(dev), unattributed=unattributed, has_device=has_device, trace_file=None
    )


def per_call_us(windows: Sequence[Sequence[tuple[float, float, str]]], calls_per_window: int) -> tuple[list, float]:
    """Device µs of each call, from windows that each made `calls_per_window` identical calls.

    When a window's event count is a multiple of `calls_per_window`, its events are split in
    order into that many calls of equal event count and each call's durations are summed;
    otherwise the window's total divided by `calls_per_window` stands for every call of it.

    Returns:
      (a list of per-call µs, the mean number of device events per call); ([], 0) if no events.
    """
    samples: list[float] = []
    counts = 0
    for evs in windows:
        n = len(evs)
        if n == 0:
            continue
        counts += n
        if n % calls_per_window == 0:
            m = n // calls_per_window
            samples.extend(sum(d for _, d, _ in evs[i * m : (i + 1) * m]) for i in range(calls_per_window))
        else:
            total = sum(d for _, d, _ in evs)
            samples.extend([total / calls_per_window] * calls_per_window)
    n_windows = sum(1 for evs in windows if evs)
    per_call_events = counts / (n_windows * calls_per_window) if n_windows else 0.0
    return samples, per_call_events
