"""The notebooks run top to bottom: each is executed with nbclient and fails if any cell raises.

Every notebook in notebooks/ is executed from notebooks/ (as Jupyter would), in an IPython
kernel started with this interpreter (not whatever `python` a kernelspec on the machine
names), with RLSCAN_NOTEBOOK_SMOKE=1 so that the PPO notebook trains on a small budget. The
whole file takes well under three minutes on two CPU cores.

The committed notebooks carry their outputs; after changing one, re-execute it in place with
the full budgets:

    python tests/test_notebooks.py                        # every notebook
    python tests/test_notebooks.py notebooks/ppo.ipynb    # one
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import pytest
from ipykernel.kernelspec import write_kernel_spec
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT_S = 300
SMOKE_ENV = "RLSCAN_NOTEBOOK_SMOKE"


def execute(nb: nbformat.NotebookNode, spec_dir: Path) -> nbformat.NotebookNode:
    """Runs every cell of `nb` in place from NOTEBOOK_DIR; raises `CellExecutionError` if a cell raises."""
    spec = spec_dir / "python3"
    if not spec.exists():
        write_kernel_spec(str(spec))  # argv: [sys.executable, "-m", "ipykernel_launcher", ...]
    km = KernelManager(kernel_name="python3", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(spec_dir)]))
    client = NotebookClient(
        nb,
        km=km,
        timeout=CELL_TIMEOUT_S,
        startup_timeout=120,
        allow_errors=False,
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    client.execute()
    return nb


def test_notebooks_exist():
    assert {p.name for p in NOTEBOOKS} >= {"quickstart.ipynb", "ppo.ipynb", "performance.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_committed_with_outputs(path: Path):
    """The committed notebook was executed top to bottom after its last edit, and saved."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    assert code, f"{path.name} has no code cells"
    counts = [c.get("execution_count") for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name}: execution counts {counts} are not 1..{len(code)}; re-execute it "
        "(python tests/test_notebooks.py) and commit the outputs"
    )
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{path.name} was saved with an error output: {errors[0].get('ename')}"
    assert any(o.get("output_type") in ("display_data", "execute_result") for c in code for o in c.outputs), (
        f"{path.name} was saved without any rich output (plots, tables)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_executes(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Every cell runs without raising, in a kernel running this interpreter, on a small budget."""
    monkeypatch.setenv(SMOKE_ENV, "1")  # the kernel inherits this process's environment
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(
        nbformat.v4.new_code_cell("import os, sys\nprint(sys.executable, os.environ.get('RLSCAN_NOTEBOOK_SMOKE'))")
    )
    execute(nb, tmp_path)
    assert nb.cells[-1].outputs[0]["text"].split() == [sys.executable, "1"]


def test_a_raising_cell_fails(tmp_path: Path):
    """The harness itself: a cell that raises makes `execute` raise, and later cells do not run."""
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("raise RuntimeError('boom')"), nbformat.v4.new_code_cell("print('after')")]
    )
    with pytest.raises(CellExecutionError, match="boom"):
        execute(nb, tmp_path)
    assert not nb.cells[1].get("outputs")


def main(paths: list[str]) -> None:
    """Re-executes notebooks in place with their full budgets and saves the outputs."""
    os.environ.pop(SMOKE_ENV, None)
    with tempfile.TemporaryDirectory() as spec_dir:
        for path in [Path(p).resolve() for p in paths] or NOTEBOOKS:
            nb = nbformat.read(path, as_version=4)
            t0 = time.perf_counter()
            execute(nb, Path(spec_dir))
            nbformat.write(nb, path)
            print(f"{path.name}: executed in {time.perf_counter() - t0:.1f} s and saved")


if __name__ == "__main__":
    main(sys.argv[1:])
