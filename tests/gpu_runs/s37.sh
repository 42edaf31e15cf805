#!/usr/bin/env bash
# Prepared in the thirty-seventh session (no device lent), for the next session with a GPU
# (tests/gpu_runs/README.md, "Left for the next session"). Argument:
#   first (any GPU): on an H200 the two timings below in one call; elsewhere `memcheck`;
#   traces, memcheck: as in s36.sh (eligibility traces' fused backward with one γ or λ a time
#          step: its H200 timing; memcheck and the plain driver on the 13 calls that launch it);
#   retrace_row (an H200): Retrace with γ and λ one a row against one value, time-major 4096x1024,
#          fwd and fwd+bwd, twice in one process order (scalar, row, scalar, row). The H200's one
#          measurement (run 28's param_forms, 57.8 against 46.6 µs forward, 1.24x; fwd+bwd 1.11x)
#          holds the only one-a-row cases above 1.09x; sm_90 PTX of its launches differs little (PHASE 1 524 against
#          495 instructions, PHASE 2 496 against 494), so first learn whether it repeats.
what=${1:?usage: s37.sh first|traces|memcheck|retrace_row}
if [[ $what == first ]]; then
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader)" in *H200*) what=h200;; *) what=memcheck;; esac
fi
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
retrace_row() {
  source tests/gpu_runs/wheels.sh
  for i in 1 2; do
    timeout 120 python3 -m benchmarks.param_forms --shapes 4096x1024 --ops retrace --layouts time_major \
      --forms scalar,row --out "$OUT/pf_retrace_row_$i.json" 2>&1 | grep -E "µs|wrote|rror"
  done
}
case "$what" in
  h200) bash tests/gpu_runs/s36.sh traces; retrace_row;;
  traces|memcheck) bash tests/gpu_runs/s36.sh "$what";;
  retrace_row) retrace_row;;
esac
date -u
