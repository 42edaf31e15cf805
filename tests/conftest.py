"""Shared fixtures: the implementations every op is tested with, and float64 mode.

A test that takes the `implementation` fixture runs once per entry of IMPLEMENTATIONS, with the
implementation last in its id (`gae-T63-B3x4-ax-1-g0.9-l0.95-nv-associative`). Adding an
implementation to the list (say "triton" where it can run) covers it everywhere.
"""

from __future__ import annotations

import contextlib

import jax
import pytest

from rlscan_jax._src import dispatch

IMPLEMENTATIONS = ["associative", "sequential"]

# On a CUDA GPU with jax-triton (not the interpreter, which has its own small suite), the whole
# grid also runs the Triton kernels.
if not dispatch.interpret_mode() and dispatch.triton_unavailable_reason() is None:
    IMPLEMENTATIONS.append("triton")


def _parametrized_directly(metafunc, name: str) -> bool:
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0]
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if name in names:
            return True
    return False


@pytest.hookimpl(trylast=True)
def pytest_generate_tests(metafunc):
    # Parametrised here rather than with fixture params so the implementation ends the test id.
    if "implementation" in metafunc.fixturenames and not _parametrized_directly(metafunc, "implementation"):
        metafunc.parametrize("implementation", IMPLEMENTATIONS, indirect=True)


@pytest.fixture
def implementation(request) -> str:
    """One of IMPLEMENTATIONS."""
    return request.param


@contextlib.contextmanager
def enable_x64():
    """jax_enable_x64 for the duration of the block."""
    ctx = jax.enable_x64(True) if hasattr(jax, "enable_x64") else jax.experimental.enable_x64()
    with ctx:
        yield


@pytest.fixture
def x64():
    """Runs the test with jax_enable_x64."""
    with enable_x64():
        yield
