"""The notebooks run top to bottom with the offline models (executed with nbclient)."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_the_three_notebooks_exist():
    assert [p.name for p in NOTEBOOKS] == ["01_quickstart.ipynb", "02_reproduce_figures.ipynb",
                                           "03_your_own_minimal_pairs.ipynb"]


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, raw_dir, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("NCPROBE_DATA", str(raw_dir))
    monkeypatch.setenv("NCPROBE_CACHE", str(tmp_path / "cache"))
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    # every code cell ran and the last one produced output
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code)
    assert code[-1].get("outputs")
