"""The public surface: names, signatures, docstrings and their examples."""

from __future__ import annotations

import doctest
import inspect
import subprocess
import sys

import pytest

import rlscan_jax

PUBLIC = {
    "GAEOutput",
    "VTraceOutput",
    "discounted_returns",
    "eligibility_traces",
    "episodic_cumsum",
    "gae",
    "lambda_returns",
    "linear_scan",
    "retrace",
    "vtrace",
}
FUNCTIONS = sorted(n for n in PUBLIC if n[0].islower())

P = inspect.Parameter
POS = P.POSITIONAL_OR_KEYWORD
KW = P.KEYWORD_ONLY
REQUIRED = P.empty
COMMON = [("time_axis", KW, 0), ("implementation", KW, None)]
EPISODE_FLAGS = [("terminated", KW, None), ("truncated", KW, None)]

# DESIGN.md §2: names, kinds and defaults of every argument.
SIGNATURES = {
    "gae": [
        ("rewards", POS, REQUIRED),
        ("values", POS, REQUIRED),
        *EPISODE_FLAGS,
        ("next_values", KW, None),
        ("bootstrap_value", KW, None),
        ("gamma", KW, 0.99),
        ("lambda_", KW, 0.95),
        *COMMON,
    ],
    "vtrace": [
        ("rewards", POS, REQUIRED),
        ("values", POS, REQUIRED),
        ("log_rhos", POS, REQUIRED),
        *EPISODE_FLAGS,
        ("next_values", KW, None),
        ("bootstrap_value", KW, None),
        ("gamma", KW, 0.99),
        ("lambda_", KW, 1.0),
        ("rho_clip", KW, 1.0),
        ("c_clip", KW, 1.0),
        ("pg_rho_clip", KW, 1.0),
        *COMMON,
    ],
    "retrace": [
        ("rewards", POS, REQUIRED),
        ("q_values", POS, REQUIRED),
        ("next_values", POS, REQUIRED),
        ("log_rhos", POS, REQUIRED),
        *EPISODE_FLAGS,
        ("gamma", KW, 0.99),
        ("lambda_", KW, 1.0),
        ("c_clip", KW, 1.0),
        *COMMON,
    ],
    "lambda_returns": [
        ("rewards", POS, REQUIRED),
        ("values", POS, None),
        *EPISODE_FLAGS,
        ("next_values", KW, None),
        ("bootstrap_value", KW, None),
        ("gamma", KW, 0.99),
        ("lambda_", KW, 0.95),
        *COMMON,
    ],
    "discounted_returns": [
        ("rewards", POS, REQUIRED),
        *EPISODE_FLAGS,
        ("next_values", KW, None),
        ("bootstrap_value", KW, None),
        ("gamma", KW, 0.99),
        *COMMON,
    ],
    "eligibility_traces": [
        ("inputs", POS, REQUIRED),
        ("done", POS, None),
        ("gamma", KW, REQUIRED),
        ("lambda_", KW, REQUIRED),
        ("initial", KW, None),
        *COMMON,
    ],
    "episodic_cumsum": [
        ("inputs", POS, REQUIRED),
        ("done", POS, None),
        ("initial", KW, None),
        ("reverse", KW, False),
        *COMMON,
    ],
    "linear_scan": [
        ("a", POS, REQUIRED),
        ("b", POS, REQUIRED),
        ("initial", KW, None),
        ("reverse", KW, False),
        *COMMON,
    ],
}


def test_all_is_exactly_the_public_names():
    assert set(rlscan_jax.__all__) == PUBLIC
    assert len(rlscan_jax.__all__) == len(PUBLIC)
    for name in rlscan_jax.__all__:
        assert getattr(rlscan_jax, name) is not None


def test_no_other_public_attributes():
    """Everything public is in __all__ (modules, dunders and the private _src aside)."""
    extra = {
        n
        for n, obj in vars(rlscan_jax).items()
        if not n.startswith("_") and not inspect.ismodule(obj) and n not in rlscan_jax.__all__
    }
    assert extra == set()


@pytest.mark.parametrize("name", FUNCTIONS)
def test_docstring_has_args_and_returns(name):
    doc = inspect.getdoc(getattr(rlscan_jax, name))
    assert doc, name
    assert "Args:" in doc and "Returns:" in doc, name
    # every argument is documented
    for param in inspect.signature(getattr(rlscan_jax, name)).parameters:
        assert f"{param}:" in doc, (name, param)


@pytest.mark.parametrize("name", ["GAEOutput", "VTraceOutput"])
def test_output_types_are_documented_named_tuples(name):
    cls = getattr(rlscan_jax, name)
    assert issubclass(cls, tuple) and hasattr(cls, "_fields")
    assert inspect.getdoc(cls)
    fields = {"GAEOutput": ("advantages", "returns"), "VTraceOutput": ("vs", "pg_advantages")}[name]
    assert cls._fields == fields


@pytest.mark.parametrize("name", FUNCTIONS)
def test_signature_matches_design(name):
    params = list(inspect.signature(getattr(rlscan_jax, name)).parameters.values())
    got = [(p.name, p.kind, p.default) for p in params]
    assert got == SIGNATURES[name]


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_docstring_examples_run(name):
    obj = getattr(rlscan_jax, name)
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = finder.find(obj, name, globs={})
    for t in tests:
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.failed == 0
    if name in FUNCTIONS:
        assert result.attempted > 0, f"{name} has no runnable example"


def test_module_docstring_examples_run():
    """`doctest.run_docstring_examples` over every public function reports no failure."""
    import io

    for name in FUNCTIONS:
        buf = io.StringIO()
        stdout = sys.stdout
        sys.stdout = buf
        try:
            doctest.run_docstring_examples(getattr(rlscan_jax, name), {}, name=name)
        finally:
            sys.stdout = stdout
        assert "Failed example" not in buf.getvalue(), buf.getvalue()


def test_import_does_not_import_triton():
    """`import rlscan_jax` works on a CPU machine: triton and jax_triton are imported lazily."""
    code = (
        "import sys, rlscan_jax; print(sorted(m for m in sys.modules if m.split('.')[0] in ('triton', 'jax_triton')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout
