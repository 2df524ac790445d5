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
    # figures are shown once each: the quickstart's one, and the ten of the reproduce notebook
    if path.name == "01_quickstart.ipynb":
        assert len(_images(code[-1])) == 1
    if path.name == "02_reproduce_figures.ipynb":
        loop = [c for c in code if "plots.FIGURES" in c.source]
        from ncprobe.plots import FIGURES

        assert len(loop) == 1 and len(_images(loop[0])) == len(FIGURES)


def _images(cell) -> list:
    return [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]


@pytest.mark.slow
def test_a_figure_as_the_value_of_a_cell_is_shown_once(tmp_path, monkeypatch):
    """In a kernel with its default (inline) backend: one image, and nothing left in pyplot."""
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.delenv("MPLBACKEND", raising=False)   # the kernel picks its own, as in Jupyter
    root = Path(__file__).resolve().parents[1]
    cells = [(f"import sys\nsys.path.insert(0, {str(root)!r})\n"
              "from tests import synthetic\nfrom ncprobe import plots\nres = synthetic.build()"),
             'plots.FIGURES["ratio"](res)',   # a figure as the cell's value
             ("import matplotlib, matplotlib.pyplot as plt\n"
              "print(matplotlib.get_backend(), plt.get_fignums())")]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert len(_images(nb.cells[1])) == 1
    printed = "".join(o.get("text", "") for o in nb.cells[2].outputs).split()
    assert printed == ["module://matplotlib_inline.backend_inline", "[]"]
