"""benchmarks.run with every 16-warp launch compiled under a register cap (run 23e's experiment).

Usage, from the repository root on the GPU machine (after `source tests/gpu_runs/wheels.sh`, which
puts the checkout on PYTHONPATH): MAXNREG=64 python3 tests/gpu_runs/bench_maxnreg.py
[benchmarks.run arguments]. Without MAXNREG it is benchmarks.run. It patches triton's CUDA options
(maxnreg) for every launch of 16 warps, whatever the kernel, adjoints included: the experiment
behind V-trace's cap (first launch.VTRACE_WHOLE_ROW_REGISTERS, now launch.ROW_REGISTERS), which
caps the launches it names through custom_call instead; `--launch ROW_REGISTERS=...` tries others.
"""

import os
import sys

from triton.backends.nvidia import compiler as nv

_parse = nv.CUDABackend.parse_options


def _parse_options(self, opts):
    if opts.get("num_warps") == 16 and os.environ.get("MAXNREG"):
        opts = {**opts, "maxnreg": int(os.environ["MAXNREG"])}
        print("maxnreg injected:", opts, file=sys.stderr)
    return _parse(self, opts)


nv.CUDABackend.parse_options = _parse_options

if __name__ == "__main__":
    from benchmarks import run

    sys.exit(run.main(sys.argv[1:]))
