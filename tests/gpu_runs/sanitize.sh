#!/usr/bin/env bash
# The memory-safety sweep of the Triton kernels on the lent H200 (issue #6, item 5).
# Usage, from the repository root on the GPU machine: bash tests/gpu_runs/sanitize.sh OUTDIR
#
# sanitize_driver.py runs every kernel variant that triton_variants.record() finds (forward and
# gradient, checked against the reference). Phase 1, all at once: the driver without a sanitizer
# ("plain", in shards; it also fills the PTX and reference caches the later runs share) and the
# canary, one planted out-of-bounds read under memcheck, with and without the kernel-name filter:
# the filter is kept only if memcheck reports the canary through it. Phase 2: the driver under
# compute-sanitizer, one tool after another (many sanitizer processes at once crash), each tool
# in JOBS shards at once. A shard whose sanitizer crashes (exit status 139 or 134) runs again in
# a fresh process; if that crashes too, the call in flight is set apart and the other calls run
# again, until each crash is pinned to one call run alone (sanitize_summary.py --next-attempt
# plans these). Every process has a time limit; the summary reports a run cut off by it, a crashed
# process, and the calls and variants no complete process checked as incomplete, never as clean.
# Writes OUTDIR/{plain,canary,<tool>}.log, OUTDIR/memory.log (host and GPU memory every 5 s) and
# OUTDIR/sanitize_summary.json, and prints a table.
# Wall time: at most TOTAL_TIMEOUT and a few seconds (8 minutes with the defaults).
#
# Environment: TOOLS (default "memcheck racecheck synccheck"; initcheck works too), JOBS (shards
# per tool, default 6), PLAIN_JOBS (default nproc - 2), TOTAL_TIMEOUT (the whole sweep, default
# 480 s; what phase 1 leaves is shared between the tools, a tool that finishes early leaving its
# time to the next), PLAIN_TIMEOUT (default 100 s), CONCURRENT_TOOLS=1 (all tools at once, as
# before), MIN_ATTEMPT_S (no process starts with less time left, default 20 s), FILTER=0 (check
# every kernel, not only the Triton ones), DRIVER_ARGS (more sanitize_driver.py options, e.g.
# --quick). XLA_FLAGS gains --xla_gpu_enable_command_buffer= (kernels launched one by one, not
# as CUDA graphs) unless it sets that flag already.
set -u
out=${1:?usage: sanitize.sh OUTDIR}
mkdir -p "$out"
start=$SECONDS
source tests/gpu_runs/wheels.sh
# One cudaMalloc per buffer (no pool), so that memcheck sees every buffer's bounds; line numbers
# of the kernels' Python source in the reports (ptxas flags, read by jaxlib's Triton launcher).
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform
export JAX_TRITON_PTXAS_EXTRA_FLAGS=${JAX_TRITON_PTXAS_EXTRA_FLAGS---generate-line-info}
if [[ "${XLA_FLAGS:-}" != *xla_gpu_enable_command_buffer* ]]; then
  export XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_gpu_enable_command_buffer="
fi
tools=${TOOLS:-memcheck racecheck synccheck}
ntools=$(wc -w <<<"$tools")
cores=$(nproc)
jobs=${JOBS:-6}
plain_jobs=${PLAIN_JOBS:-$((cores > 3 ? cores - 2 : 1))}
total=${TOTAL_TIMEOUT:-480}
plain_limit=${PLAIN_TIMEOUT:-100}
min_attempt=${MIN_ATTEMPT_S:-20}
concurrent=${CONCURRENT_TOOLS:-0}
# Every process ends by this time (timeout's grace period and the summary come after it).
end=$((start + total - 15))
((plain_limit > end - SECONDS)) && plain_limit=$((end - SECONDS))
nvidia-smi -L || true

find_sanitizer() {
  local c d
  c=$(command -v compute-sanitizer) && { echo "$c"; return 0; }
  for c in /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda*/bin/compute-sanitizer \
    /usr/local/cuda*/compute-sanitizer/compute-sanitizer /opt/nvidia/*/compute-sanitizer/compute-sanitizer; do
    [ -x "$c" ] && { echo "$c"; return 0; }
  done
  # pip packages (nvidia-cuda-sanitizer-api*, cuda-toolkit) unpack it under site-packages/nvidia/.
  for d in $(python3 -c 'import site; print(*site.getsitepackages(), site.getusersitepackages())') /tmp/site; do
    [ -d "$d/nvidia" ] || continue
    c=$(find "$d/nvidia" -maxdepth 4 -name compute-sanitizer -type f -perm -u+x 2>/dev/null | head -n 1)
    [ -n "$c" ] && { echo "$c"; return 0; }
  done
  c=$(find /usr/local /opt -maxdepth 5 -name compute-sanitizer -type f -perm -u+x 2>/dev/null | head -n 1)
  [ -n "$c" ] && { echo "$c"; return 0; }
  return 1
}
cs=$(find_sanitizer) || cs=
cs_version=
filter=()
if [ -n "$cs" ]; then
  cs_version=$("$cs" --version 2>&1 | tail -n 1)
  echo "compute-sanitizer: $cs ($cs_version)"
  # Check only the Triton kernels (all named *_kernel) where the tool has a kernel-name filter.
  help=$("$cs" --help 2>&1)
  # Syntax: --kernel-name kns=SUBSTRING (older releases: --kernel-regex kns=...); the canary below
  # proves that it reaches jax-triton's kernels, or the filter is dropped.
  if [ "${FILTER:-1}" != 0 ] && grep -qE -- "--kernel-name([^-]|$)" <<<"$help"; then
    filter=(--kernel-name kns=_kernel)
  elif [ "${FILTER:-1}" != 0 ] && grep -qE -- "--kernel-regex([^-]|$)" <<<"$help"; then
    filter=(--kernel-regex kns=_kernel)
  fi
else
  echo "compute-sanitizer: NOT FOUND (PATH, /usr/local/cuda*, /opt/nvidia, site-packages/nvidia): plain run only"
fi
order=$([ "$concurrent" = 1 ] && echo "all at once" || echo "one after another")
echo "tools: $tools ($order); shards: $jobs per tool, $plain_jobs plain; budget: ${total} s in all," \
  "${plain_limit} s plain; XLA_FLAGS=$XLA_FLAGS"

work=$(mktemp -d /tmp/sanitize.XXXXXX)
# DRIVER_ARGS: more driver options (--quick: a smoke run of a few calls per op).
read -r -a extra <<<"${DRIVER_ARGS:-}"
driver=(python3 tests/gpu_runs/sanitize_driver.py --ptx-cache "$work/ptx" --ref-cache "$work/ref" --exit-zero
  ${extra[@]+"${extra[@]}"})

# Host and GPU memory while the sweep runs: whether the crashes come with memory running out.
(
  while :; do
    gpu=$(nvidia-smi --query-gpu=memory.used,memory.total --format=csv,noheader 2>/dev/null | head -n 1)
    host=$(free -m 2>/dev/null | awk '/^Mem:/ {print $3 " MiB used, " $7 " MiB available"}')
    echo "$((SECONDS - start)) s: host ${host:-?}; GPU ${gpu:-?}"
    sleep 5
  done
) >"$out/memory.log" 2>&1 &
sampler=$!

# attempt NAME I N A LIMIT COMMAND...: runs COMMAND with a time limit, its output between the
# header and end lines that sanitize_summary.py reads, appended to $work/NAME.I.log.
attempt() {
  local name=$1 i=$2 n=$3 a=$4 limit=$5 t0=$SECONDS rc tag=
  shift 5
  ((a > 1)) && tag=" attempt $a"
  {
    echo "##### shard $i/$n of $name$tag: $*"
    timeout -k 10 "$limit" "$@"
    rc=$?
    echo "##### end shard $i/$n of $name$tag: rc=$rc wall_s=$((SECONDS - t0))"
  } >>"$work/$name.$i.log" 2>&1
}

# shard_of_tool TOOL I N DEADLINE: shard I/N under TOOL, in as many processes as its crashes
# need and DEADLINE allows.
shard_of_tool() {
  local tool=$1 i=$2 n=$3 deadline=$4 a=1 left next args
  args=(--shard "$i/$n")
  while :; do
    left=$((deadline - SECONDS))
    if ((left < min_attempt)); then
      echo "##### no time for attempt $a of shard $i/$n of $tool ($left s left)" >>"$work/$tool.$i.log"
      echo "$tool shard $i/$n: no time left for attempt $a"
      return
    fi
    ((a > 1)) && echo "$tool shard $i/$n: attempt $a from $((SECONDS - start)) s: ${args[*]}"
    attempt "$tool" "$i" "$n" "$a" "$left" "$cs" --tool "$tool" ${filter[@]+"${filter[@]}"} \
      ${quiet[@]+"${quiet[@]}"} --error-exitcode 86 "${driver[@]}" "${args[@]}"
    next=$(python3 tests/gpu_runs/sanitize_summary.py --next-attempt "$work/$tool.$i.log") || return
    read -r -a args <<<"$next"
    a=$((a + 1))
  done
}
gather() {
  local name=$1 n=$2 i
  for ((i = 0; i < n; i++)); do cat "$work/$name.$i.log" 2>/dev/null; done >"$out/$name.log"
}

# Phase 1: the plain run and the canaries.
pids=()
for ((i = 0; i < plain_jobs; i++)); do
  attempt plain "$i" "$plain_jobs" 1 "$plain_limit" "${driver[@]}" --shard "$i/$plain_jobs" &
  pids+=($!)
done
# Failed CUDA API calls are not reported: JAX and the CUDA libraries probe the driver with calls
# that may fail (cuGetProcAddress and the like); a kernel's bad access still is, and a call that
# fails for real fails the driver's call too.
quiet=(--report-api-errors no)
# canary I OPTIONS...: the canary under memcheck, run again once (in phase 1's time) if the
# sanitizer crashes.
plain_end=$((SECONDS + plain_limit))
canary() {
  local i=$1 a rc
  shift
  for a in 1 2; do
    ((plain_end - SECONDS < min_attempt)) && return
    attempt canary "$i" 2 "$a" $((plain_end - SECONDS)) "$cs" "$@" "${quiet[@]}" --tool memcheck \
      --error-exitcode 86 python3 tests/gpu_runs/sanitize_driver.py --canary
    rc=$(tail -n 1 "$work/canary.$i.log" | sed -n 's/.*rc=\([0-9-]*\).*/\1/p')
    [[ "$rc" =~ ^(134|135|139)$ ]] || return
  done
}
if [ -n "$cs" ]; then
  canary 0 ${filter[@]+"${filter[@]}"} &
  pids+=($!)
  canary 1 &
  pids+=($!)
fi
wait "${pids[@]}"
gather plain "$plain_jobs"
echo "phase 1 (plain, canary) done at $((SECONDS - start)) s"
if [ -n "$cs" ]; then
  gather canary 2
  if ! grep -q "Invalid __global__ read" "$work/canary.0.log"; then
    if grep -q "Invalid __global__ read" "$work/canary.1.log"; then
      echo "memcheck did not report the canary through '${filter[*]}': checking every kernel instead"
    else
      echo "memcheck reported the canary neither with nor without the filter: dropping '${quiet[*]}' too"
      quiet=()
    fi
    filter=()
  fi

  # Phase 2: the tools, one after another (CONCURRENT_TOOLS=1: all at once), each in JOBS shards.
  k=0
  pids=()
  for tool in $tools; do
    if [ "$concurrent" = 1 ]; then
      deadline=$end
    else
      deadline=$((SECONDS + (end - SECONDS) / (ntools - k)))
      pids=()
    fi
    echo "$tool: $jobs shards from $((SECONDS - start)) s, until $((deadline - start)) s at the latest"
    for ((i = 0; i < jobs; i++)); do
      shard_of_tool "$tool" "$i" "$jobs" "$deadline" &
      pids+=($!)
    done
    if [ "$concurrent" != 1 ]; then
      wait "${pids[@]}"
      gather "$tool" "$jobs"
      echo "$tool done at $((SECONDS - start)) s"
    fi
    k=$((k + 1))
  done
  if [ "$concurrent" = 1 ]; then
    wait "${pids[@]}"
    for tool in $tools; do gather "$tool" "$jobs"; done
  fi
  echo "phase 2 ($tools) done at $((SECONDS - start)) s"
else
  tools=
fi
kill "$sampler" 2>/dev/null
rm -rf "$work"
python3 tests/gpu_runs/sanitize_summary.py "$out" --tools="$tools" --jobs="$jobs" --sanitizer="$cs" \
  --sanitizer-version="$cs_version" --kernel-filter="${filter[*]}" --options="${quiet[*]}" --budget="$total"
status=$?
echo "total wall time: $((SECONDS - start)) s"
exit $status
