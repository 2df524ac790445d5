"""The notebooks run top to bottom with the offline models (executed with nbclient).

Each runs from an empty working directory outside the repository, and must leave it empty:
a notebook finds nothing through a path relative to where it runs, and writes into
temporary directories of its own.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
#: every notebook, and what it shows (docs/guide/reports.md lists the same, in this order)
EXPECTED = ["01_quickstart.ipynb", "02_reproduce_figures.ipynb",
            "03_your_own_minimal_pairs.ipynb", "04_stimuli.ipynb",
            "05_standardisation_and_rogue_dimensions.ipynb", "06_layers_portuguese.ipynb",
            "07_probing_your_own_compounds.ipynb", "08_retrieval_idiolink.ipynb",
            "09_ncc_semanticqa.ipynb", "10_astitch_token_level.ipynb"]


def test_the_notebooks_exist_and_the_readme_lists_them():
    assert [p.name for p in NOTEBOOKS] == EXPECTED
    page = (REPO / "docs" / "guide" / "reports.md").read_text(encoding="utf-8")
    listed = re.findall(r"^- `(\d\d_\w+\.ipynb)`", page, flags=re.M)
    assert listed == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebooks_are_saved_without_outputs_or_paths_outside_themselves(path):
    """No data of the NCIMP files in the repository, and nothing found through ``../``."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code
    for cell in code:
        assert cell["outputs"] == [] and cell["execution_count"] is None
        source = "".join(cell["source"])
        assert "../" not in source and "..\\" not in source
        assert "os.chdir" not in source and "/work/" not in source


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, raw_dir, tmp_path, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("NCPROBE_DATA", str(raw_dir))
    monkeypatch.setenv("NCPROBE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))   # the notebooks' temporary directories
    (tmp_path / "tmp").mkdir()
    cwd = tmp_path / "elsewhere"   # not the repository, nor notebooks/
    cwd.mkdir()
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(cwd)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    # every code cell ran and the last one produced output
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code)
    assert code[-1].get("outputs")
    # outputs went to temporary directories, none into the working directory
    assert list(cwd.iterdir()) == []
    # figures are shown once each: the quickstart's one, and the ten of the reproduce notebook
    if path.name == "01_quickstart.ipynb":
        assert len(_images(code[-1])) == 1
    if path.name == "02_reproduce_figures.ipynb":
        loop = [c for c in code if "figures.FIGURES" in c.source]
        from ncprobe.ncimp.figures import FIGURES

        assert len(loop) == 1 and len(_images(loop[0])) == len(FIGURES)
    if path.name == "05_standardisation_and_rogue_dimensions.ipynb":
        rogue = next(c for c in code if 'res.select("rogue", level="nc"' in c.source)
        assert {"raw", "standardised"} <= set(_text(rogue).split())
    if path.name == "08_retrieval_idiolink.ipynb":
        # the two figures: modes with intervals, and the idioms
        assert sum(len(_images(c)) for c in code) == 2
        assert "minilm" in _text(code[0]) and "bm25" in _text(code[0])
    if path.name == "09_ncc_semanticqa.ipynb":
        # the two figures, and the published files within 0.1 point of the paper's Table 3
        assert sum(len(_images(c)) for c in code) == 2
        paper = next(c for c in code if "PAPER = {" in c.source)
        assert "largest difference from the paper: 0.1 points over 20 rows" in _text(paper)
    if path.name == "10_astitch_token_level.ipynb":
        # the two figures; the summary of MiniLM with its control task, and no zero-shot
        # setting (its training split left out of the run)
        assert sum(len(_images(c)) for c in code) == 2
        summary = _text(next(c for c in code if "print(res.summary())" in c.source))
        assert "minilm" in summary and "control task" in summary
        assert "one-shot" in summary and "few-shot" in summary and "zero-shot" not in summary
    if path.name == "06_layers_portuguese.ipynb":
        views = next(c for c in code if 'res.cosines["layers"].unique()' in c.source)
        assert _text(views).strip() == "['0', '1', '2', '3']"  # tiny BERT, layers="all"
        assert len(_images(code[-1])) == 1


def _images(cell) -> list:
    return [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]


def _text(cell) -> str:
    """What a cell printed or showed as text."""
    out = []
    for o in cell.get("outputs", []):
        out.append(o.get("text", "") or o.get("data", {}).get("text/plain", ""))
    return "".join(out)


@pytest.mark.slow
def test_a_figure_as_the_value_of_a_cell_is_shown_once(tmp_path, monkeypatch):
    """In a kernel with its default (inline) backend: one image, and nothing left in pyplot."""
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.delenv("MPLBACKEND", raising=False)   # the kernel picks its own, as in Jupyter
    cells = [(f"import sys\nsys.path.insert(0, {str(REPO)!r})\n"
              "from tests import synthetic\nfrom ncprobe.ncimp import figures\n"
              "res = synthetic.build()"),
             'figures.FIGURES["ratio"](res)',   # a figure as the cell's value
             ("import matplotlib, matplotlib.pyplot as plt\n"
              "print(matplotlib.get_backend(), plt.get_fignums())")]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert len(_images(nb.cells[1])) == 1
    printed = "".join(o.get("text", "") for o in nb.cells[2].outputs).split()
    assert printed == ["module://matplotlib_inline.backend_inline", "[]"]
