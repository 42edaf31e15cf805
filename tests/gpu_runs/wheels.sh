# Sourced by the GPU scripts, from the repository root: installs the wheels carried in .whl/
# (jax-triton, and what the run needs besides) into /tmp/site and puts them and the checkout on
# PYTHONPATH; exits the calling script if the install fails.
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
