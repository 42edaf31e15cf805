"""Benchmarks for rlscan_jax: shape specs shared with the tests, the harness and the report.

    python -m benchmarks.run --out benchmarks/results/h200.json     # the suite (GPU)
    python -m benchmarks.run --quick                                  # the CI subset (CPU, < 60 s)
    python -m benchmarks.report benchmarks/results/h200.json --targets

See benchmarks/README.md for the fields, the bytes_min formula and the measurement method.
"""
