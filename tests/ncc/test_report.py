"""The NCC report (issue 30): its files (exactly those planned, the same bytes on a rerun,
ncprobe's own), its tables, and its figures (panels, dots, matrices counted on the matplotlib
objects).

The results are those of :mod:`tests.ncc.test_results`, built by hand (20 items, two
published files, one model's two representation classifiers, the gold ceiling); a layered
accuracy table is built here for the layer figure.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.image import AxesImage

from ncprobe.drawing import figure_bytes
from ncprobe.errors import NoData, UsageError
from ncprobe.ncc import report as ncc_report
from ncprobe.ncc.figures import plot_accuracy, plot_agreement, plot_confusion, plot_layers
from ncprobe.ncc.report import confusion_rows, items_markdown

from .handmade import CLAUDE, GPT, results


@pytest.fixture(scope="module")
def res():
    return results()


def _files(d) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(d.iterdir())}


@pytest.fixture(scope="module")
def report(res, tmp_path_factory):
    """One report (png, 40 dpi): the files it says it wrote, and its directory. Drawn once for
    the tests of its files and of its tables; only read from then on."""
    out = tmp_path_factory.mktemp("ncc-report") / "a"
    return res.report(out, formats=("png",), dpi=40), out


@pytest.mark.slow  # ~2.5 s: two reports
def test_the_report_writes_exactly_its_files_and_a_rerun_the_same_bytes(res, report,
                                                                        tmp_path):
    written, a = report
    names = [p.name for p in written]
    # a static model has one layer view: the layer figure is not drawn, and the index says so
    assert names == ["fig01_accuracy.png", "fig03_confusion.png", "fig04_agreement.png",
                     "table_ncc.md", "table_ncc.tex", "table_ncc_tests.md",
                     "table_ncc_tests.tex", "table_ncc_items.md", "table_ncc_items.tex",
                     "README.md"]
    assert sorted(_files(a)) == sorted([*names, ".ncprobe-report.json"])
    readme = (a / "README.md").read_text(encoding="utf-8")
    assert readme.startswith("# ncprobe NCC report\n")
    assert "- fig02_layers: not drawn: no model with several layer views" in readme
    assert "`glove-6b-50d`: `hub/glove-6b-50d`" in readme
    res.report(tmp_path / "b", formats=("png",), dpi=40)
    assert _files(a) == _files(tmp_path / "b")
    # into itself (the rerun's directory: the shared one is only read): nothing changes
    before = _files(tmp_path / "b")
    res.report(tmp_path / "b", formats=("png",), dpi=40)
    assert _files(tmp_path / "b") == before


def test_a_figure_saved_twice_as_pdf_is_the_same_bytes(res):
    one = figure_bytes(plot_accuracy(res.accuracy), ["pdf"], 72)["pdf"]
    two = figure_bytes(plot_accuracy(res.accuracy), ["pdf"], 72)["pdf"]
    assert one == two and one.startswith(b"%PDF")


def test_the_report_refuses_a_file_it_did_not_write(res, tmp_path):
    out = tmp_path / "r"
    out.mkdir()
    (out / "table_ncc.md").write_text("my notes\n", encoding="utf-8")
    with pytest.raises(UsageError, match="table_ncc.md"):
        res.report(out, formats=("png",), dpi=40)
    assert sorted(p.name for p in out.iterdir()) == ["table_ncc.md"]   # nothing written


def test_the_tables_state_the_intervals_the_family_and_the_items(res, report):
    _, out = report  # the table as the report wrote it
    table = (out / "table_ncc.md").read_text(encoding="utf-8")
    lines = table.splitlines()
    gpt = next(line for line in lines if line.startswith("| published | gpt-5 |"))
    assert "| 20 | 85.0 [" in gpt
    first = [i for i, line in enumerate(lines) if line.startswith("| ")][1:]  # rows, in order
    kinds = [lines[i].split("|")[1].strip() for i in first]
    assert kinds == ["baseline"] * 4 + ["published"] * 4 + ["ceiling"] + ["representation"] * 2
    bert = next(line for line in lines if line.startswith("| published | BERT-base |"))
    assert "| fine-tuned (paper) |" in bert and "| 53.6 |" in bert     # no n, no interval
    tests = ncc_report.tests_markdown(res.tests)
    # 2 representation rows x 2 published rows, and the ceiling x 2: two families fixed by
    # the question, each corrected on its own
    assert ("2 families, each corrected on its own: classifiers vs systems: glove-6b-50d "
            "(4 tests); gold ceiling vs systems (2 tests)") in tests
    assert "max-T corrected (Westfall-Young step-down" in tests
    assert len([line for line in tests.splitlines() if line.startswith("| glove")
                or line.startswith("| gold")]) == 6
    latex = ncc_report.tests_latex(res.tests)
    assert latex.count(r"\begin{tabular}") == 2
    assert "one family: gold ceiling vs systems (2 tests)" in latex
    items = items_markdown(res.agreement())
    assert "| 001 | nc 001 | NC | 0/2 | 0/1 | missed by every system |" in items
    assert "| 007 | nc 007 | NC | 0/2 | 1/1 | right only by the representation |" in items


def test_two_families_are_two_tables(res):
    other = res.tests.assign(family="another family")
    both = pd.concat([res.tests, other], ignore_index=True)
    assert ncc_report.tests_markdown(both).count("**Family: ") == 3
    assert ncc_report.tests_latex(both).count(r"\begin{tabular}") == 3


# --- the figures --------------------------------------------------------------------------------


def _dots(ax) -> int:
    return sum(len(c.get_offsets()) for c in ax.collections if isinstance(c, PathCollection))


def _intervals(ax) -> int:
    return sum(len(c.get_segments()) for c in ax.collections if isinstance(c, LineCollection))


def test_the_accuracy_figure_has_a_panel_per_group_and_a_dot_per_row(res):
    fig = plot_accuracy(res.accuracy)
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert titles == ["published systems (n = 18-20 items)",
                      "gold ceiling: the classifiers on the human score (n = 20 items)",
                      "glove-6b-50d: representation (n = 20 items)"]
    # the paper's two rows without a file: dots without intervals
    assert [_dots(ax) for ax in fig.axes] == [4, 1, 2]
    assert [_intervals(ax) for ax in fig.axes] == [2, 1, 2]
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["gpt-5, 0-shot", "claude-sonnet-4-5, 5-shot",
                      "BERT-base, fine-tuned (paper)", "BERT-large, fine-tuned (paper)"]
    # each panel its own task's lines, of the 20 items (7 NC, 7 PC, 6 C): the prompted
    # systems' four options (25), majority (7/20) and human (71.0); the classifiers' uniform
    # (1/3), stratified (49 + 49 + 36) / 400 and majority
    xs = [sorted(round(line.get_xdata()[0], 1) for line in ax.lines) for ax in fig.axes]
    assert xs[0] == [25.0, 35.0, 71.0]
    assert xs[1] == xs[2] == [33.3, round(100 * 134 / 400, 1), 35.0]
    legend = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert legend.count("majority class 35.0%") == 1          # one line of both tasks
    assert "four options 25.0% (4-option)" in legend and "uniform 33.3% (3-way)" in legend
    # no interval computed: dots without lines
    bare = plot_accuracy(res.accuracy.assign(ci_low=np.nan, ci_high=np.nan))
    assert [_intervals(ax) for ax in bare.axes] == [0, 0, 0]
    # a nested selection row is a diamond first in its model's panel
    chosen = res.accuracy.iloc[[3]].assign(kind="selected", setting="nested", measure="")
    fig = plot_accuracy(pd.concat([res.accuracy, chosen], ignore_index=True))
    panel = fig.axes[-1]
    assert panel.get_title(loc="left").startswith("glove-6b-50d: nested selection and ")
    assert [t.get_text() for t in panel.get_yticklabels()][0] == (
        "nested selection (chosen in the training folds)")
    with pytest.raises(NoData):
        plot_accuracy(res.accuracy.iloc[:0])


def _layered() -> pd.DataFrame:
    rows = []
    for layer in ("0", "1", "2"):
        for level in ("sent", "nc"):
            for setting, measure in (("single", "syn"), ("single", "comp"), ("all", "all")):
                rows.append({"system": "minilm", "kind": "representation", "setting": setting,
                             "layer": layer, "level": level, "measure": measure, "n": 20,
                             "accuracy": 0.5, "ci_low": 0.4, "ci_high": 0.6})
    return pd.DataFrame(rows)


def test_the_layer_figure_has_a_panel_per_model_and_level(res):
    layered = pd.concat([_layered(), res.accuracy], ignore_index=True)
    fig = plot_layers(layered)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["minilm, level sent (n = 20 items)",
                                                 "minilm, level nc (n = 20 items)"]
    for ax in panels:
        # two single measures and the all-measure line (reference lines: 3 more), 3 views each
        data = [line for line in ax.lines if len(line.get_xdata()) == 3]
        assert len(data) == 3
        assert len(ax.lines) == 3 + 3
    # the layered model's accuracy panel: its all-measure rows only, one per view and level
    acc = plot_accuracy(layered)
    panel = next(ax for ax in acc.axes if ax.get_title(loc="left").startswith("minilm"))
    assert panel.get_title(loc="left") == ("minilm: all-measure classifier per layer view "
                                           "(n = 20 items)")
    assert _dots(panel) == 3 * 2
    with pytest.raises(NoData, match="several layer views"):
        plot_layers(res.accuracy)


def test_the_confusion_figure_has_a_panel_per_row_given(res):
    keys = [GPT, CLAUDE, ("glove-6b-50d", "representation", "all", "-", "nc", "all")]
    fig = plot_confusion(res.confusion, res.accuracy, keys)
    panels = [ax for ax in fig.axes if ax.images and ax.get_visible()]
    assert len(panels) == 3
    # claude answered "none" and "unanswered" once each: those columns are shown
    assert [t.get_text() for t in panels[0].get_xticklabels()] == \
        ["NC", "PC", "C", "none", "unanswered"]
    gpt = panels[0].images[0].get_array()
    # gpt is wrong on items 0, 3, 6 (gold NC, answered PC): NC row 4 NC, 3 PC
    assert gpt.shape == (3, 5) and gpt[0, 0] == 4 and gpt[0, 1] == 3 and gpt.sum() == 20
    with pytest.raises(UsageError, match="not in the accuracy table"):
        plot_confusion(res.confusion, res.accuracy, [("x", "published", "", "", "", "")])


def test_confusion_rows_keep_each_systems_best_row_when_there_are_many(res):
    assert len(confusion_rows(res.accuracy)) == 5         # at most 16: every row
    best = confusion_rows(res.accuracy, limit=3)
    # one per system: gpt and claude, the ceiling, glove's all (18 of 20 beats 10 of 20)
    assert best == [GPT, CLAUDE, ("gold score", "ceiling", "all", "", "", "gold"),
                    ("glove-6b-50d", "representation", "all", "-", "nc", "all")]


def test_the_agreement_figure_is_items_by_systems(res):
    ag = res.agreement()
    kinds = res.agreement_systems()
    fig = plot_agreement(ag, kinds)
    whole, named = fig.axes
    image = next(a for a in whole.get_children() if isinstance(a, AxesImage))
    assert image.get_array().shape == (20, 4)
    # item 020 is not in claude's file: masked (drawn as not answered)
    row = ag.index[ag["item"] == "020"][0]
    assert bool(np.ma.getmaskarray(image.get_array())[row, 1])
    assert [t.get_text() for t in named.get_yticklabels()] == [
        "nc 001 (NC; missed by all)", "nc 007 (NC; only representation)"]
    assert [t.get_text() for t in whole.get_xticklabels()] == list(kinds)
    with pytest.raises(NoData):
        plot_agreement(ag.iloc[:0], kinds)
