"""@triton.jit code only: one module per estimator, shared helpers in `common`."""
