"""Pure-JAX reference recurrences: one module per estimator, each with the same two functions.

    coefficients(x, p, *, axis, reverse) -> (a, b, reset)   the recurrence, built elementwise
    finalize(h, x, p, *, axis, reverse) -> outputs         the outputs from the scan state h

`x` holds the per-step inputs (None where absent), `p` the parameters (gamma, lambda_, clips).
The Triton path uses the same two functions for its backward pass.
"""
