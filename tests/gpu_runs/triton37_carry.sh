#!/usr/bin/env bash
# Prepares triton 3.7.0 (or TRITON_VERSION, e.g. 3.9.0) + jax-triton 0.4.1 for the GPU machine,
# whose image has triton 3.6.0 and which can take at most 64 MiB of carried files per call (the
# triton 3.7.0 wheel is 192 MiB).
# The wheel is unpacked, stripped of what the CUDA sm_90 path does not load (the AMD backend,
# CUPTI and proton for profiling, test instrumentation, libtriton.so's debug information),
# re-packed with xz and split into two git-ignored folders .t37a and .t37b of at most 30 MiB each:
# a call carries the checkout too (18 MiB on 2026-12-04), and 64 MiB in all. TRITON_VERSION=3.9.0,
# seen 2026-12-04: 31 and 32 MiB.
# Triton 3.9 writes PTX for its own ptxas (CUDA 13.4: PTX 9.4), which the machine's CUDA 13.0
# ptxas, the one jaxlib assembles with, refuses; export
# TRITON_PTXAS_BLACKWELL_PATH=/usr/local/cuda-13.0/bin/ptxas (the binary 3.9 compiles sm_90 with)
# so that it writes PTX 9.0. triton_ab.sh times benchmark rows under both tritons.
#
# On the GPU machine, two calls in a row (the second while the machine is still warm). A carried
# folder that the next call does not name is removed there, so the first call copies its part
# out of the checkout:
#   call 1: carry [".t37a"], command: cp .t37a/part-00 /tmp/t37-part-00
#   call 2: carry [".t37b"], command:
#     mkdir -p /tmp/site37 && cat /tmp/t37-part-00 .t37b/part-* | xz -d | tar x -C /tmp/site37 &&
#     python3 -m pip install -q --no-index --no-deps --target /tmp/site37 .t37b/*.whl &&
#     export PYTHONPATH=/tmp/site37:$PWD && python3 -c "import triton, jax_triton; print(triton.__version__)" &&
#     python3 -m pytest -q -n 16 -m "gpu or not (triton_interpret or slow)" -k "gpu or triton" tests ...
#     (the selection of run.sh; run.sh itself would put jax-triton 0.3.1 from .whl first)
# Seen on 2026-11-29 (nvidia-h200-x2): 1882 of 1883 passed, the one failure a launch count that
# did not know 0.4's custom-call name (fixed, re-run passed).
set -euo pipefail
cd "$(dirname "$0")/../.."
version=${TRITON_VERSION:-3.7.0}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 -d "$work" "triton==$version" jax-triton==0.4.1
mkdir "$work/x"
(cd "$work/x" && python3 -m zipfile -e "$work"/triton-"$version"-*.whl .)
# Both ptxas binaries stay: triton 3.9 compiles for sm_90 with ptxas-blackwell (a CUDA 13 ptxas).
rm -rf "$work/x/triton/backends/amd" \
  "$work"/x/triton/backends/nvidia/lib/cupti* "$work/x/triton/_C/libproton.so" "$work/x/triton/instrumentation"
# libtriton.so ships with its debug information (3.9.0: 500 MB, 192 MB without).
strip --strip-unneeded "$work/x/triton/_C/libtriton.so"
chmod +x "$work"/x/triton/backends/nvidia/bin/*
# triton discovers its backends through entry points: without the AMD one, drop its entry.
sed -i '/amd/d' "$work"/x/triton-"$version".dist-info/entry_points.txt
rm -rf .t37a .t37b && mkdir .t37a .t37b
tar cf - -C "$work/x" . | xz -T0 -9 | split -b 30M -d - "$work/part-"
mv "$work/part-00" .t37a/ && mv "$work"/part-0[1-9] .t37b/
mv "$work"/jax_triton-0.4.1-*.whl .t37b/
grep -qx '/.t37a/' .git/info/exclude || printf '/.t37a/\n/.t37b/\n' >>.git/info/exclude
du -sh .t37a .t37b
