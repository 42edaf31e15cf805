# Sourced by the GPU scripts, from the repository root: installs the wheels carried in .whl/
# (jax-triton, and what the run needs besides) into /tmp/site and puts them and the checkout on
# PYTHONPATH; exits the calling script if the install fails. WITH_RLAX=1 also installs
# .whl/rlax/ (rlax and its dependencies, for the benchmark's rlax baseline; the GPU machine
# cannot reach PyPI), fetched beforehand on a machine that can, for the GPU's Python (3.12):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 \
#     --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d .whl/rlax \
#     rlax==0.1.9 distrax==0.1.9 tfp-nightly dm-env==1.6 dm-tree absl-py decorator cloudpickle \
#     gast six wrapt attrs
wheels=()
compgen -G ".whl/*.whl" >/dev/null && wheels+=(.whl/*.whl)
if [ "${WITH_RLAX:-0}" = 1 ]; then
  compgen -G ".whl/rlax/*.whl" >/dev/null || { echo "WITH_RLAX=1: no wheels in .whl/rlax/"; exit 1; }
  wheels+=(.whl/rlax/*.whl)
fi
if ((${#wheels[@]})); then
  # One install at a time: scripts started side by side (run.sh and sanitize.sh) otherwise race on
  # /tmp/site (pip's --upgrade removes what the other is installing; seen 2026-12-01).
  lock=()
  command -v flock >/dev/null && lock=(flock /tmp/site.lock)
  ${lock[@]+"${lock[@]}"} python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site "${wheels[@]}" || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
