#!/usr/bin/env bash
# The memory-safety sweep of the Triton kernels on the lent H200 (issue #6, item 5).
# Usage, from the repository root on the GPU machine: bash tests/gpu_runs/sanitize.sh OUTDIR
#
# sanitize_driver.py runs every kernel variant that triton_variants.record() finds (forward and
# gradient, checked against the reference). Phase 1, all at once: the driver without a sanitizer
# ("plain", in shards; it also fills the PTX and reference caches the later runs share) and the
# canary, one planted out-of-bounds read under memcheck, with and without the kernel-name filter:
# the filter is kept only if memcheck reports the canary through it. Phase 2, all at once: the
# driver under compute-sanitizer, each tool in JOBS shards. Every process has a time limit; the
# summary reports a run cut off by it as incomplete, never as clean.
# Writes OUTDIR/{plain,canary,<tool>}.log and OUTDIR/sanitize_summary.json, and prints a table.
# Wall time: at most PLAIN_TIMEOUT + TOOL_TIMEOUT + about 30 s (the limits below: under 5 minutes).
#
# Environment: TOOLS (default "memcheck racecheck synccheck"; initcheck works too), JOBS (shards
# per tool, default nproc / (tools + 1)), PLAIN_JOBS (default nproc - 2), PLAIN_TIMEOUT (default
# 100 s), TOOL_TIMEOUT (default 170 s), FILTER=0 (check every kernel, not only the Triton ones),
# DRIVER_ARGS (more sanitize_driver.py options, e.g. --quick).
set -u
out=${1:?usage: sanitize.sh OUTDIR}
mkdir -p "$out"
start=$SECONDS
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
# One cudaMalloc per buffer (no pool), so that memcheck sees every buffer's bounds; line numbers
# of the kernels' Python source in the reports (ptxas flags, read by jaxlib's Triton launcher).
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform
export JAX_TRITON_PTXAS_EXTRA_FLAGS=${JAX_TRITON_PTXAS_EXTRA_FLAGS---generate-line-info}
tools=${TOOLS:-memcheck racecheck synccheck}
ntools=$(wc -w <<<"$tools")
cores=$(nproc)
jobs=${JOBS:-$((cores / (ntools + 1) > 0 ? cores / (ntools + 1) : 1))}
plain_jobs=${PLAIN_JOBS:-$((cores > 3 ? cores - 2 : 1))}
plain_limit=${PLAIN_TIMEOUT:-100}
tool_limit=${TOOL_TIMEOUT:-170}
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
echo "tools: $tools; shards: $jobs per tool, $plain_jobs plain; limits: ${plain_limit} s plain, ${tool_limit} s per tool"

work=$(mktemp -d /tmp/sanitize.XXXXXX)
# DRIVER_ARGS: more driver options (--quick: a smoke run of a few calls per op).
read -r -a extra <<<"${DRIVER_ARGS:-}"
driver=(python3 tests/gpu_runs/sanitize_driver.py --ptx-cache "$work/ptx" --ref-cache "$work/ref" --exit-zero
  ${extra[@]+"${extra[@]}"})

# shard NAME I N LIMIT COMMAND...: runs COMMAND with a time limit, its output between the
# header and end lines that sanitize_summary.py reads, into $work/NAME.I.log.
shard() {
  local name=$1 i=$2 n=$3 limit=$4 t0=$SECONDS rc
  shift 4
  {
    echo "##### shard $i/$n of $name: $*"
    timeout -k 10 "$limit" "$@"
    rc=$?
    echo "##### end shard $i/$n of $name: rc=$rc wall_s=$((SECONDS - t0))"
  } >"$work/$name.$i.log" 2>&1
}
gather() {
  local name=$1 n=$2 i
  for ((i = 0; i < n; i++)); do cat "$work/$name.$i.log"; done >"$out/$name.log"
}

# Phase 1: the plain run and the canaries.
for ((i = 0; i < plain_jobs; i++)); do
  shard plain "$i" "$plain_jobs" "$plain_limit" "${driver[@]}" --shard "$i/$plain_jobs" &
done
# Failed CUDA API calls are not reported: JAX and the CUDA libraries probe the driver with calls
# that may fail (cuGetProcAddress and the like); a kernel's bad access still is, and a call that
# fails for real fails the driver's call too.
quiet=(--report-api-errors no)
if [ -n "$cs" ]; then
  canary=(--tool memcheck --error-exitcode 86 python3 tests/gpu_runs/sanitize_driver.py --canary)
  shard canary 0 2 "$plain_limit" "$cs" ${filter[@]+"${filter[@]}"} "${quiet[@]}" "${canary[@]}" &
  shard canary 1 2 "$plain_limit" "$cs" "${quiet[@]}" "${canary[@]}" &
fi
wait
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

  # Phase 2: every tool, in shards, at once.
  for tool in $tools; do
    for ((i = 0; i < jobs; i++)); do
      shard "$tool" "$i" "$jobs" "$tool_limit" "$cs" --tool "$tool" ${filter[@]+"${filter[@]}"} \
        ${quiet[@]+"${quiet[@]}"} --error-exitcode 86 "${driver[@]}" --shard "$i/$jobs" &
    done
  done
  wait
  for tool in $tools; do gather "$tool" "$jobs"; done
  echo "phase 2 ($tools) done at $((SECONDS - start)) s"
else
  tools=
fi
rm -rf "$work"
python3 tests/gpu_runs/sanitize_summary.py "$out" --tools="$tools" --jobs="$jobs" --sanitizer="$cs" \
  --sanitizer-version="$cs_version" --kernel-filter="${filter[*]}" --options="${quiet[*]}"
status=$?
echo "total wall time: $((SECONDS - start)) s"
exit $status
