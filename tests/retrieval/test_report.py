"""The retrieval probe's report (issue 21): the paper's Table 2 (DataFrame, Markdown, LaTeX),
the paired tests, the two figures, and the report's files written as ncprobe's own.

The tables are made here, by hand and seeded (three models, the BM25 control without the
instruction modes, five idioms): every expected cell is the input fraction x 100 rounded to
2 decimals by the test itself; file names are spelled out here; contents are compared byte
for byte with what an earlier report (or the test) wrote; modes come from the umask the test
sets.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from ncprobe import owned
from ncprobe.errors import NoData, OutputError, UsageError
from ncprobe.retrieval.figures import plot_idioms, plot_modes
from ncprobe.retrieval.report import (
    paired_tests_latex,
    paired_tests_markdown,
    paired_tests_table,
    table2,
    table2_latex,
    table2_markdown,
    write_retrieval_report,
)

ALL_MODES = ["sentence", "span", "instruction_sentence", "instruction_span"]
MODELS = ["minilm", "bm25", "e5-base_v2"]   # run order (not alphabetical)
USAGES = ["all", "literal", "idiomatic"]
METRICS = ["r_precision", "ndcg@10"]
IDIOMS = ["spill the beans", "break the ice", "kick the bucket", "under the weather",
          "cold feet"]


def _modes(model: str) -> list[str]:
    return ALL_MODES[:2] if model == "bm25" else ALL_MODES


def _overall(seed: int = 7) -> pd.DataFrame:
    """One row per model, mode and usage; the BM25 span rows have a tie range, the other
    rows none; the literal rows of e5 have no bootstrap interval."""
    rng = np.random.default_rng(seed)
    rows = []
    for model in MODELS:
        for mode in _modes(model):
            for usage in USAGES:
                row = {"model": model, "mode": mode, "usage": usage,
                       "n": 100 if usage == "all" else 50, "n_idioms": 5}
                for m in METRICS:
                    v = float(rng.uniform(0.1, 0.9))
                    row[m] = v
                    no_ci = model == "e5-base_v2" and usage == "literal"
                    row[f"{m}_lo"] = np.nan if no_ci else v - float(rng.uniform(0.01, 0.05))
                    row[f"{m}_hi"] = np.nan if no_ci else v + float(rng.uniform(0.01, 0.05))
                    tie = model == "bm25" and mode == "span"
                    row[f"{m}_min"] = v - (0.0123 if tie else 0.0)
                    row[f"{m}_max"] = v + (0.0217 if tie else 0.0)
                rows.append(row)
    return pd.DataFrame(rows)


def _per_idiom(seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for model in MODELS:
        for mode in _modes(model):
            for idiom in IDIOMS:
                for usage in USAGES:
                    row = {"model": model, "mode": mode, "idiom": idiom, "usage": usage,
                           "n": 20 if usage == "all" else 10}
                    for m in METRICS:
                        v = float(rng.uniform(0, 1))
                        row.update({m: v, f"{m}_min": v, f"{m}_max": v})
                    rows.append(row)
    return pd.DataFrame(rows)


def _tests() -> pd.DataFrame:
    base = {"usage": "all", "n": 100, "n_idioms": 5, "test": "paired bootstrap over idioms",
            "correction": "holm"}
    return pd.DataFrame([
        {**base, "model_a": "minilm", "mode_a": "span", "model_b": "minilm",
         "mode_b": "sentence", "metric": "r_precision", "a": 0.5123, "b": 0.4871,
         "diff": 0.0252, "diff_lo": 0.0101, "diff_hi": 0.0405, "p": 0.0004,
         "p_corrected": 0.0008, "significant": True},
        {**base, "model_a": "minilm", "mode_a": "span", "model_b": "bm25", "mode_b": "span",
         "metric": "ndcg@10", "a": 0.30, "b": 0.35, "diff": -0.05, "diff_lo": -0.12,
         "diff_hi": 0.02, "p": 0.0123, "p_corrected": 0.2468, "significant": False},
    ])


META = {"probe": "idiolink", "split": "test",
        "models": [{"model": "minilm", "id": "sentence-transformers/all-MiniLM-L6-v2",
                    "format": "generic"},
                   {"model": "bm25", "id": None, "format": None},
                   {"model": "e5-base_v2", "id": "intfloat/e5-base-v2", "format": "e5_inline"}],
        "config": {"k1": 0.9, "b": 0.4}, "notes": ["a note of the run"], "n_boot": 1000}


def _tables() -> dict[str, pd.DataFrame]:
    return {"overall": _overall(), "per_idiom": _per_idiom(), "tests": _tests()}


def _pct(x: float) -> str:
    return f"{round(x * 100, 2):.2f}"


def _row(overall: pd.DataFrame, model: str, mode: str, usage: str) -> pd.Series:
    hit = overall[(overall["model"] == model) & (overall["mode"] == mode)
                  & (overall["usage"] == usage)]
    assert len(hit) == 1
    return hit.iloc[0]


# ---------------------------------------------------------------------------------------------
# Table 2


@pytest.mark.parametrize("usage", USAGES)
def test_table2_cells_are_the_fractions_in_percent_with_2_decimals(usage):
    overall = _overall()
    df = table2(overall, usage, intervals=False)
    labels = {"sentence": "Sentence", "span": "Span",
              "instruction_sentence": "Instruction sentence",
              "instruction_span": "Instruction span"}
    assert list(df.index) == MODELS
    assert list(df.columns) == [(labels[mo], me) for mo in ALL_MODES
                                for me in ("R-Prec", "nDCG@10")]
    for model in MODELS:
        for mode in ALL_MODES:
            for metric, label in (("r_precision", "R-Prec"), ("ndcg@10", "nDCG@10")):
                cell = df.loc[model, (labels[mode], label)]
                if mode not in _modes(model):
                    assert cell == "–"
                    continue
                value = _row(overall, model, mode, usage)[metric]
                tie = model == "bm25" and mode == "span"
                assert cell == _pct(value) + ("†" if tie else "")


def test_table2_intervals_and_tie_ranges():
    overall = _overall()
    df = table2(overall, "all")
    r = _row(overall, "minilm", "sentence", "all")
    assert df.loc["minilm", ("Sentence", "R-Prec")] == (
        f"{_pct(r['r_precision'])} [{_pct(r['r_precision_lo'])}, {_pct(r['r_precision_hi'])}]")
    # no interval computed: the figure alone
    lit = table2(overall, "literal")
    r = _row(overall, "e5-base_v2", "span", "literal")
    assert lit.loc["e5-base_v2", ("Span", "nDCG@10")] == _pct(r["ndcg@10"])
    # the tie range of the marked figures, and only those
    r = _row(overall, "bm25", "span", "all")
    assert df.attrs["ties"] == [
        f"bm25 Span R-Prec {_pct(r['r_precision_min'])}–{_pct(r['r_precision_max'])}",
        f"bm25 Span nDCG@10 {_pct(r['ndcg@10_min'])}–{_pct(r['ndcg@10_max'])}"]
    assert sum("†" in c for c in df.to_numpy().ravel()) == 2


def test_table2_follows_the_run_order_of_models_and_the_papers_order_of_modes():
    overall = _overall()
    # rows shuffled within each model (modes out of order); models keep their run order
    shuffled = pd.concat([overall[overall["model"] == m].iloc[::-1] for m in MODELS])
    pd.testing.assert_frame_equal(table2(shuffled), table2(overall))
    only_bm25 = table2(overall[overall["model"] == "bm25"])
    assert list(only_bm25.columns.get_level_values(0)) == ["Sentence"] * 2 + ["Span"] * 2


def test_table2_refuses_bad_input():
    overall = _overall()
    with pytest.raises(UsageError, match="usage='every'"):
        table2(overall, "every")
    with pytest.raises(UsageError, match="ndcg@10_lo"):
        table2(overall.drop(columns=["ndcg@10_lo"]))
    with pytest.raises(UsageError, match="unknown query mode.*late"):
        table2(overall.assign(mode=overall["mode"].replace("span", "late")))
    with pytest.raises(UsageError, match="given twice"):
        table2(pd.concat([overall, overall.iloc[:1]]))


def test_table2_markdown_has_one_cell_per_column_and_the_footnotes():
    overall = _overall()
    text = table2_markdown(overall, "all")
    rows = [line for line in text.splitlines() if line.startswith("|")]
    assert len(rows) == 2 + len(MODELS)
    assert {line.count("|") for line in rows} == {1 + 1 + 8}
    assert rows[0] == ("| model | Sentence R-Prec | Sentence nDCG@10 | Span R-Prec | Span nDCG@10 "
                       "| Instruction sentence R-Prec | Instruction sentence nDCG@10 "
                       "| Instruction span R-Prec | Instruction span nDCG@10 |")
    bm25 = next(line for line in rows if line.startswith("| bm25 "))
    assert bm25.endswith("| – | – | – | – |")
    r = _row(overall, "bm25", "span", "all")
    assert f"{_pct(r['r_precision_min'])}–{_pct(r['r_precision_max'])}" in text
    assert "† ties" in text


def _balanced(tex: str) -> bool:
    depth = 0
    for token in re.findall(r"\\[{}]|[{}]", tex):
        if token in ("\\{", "\\}"):
            continue
        depth += 1 if token == "{" else -1
        if depth < 0:
            return False
    return depth == 0


def test_table2_latex_booktabs_groups_escapes_and_footnote():
    overall = _overall()
    tex = table2_latex(overall, "all")
    assert _balanced(tex)
    assert tex.count(r"\begin{tabular}") == tex.count(r"\end{tabular}") == 1
    for rule in (r"\toprule", r"\midrule", r"\bottomrule"):
        assert tex.count(rule) == 1
    assert tex.count(r"\cmidrule(lr)") == 4
    for i, label in enumerate(["Sentence", "Span", "Instruction sentence", "Instruction span"]):
        assert r"\multicolumn{2}{c}{" + label + "}" in tex
        assert rf"\cmidrule(lr){{{2 + 2 * i}-{3 + 2 * i}}}" in tex
    assert r"\begin{tabular}{lrrrrrrrr}" in tex
    assert r"e5-base\_v2 & " in tex
    assert not re.search(r"(?<!\\)_", tex)  # every underscore escaped
    body = tex[tex.index(r"\midrule"):tex.index(r"\bottomrule")]
    rows = [line for line in body.splitlines() if line.endswith(r"\\")]
    assert all(line.count(" & ") == 8 for line in rows)
    # a figure row and an interval row per model, every figure with an interval here
    assert len(rows) == 2 * len(MODELS)
    r = _row(overall, "minilm", "sentence", "all")
    assert (r"{\scriptsize [" + _pct(r["r_precision_lo"]) + ", " + _pct(r["r_precision_hi"])
            + "]}") in tex
    bm25 = next(line for line in rows if line.startswith("bm25 & "))
    assert bm25.endswith("& -- & -- & -- & -- \\\\")
    assert bm25.count(r"$^\dagger$") == 2
    assert r"\footnotesize $^\dagger$ ties" in tex
    assert "%" not in tex.replace(r"\%", "")  # no unescaped comment sign
    compact = table2_latex(overall, "all", intervals=False)
    assert r"\scriptsize" not in compact and _balanced(compact)


# ---------------------------------------------------------------------------------------------
# the paired tests


def test_tests_table_formats_p_like_the_other_tables_and_names_the_correction():
    df = paired_tests_table(_tests())
    assert list(df["p"]) == ["<0.001", "0.012"]
    assert list(df["p corrected"]) == ["<0.001", "0.247"]
    assert list(df["sig."]) == ["***", ""]
    assert list(df["A"]) == ["minilm Span", "minilm Span"]
    assert list(df["B"]) == ["minilm Sentence", "bm25 Span"]
    assert list(df["A (%)"]) == ["51.23", "30.00"]
    assert list(df["A - B [95% CI]"]) == ["+2.52 [+1.01, +4.05]", "-5.00 [-12.00, +2.00]"]
    md = paired_tests_markdown(_tests())
    assert "Holm-corrected" in md and "paired bootstrap over idioms" in md
    tex = paired_tests_latex(_tests())
    assert _balanced(tex) and r"\toprule" in tex and "Holm-corrected" in tex
    assert "A (\\%)" in tex
    unnamed = paired_tests_table(_tests().drop(columns=["test", "correction"]))
    assert list(unnamed["p"]) == ["<0.001", "0.012"]
    assert "paired test: not recorded" in unnamed.attrs["note"]
    assert "multiple comparisons: not recorded" in unnamed.attrs["note"]
    empty = _tests().iloc[:0]
    assert paired_tests_markdown(empty).startswith("No paired tests")
    assert paired_tests_latex(empty).startswith("%")


# ---------------------------------------------------------------------------------------------
# the figures


def test_plot_modes_has_a_panel_per_usage_with_percent_bars():
    overall = _overall()
    fig = plot_modes(overall, "r_precision")
    assert isinstance(fig, Figure)
    # each panel says its n (the table's: 100 queries of 5 idioms in all, 50 per usage)
    assert [ax.get_title() for ax in fig.axes] == [
        "all queries\nn = 100 queries, 5 idioms", "literal queries\nn = 50 queries, 5 idioms",
        "idiomatic queries\nn = 50 queries, 5 idioms"]
    assert fig.axes[0].get_ylabel() == "R-Precision"
    for ax in fig.axes:
        assert ax.get_ylim() == (0.0, 100.0)
        assert isinstance(ax.yaxis.get_major_formatter(), PercentFormatter)
        assert [t.get_text() for t in ax.get_xticklabels()] == MODELS
    heights = sorted(round(p.get_height(), 9) for p in fig.axes[0].patches)
    sub = overall[overall["usage"] == "all"]
    assert heights == sorted(round(v * 100, 9) for v in sub["r_precision"])
    assert "95%" in fig.get_suptitle()
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == [
        "Sentence", "Span", "Instruction sentence", "Instruction span"]


def test_plot_modes_into_an_axes_and_bad_input():
    fig = Figure()
    ax = fig.add_subplot()
    assert plot_modes(_overall(), "ndcg@10", ax=ax) is fig
    assert ax.get_title() == "all queries\nn = 100 queries, 5 idioms"
    assert ax.get_ylabel() == "nDCG@10"
    with pytest.raises(UsageError, match="metric='map'"):
        plot_modes(_overall(), "map")
    with pytest.raises(NoData):
        plot_modes(_overall().query("usage == 'all'"), "ndcg@10", usage="literal")


def test_plot_idioms_sorts_the_idioms_hardest_first():
    per_idiom = _per_idiom()
    fig = plot_idioms(per_idiom, "ndcg@10")
    assert [ax.get_title() for ax in fig.axes] == MODELS
    # the expected order by a plain loop: mean over every shown model and mode, usage all
    means = {}
    for idiom in IDIOMS:
        vals = [r["ndcg@10"] for _, r in per_idiom.iterrows()
                if r["idiom"] == idiom and r["usage"] == "all"]
        means[idiom] = sum(vals) / len(vals)
    expected = sorted(IDIOMS, key=lambda i: means[i])
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == expected
    assert fig.axes[0].get_ylim()[0] > fig.axes[0].get_ylim()[1]  # the first row on top
    # its n: the table's 20 queries of usage "all" per idiom, every idiom shown
    assert fig.get_suptitle().splitlines()[1] == (
        f"n = 20 queries per idiom, {len(IDIOMS)} idioms shown")
    assert all("nDCG@10" in ax.get_xlabel() for ax in fig.axes)
    # one dot per mode: four collections for minilm, two for bm25
    assert [len(ax.collections) - 1 for ax in fig.axes] == [4, 2, 4]
    one = plot_idioms(per_idiom, "r_precision", model="bm25", modes=["span"], top=2)
    assert [ax.get_title() for ax in one.axes] == ["bm25"]
    assert len(one.axes[0].get_yticklabels()) == 2
    with pytest.raises(UsageError, match="not in the per_idiom table"):
        plot_idioms(per_idiom, "r_precision", model="contriever")
    with pytest.raises(UsageError, match="top=0"):
        plot_idioms(per_idiom, "r_precision", top=0)


def test_plot_idioms_grows_with_75_idioms():
    rows = [{"model": "minilm", "mode": mode, "idiom": f"idiom {i:02d}", "usage": "all",
             "n": 20, "r_precision": (i * 7 % 75) / 75, "ndcg@10": 0.5}
            for mode in ("sentence", "span") for i in range(75)]
    fig = plot_idioms(pd.DataFrame(rows), "r_precision")
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(labels) == 75 and labels[0] == "idiom 00"
    # room for every label at 8 points (0.11 inch): at least 0.15 inch per idiom
    assert fig.get_size_inches()[1] >= 75 * 0.15


# ---------------------------------------------------------------------------------------------
# the report's files

FIGURE_STEMS = ["fig01_modes_r_precision", "fig02_modes_ndcg10", "fig03_idioms_r_precision",
                "fig04_idioms_ndcg10"]
TABLE_FILES = ["table_retrieval.md", "table_retrieval.tex", "table_retrieval_tests.md",
               "table_retrieval_tests.tex"]
MANIFEST = ".ncprobe-report.json"


def _snapshot(out: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(out.iterdir())}


def _write(out: Path, **kw) -> list[Path]:
    return write_retrieval_report(_tables(), META, out, formats=("png",), dpi=30, **kw)


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, list[Path], dict[str, bytes]]:
    """One report (png, 30 dpi), and what is in its directory."""
    out = tmp_path_factory.mktemp("retrieval") / "rep"
    paths = _write(out)
    return out, paths, _snapshot(out)


def test_the_report_writes_exactly_the_planned_files(written):
    out, paths, files = written
    planned = [f"{s}.png" for s in FIGURE_STEMS] + TABLE_FILES + ["README.md"]
    assert [p.name for p in paths] == planned
    assert set(files) == set(planned) | {MANIFEST}
    manifest = json.loads(files[MANIFEST])
    assert manifest["files"] == {n: hashlib.sha256(files[n]).hexdigest() for n in planned}
    readme = files["README.md"].decode()
    assert "split `test`" in readme
    assert "`sentence-transformers/all-MiniLM-L6-v2`, query format generic" in readme
    assert "`intfloat/e5-base-v2`, query format e5_inline" in readme
    assert all(f"`{name}`" in readme for name in planned if name != "README.md")
    assert "a note of the run" in readme
    assert ("The BM25 figures depend on how tied documents are ordered; the stated tie rule "
            "is stable corpus order") in readme
    assert "tie range gives how far it could move each figure" in readme
    md = files["table_retrieval.md"].decode()
    assert [line for line in md.splitlines() if line.startswith("## ")] == [
        "## All queries (n = 100 queries, 5 idioms)",
        "## Literal queries (n = 50 queries, 5 idioms)",
        "## Idiomatic queries (n = 50 queries, 5 idioms)"]
    tex = files["table_retrieval.tex"].decode()
    assert tex.count(r"\begin{table}") == 3 and _balanced(tex)
    assert files[f"{FIGURE_STEMS[0]}.png"].startswith(b"\x89PNG")


def test_a_rerun_is_byte_identical(written):
    out, _, files = written
    _write(out)  # into the same directory: its own files are replaced, by the same bytes
    assert _snapshot(out) == files


def test_a_foreign_file_is_refused_and_left_untouched(tmp_path):
    out = tmp_path / "rep"
    out.mkdir()
    (out / "table_retrieval.md").write_bytes(b"my own notes\n")
    with pytest.raises(UsageError, match="table_retrieval.md") as err:
        _write(out)
    assert err.value.exit_code == 2
    assert _snapshot(out) == {"table_retrieval.md": b"my own notes\n"}


def test_an_edited_file_is_not_overwritten(written, tmp_path):
    out = tmp_path / "rep"
    shutil.copytree(written[0], out)  # a report, manifest included
    edited = out / "README.md"
    edited.write_bytes(b"edited by hand\n")
    before = _snapshot(out)
    with pytest.raises(UsageError, match="changed since ncprobe wrote it"):
        _write(out)
    assert _snapshot(out) == before


@pytest.mark.slow  # ~2.5 s: reports written twice
def test_an_interrupted_report_resumes(written, tmp_path, monkeypatch):
    out = tmp_path / "rep"
    real_write = owned.atomic_write_bytes

    def write(path, data):
        if Path(path).name == "fig02_modes_ndcg10.png":
            raise KeyboardInterrupt
        return real_write(path, data)

    monkeypatch.setattr(owned, "atomic_write_bytes", write)
    with pytest.raises(KeyboardInterrupt):
        _write(out)
    assert (out / "fig01_modes_r_precision.png").exists()
    assert not (out / "fig02_modes_ndcg10.png").exists() and not (out / "README.md").exists()
    monkeypatch.setattr(owned, "atomic_write_bytes", real_write)
    _write(out)  # the files of the first run are recognised as ncprobe's
    assert _snapshot(out) == written[2]  # as a report that was never interrupted


@pytest.mark.slow  # ~2.5 s: reports written twice
def test_files_follow_the_umask_and_pdfs_are_reproducible(tmp_path):
    umask = 0o027  # not the usual 0o022: the modes cannot be right by chance
    old = os.umask(umask)
    try:
        out = tmp_path / "new" / "rep"
        write_retrieval_report(_tables(), META, out, formats=("pdf",), dpi=30)
        first = _snapshot(out)
        write_retrieval_report(_tables(), META, out, formats=("pdf",), dpi=30)
    finally:
        os.umask(old)
    assert stat.S_IMODE(out.stat().st_mode) == 0o777 & ~umask
    for p in out.iterdir():
        assert stat.S_IMODE(p.stat().st_mode) == 0o666 & ~umask, p.name
    # PDFs too are the same bytes on a rerun (no creation date)
    assert _snapshot(out) == first and len([n for n in first if n.endswith(".pdf")]) == 4


def test_unwritable_output_and_bad_options(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(OutputError) as err:
        _write(blocker / "rep")
    assert err.value.exit_code == 6 and str(blocker) in str(err.value)
    assert "a part of the path is a file" in str(err.value)
    with pytest.raises(UsageError, match="exists and is not a directory"):
        _write(blocker)
    with pytest.raises(UsageError, match="--format"):
        write_retrieval_report(_tables(), META, tmp_path / "x", formats=("png", "../x"))
    with pytest.raises(UsageError, match="per_idiom missing"):
        write_retrieval_report({"overall": _overall()}, META, tmp_path / "x")
    with pytest.raises(UsageError, match="split missing"):
        write_retrieval_report(_tables(), {"models": []}, tmp_path / "x")
    with pytest.raises(UsageError, match="dpi=0"):
        write_retrieval_report(_tables(), META, tmp_path / "x", dpi=0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # nothing written
