"""`ncprobe compare` on two small results directories, the comparison table, and the per-class
tests (table and the marks on the figures by class), checked against scipy and hand-written
loops on synthetic results (tests/synthetic.py)."""

from __future__ import annotations

import dataclasses
import functools
import io
import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.stats as ss
from matplotlib.text import Text

import ncprobe
from ncprobe.cli import main
from ncprobe.ncimp import figures as plots
from ncprobe.ncimp import inference, tables
from ncprobe.ncimp.results import Results
from ncprobe.schema import MEASURE_LABELS

from .. import synthetic
from ..by_hand import holm

N_BOOT = 200
LABEL_TO_MEASURE = {v: k for k, v in MEASURE_LABELS.items()}
LEVELS = {"NC": "nc", "Sent": "sent"}


def _run(full: Results, model: str, layers: str) -> Results:
    """One English run of the synthetic tables (one model, one layer view)."""
    return synthetic.one_run(full, model, "en", layers=layers)


@pytest.fixture(scope="module")
def full() -> Results:
    return synthetic.build()


@pytest.fixture(scope="module")
def dirs(full, tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    a = _run(full, "model-a", "-").to_parquet(root / "a")
    b = _run(full, "model-b", "12").to_parquet(root / "b")
    return a, b


def _parse(text: str) -> pd.DataFrame:
    """The Markdown table printed by `ncprobe compare`, as strings (bars unescaped)."""
    lines = [ln for ln in text.splitlines() if ln.startswith("| ")]
    cells = [[c.strip().replace("\\|", "|") for c in
              ln[2:-2].replace("\\|", "\x00").split(" | ")] for ln in lines]
    cells = [[c.replace("\x00", "|") for c in row] for row in cells]
    return pd.DataFrame(cells[1:], columns=cells[0])


@functools.lru_cache(maxsize=None)
def _measures(d) -> pd.DataFrame:
    """The measures table of results directory ``d``, read once (no test changes one)."""
    return pd.read_parquet(d / "measures.parquet")


def _values(d, **where) -> pd.DataFrame:
    m = _measures(d)
    for k, v in where.items():
        m = m[m[k].astype(str) == v]
    return m[["nc", "value", "gold"]]


def _rho(a: pd.DataFrame, b: pd.DataFrame) -> tuple[float, float, int]:
    both = a.merge(b, on="nc", suffixes=("_a", "_b")).dropna(
        subset=["value_a", "value_b", "gold_a"])
    return (ss.spearmanr(both["value_a"], both["gold_a"]).statistic,
            ss.spearmanr(both["value_b"], both["gold_a"]).statistic, len(both))


# ---------------------------------------------------------------------------------------------
# the command


@pytest.mark.slow
def test_two_runs_rows_carry_scipys_rho_of_the_paired_columns(dirs, capsys):
    a, b = dirs
    assert main(["compare", str(a), str(b), "--n-boot", str(N_BOOT), "--seed", "1"]) == 0
    out = capsys.readouterr().out
    got = _parse(out)
    # every cell of one English run: 2 spaces x 2 levels x 2 contexts x 11 measures
    assert len(got) == 2 * 2 * 2 * 11
    assert set(got["model A"]) == {"model-a"} and set(got["model B"]) == {"model-b"}
    assert set(got["layers A"]) == {"-"} and set(got["layers B"]) == {"12"}
    for _, r in got.iterrows():
        where = {"space": r["space"], "level": LEVELS[r["level"]], "context": r["context"],
                 "measure": LABEL_TO_MEASURE[r["measure"]]}
        ra, rb, n = _rho(_values(a, **where), _values(b, **where))
        assert (r["rho A"], r["rho B"], r["n"]) == (f"{ra:.3f}", f"{rb:.3f}", str(n)), where
        lo, hi = (float(x) for x in r["diff [95% CI]"].split("[")[1].rstrip("]").split(","))
        assert float(r["diff [95% CI]"].split()[0]) == pytest.approx(ra - rb, abs=6e-4)
        assert lo <= hi
        assert r["sig."] in ("", "*", "**", "***")
    assert "Holm-corrected across the 88 rows" in out


def test_a_and_b_select_two_contexts_of_one_run(dirs, capsys):
    a, _ = dirs
    assert main(["compare", str(a), "--a", "context=nat", "--b", "context=neut",
                 "--a", "space=raw", "--b", "space=raw", "--n-boot", str(N_BOOT)]) == 0
    got = _parse(capsys.readouterr().out)
    assert len(got) == 2 * 11  # two levels x 11 measures, raw space only
    assert set(got["context A"]) == {"nat"} and set(got["context B"]) == {"neut"}
    for _, r in got.iterrows():
        base = {"space": "raw", "level": LEVELS[r["level"]],
                "measure": LABEL_TO_MEASURE[r["measure"]]}
        ra, rb, _ = _rho(_values(a, context="nat", **base), _values(a, context="neut", **base))
        assert (r["rho A"], r["rho B"]) == (f"{ra:.3f}", f"{rb:.3f}")


@pytest.mark.parametrize("args, words", [
    (["--a", "context"], ["--a 'context'", "KEY=VALUE"]),
    (["--a", "=nat"], ["KEY=VALUE"]),
    (["--a", "context="], ["KEY=VALUE"]),
    (["--a", "colour=red"], ["cannot select on 'colour'", "measure"]),
    (["--b", "context=nat", "--b", "context=neut"], ["given twice", "V1,V2"]),
    (["--a", "context=nope", "--b", "context=neut"], ["'nope'", "nat"]),
    (["--out", "table.xlsx"], ["--out", ".parquet"]),
])
def test_bad_selections_exit_2_with_a_message(dirs, capsys, args, words):
    a, b = dirs
    assert main(["compare", str(a), str(b) if "--b" not in args else str(a)] + args) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert cap.err.startswith("error: ")
    for w in words:
        assert w in cap.err, (w, cap.err)


def test_one_run_without_two_selections_exits_2(dirs, capsys):
    a, _ = dirs
    assert main(["compare", str(a)]) == 2
    assert "two different selections" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("correct", ["holm", "fdr_bh", "none"])
def test_out_formats_hold_the_table(dirs, tmp_path, capsys, correct):
    from statsmodels.stats.multitest import multipletests

    a, b = dirs
    base = ["compare", str(a), str(b), "--a", "level=nc", "--b", "level=nc", "--n-boot",
            str(N_BOOT), "--correct", correct]
    written = {}
    for suffix in (".md", ".tex", ".csv", ".parquet"):
        path = tmp_path / f"cmp{suffix}"
        assert main(base + ["--out", str(path)]) == 0
        printed = capsys.readouterr().out
        written[suffix] = path
    csv = pd.read_csv(written[".csv"], dtype={"layers_a": str, "layers_b": str})
    pq = pd.read_parquet(written[".parquet"])
    assert len(csv) == len(pq) == 2 * 2 * 11  # NC level: 2 spaces x 2 contexts x 11
    pd.testing.assert_frame_equal(csv, pq, check_dtype=False)
    for _, r in pq.iterrows():
        where = {"space": r["space"], "level": "nc", "context": r["context"],
                 "measure": r["measure"]}
        ra, rb, n = _rho(_values(a, **where), _values(b, **where))
        assert (r["rho_a"], r["rho_b"], r["n"]) == (pytest.approx(ra, abs=1e-12),
                                                    pytest.approx(rb, abs=1e-12), n)
    expected = (pq["p_boot"].to_numpy() if correct == "none"
                else multipletests(pq["p_boot"], method=correct)[1])
    np.testing.assert_allclose(pq["p_corrected"], expected, rtol=1e-12)
    assert list(pq["significant"]) == list(expected <= 0.05)
    md = written[".md"].read_text()
    assert printed in md and md.startswith("Differences of Spearman")
    assert len(_parse(md)) == len(pq)
    tex = written[".tex"].read_text()
    assert tex.count(r" \\") == len(pq) + 1  # header and one line per row
    assert r"\begin{tabular}" in tex and r"$A_{\mathrm{Syn|Rand}}$" in tex


def test_comparison_table_formats_every_row():
    df = pd.DataFrame({"model_a": ["m1", "m1"], "model_b": ["m2", "m2"], "level": ["nc", "sent"],
                       "measure": ["syn", "A_Syn|Rand"], "n": [30, 28],
                       "rho_a": [0.5, -0.25], "rho_b": [0.25, 0.125], "diff": [0.25, -0.375],
                       "ci_low": [0.125, -0.5], "ci_high": [0.375, -0.25],
                       "p_boot": [0.0004, 0.2], "r_ab": [0.5, 0.5], "williams_t": [3.25, -1.5],
                       "p_williams": [0.003, 0.145], "p_corrected": [0.0008, 0.2],
                       "significant": [True, False]})
    shown = tables.comparison_table(df)
    assert list(shown.index.names) == ["model A", "model B", "level", "measure"]
    assert shown.index[0] == ("m1", "m2", "NC", "P_Syn")
    assert shown.index[1] == ("m1", "m2", "Sent", "A_Syn|Rand")
    assert list(shown.iloc[0]) == ["30", "0.500", "0.250", "+0.250 [+0.125, +0.375]", "<0.001",
                                   "3.25", "0.003", "<0.001", "***"]
    assert list(shown.iloc[1]) == ["28", "-0.250", "0.125", "-0.375 [-0.500, -0.250]", "0.200",
                                   "-1.50", "0.145", "0.200", ""]
    with pytest.raises(ValueError, match="p_corrected"):
        tables.comparison_table(df.drop(columns=["p_corrected"]))


def test_out_file_names_each_sides_store_dtype(full, tmp_path, capsys):
    """Issue 38: a float16 run against a float32 run of one model: the --out file says which
    side is which, row by row; the printed table is unchanged (no such column)."""
    half = synthetic.one_run(full, "model-a", "en", layers="-", store_dtype="float16")
    # what half precision did to the vectors: every value moved a little
    moved = half.measures["value"] + np.random.default_rng(5).normal(0, 1e-3, len(half.measures))
    half = dataclasses.replace(half, measures=half.measures.assign(value=moved))
    full_precision = synthetic.one_run(full, "model-a", "en", layers="-")
    a, b = half.to_parquet(tmp_path / "half"), full_precision.to_parquet(tmp_path / "single")
    assert main(["compare", str(a), str(b), "--n-boot", "50", "--quiet",
                 "--out", str(tmp_path / "cmp.csv")]) == 0
    printed = capsys.readouterr().out
    got = pd.read_csv(tmp_path / "cmp.csv")
    assert len(got) == 2 * 2 * 2 * 11
    assert set(got["store_dtype_a"]) == {"float16"} and set(got["store_dtype_b"]) == {"float32"}
    assert "store_dtype A" not in printed and "store_dtype_a" not in printed
    assert list(got.columns[-2:]) == ["store_dtype_a", "store_dtype_b"]


def test_compare_is_exported_and_its_module_keeps_its_name():
    import importlib
    import importlib.util

    from ncprobe.ncimp.comparison import STAT_COLUMNS, compare

    assert ncprobe.compare is compare and "compare" in ncprobe.__all__
    assert importlib.import_module("ncprobe.ncimp.comparison").STAT_COLUMNS == STAT_COLUMNS
    # the function does not hide a module: no submodule of ncprobe is named compare
    assert importlib.util.find_spec("ncprobe.compare") is None


# ---------------------------------------------------------------------------------------------
# per-class tests: the table and the marks on the figures


def _default_rows(full: Results, **where) -> pd.DataFrame:
    """NC-level raw rows of the default layer views, by hand."""
    m = full.measures
    view = {"model-a": "-", "model-b": "9+10+11+12"}
    keep = ((m["space"] == "raw") & (m["level"] == "nc")
            & (m["layers"] == m["model"].map(view)))
    for k, v in where.items():
        keep &= m[k].astype(str) == v
    return m[keep]


@pytest.mark.slow
def test_class_tests_table_against_scipy_and_a_holm_loop(full):
    tidy = inference.class_tests(full)
    kw = tidy[tidy["test"] == "kruskal-wallis"].reset_index(drop=True)
    mw = tidy[tidy["test"] == "mann-whitney"].reset_index(drop=True)
    # 2 models x 4 conditions x 9 measures shown
    assert len(kw) == 2 * 4 * 9 and len(mw) == 3 * len(kw)
    cond = {"EN-Nat": ("en", "nat"), "EN-Neut": ("en", "neut"), "PT-Nat": ("pt", "nat"),
            "PT-Neut": ("pt", "neut")}
    kw_p, mw_p = [], []
    for _, r in kw.iterrows():
        lang, ctx = cond[r["condition"]]
        rows = _default_rows(full, model=r["model"], lang=lang, context=ctx,
                             measure=r["measure"]).dropna(subset=["value", "cls"])
        groups = [rows.loc[rows["cls"] == c, "value"].to_numpy() for c in ("I", "PC", "C")]
        h = ss.kruskal(*groups)
        assert (r["statistic"], r["p"]) == (pytest.approx(h.statistic), pytest.approx(h.pvalue))
        kw_p.append(h.pvalue)
        for a, b in (("I", "PC"), ("I", "C"), ("PC", "C")):
            row = mw[(mw["model"] == r["model"]) & (mw["condition"] == r["condition"])
                     & (mw["measure"] == r["measure"]) & (mw["cls_a"] == a)
                     & (mw["cls_b"] == b)]
            assert len(row) == 1
            x = rows.loc[rows["cls"] == a, "value"].to_numpy()
            y = rows.loc[rows["cls"] == b, "value"].to_numpy()
            u = ss.mannwhitneyu(x, y, alternative="two-sided")
            wins = sum((xi > yi) + 0.5 * (xi == yi) for xi in x for yi in y)
            got = row.iloc[0]
            assert got["statistic"] == pytest.approx(u.statistic) == pytest.approx(wins)
            assert got["p"] == pytest.approx(u.pvalue)
            mw_p.append(u.pvalue)
            assert got["rank_biserial"] == pytest.approx(2 * wins / (len(x) * len(y)) - 1)
    # the rows are in the loop's order: cells, then the pairs I-PC, I-C, PC-C
    np.testing.assert_allclose(kw["p_corrected"], holm(kw_p), rtol=1e-9)
    np.testing.assert_allclose(mw["p_corrected"], holm(mw_p), rtol=1e-9)
    assert list(tidy["significant"]) == list(tidy["p_corrected"] <= 0.05)
    assert tidy.attrs == {"family_kw": len(kw), "family_mw": len(mw), "correct": "holm"}
    kw_p = np.array(kw_p)
    fdr = inference.class_tests(full, correct="fdr_bh")
    from statsmodels.stats.multitest import multipletests
    np.testing.assert_allclose(fdr.loc[fdr["test"] == "kruskal-wallis", "p_corrected"],
                               multipletests(kw_p, method="fdr_bh")[1], rtol=1e-12)


@pytest.mark.slow
def test_class_tests_display_and_report_table(full, tmp_path, monkeypatch):
    shown = tables.class_tests_table(full)
    assert list(shown.index.names) == ["model", "level", "condition", "measure"]
    assert len(shown) == 2 * 4 * 9
    assert list(shown.columns) == ["n I/PC/C", "H", "p (H)", "r I-PC", "p I-PC", "r I-C",
                                   "p I-C", "r PC-C", "p PC-C"]
    assert set(shown["n I/PC/C"]) == {"4/4/4"}  # the NC without a class is left out
    assert "Holm-corrected across the 72 Kruskal-Wallis tests" in shown.attrs["note"]
    assert "class_tests" in tables.TABLES
    from ncprobe.ncimp.report import _planned, write_report

    assert {"table_class_tests.md", "table_class_tests.tex"} <= set(_planned(("png",)))
    # the table is the subject: two of the study's figures only, the quickest to draw (the
    # same report logic; every figure of these results is drawn by tests/plots/test_labels.py)
    monkeypatch.setattr(plots, "FIGURES", synthetic.quick_figures())
    written = {p.name for p in write_report(full, tmp_path / "rep", formats=("png",), dpi=30)}
    assert {"table_class_tests.md", "table_class_tests.tex"} <= written
    md = (tmp_path / "rep" / "table_class_tests.md").read_text()
    assert md.count("\n| model-") == len(shown)


def _separated(full: Results) -> Results:
    """model-a, English, one level: 20 NCs per class whose measures separate the classes as
    chosen (every other table as in ``full``)."""
    rng = np.random.default_rng(7)
    n = 20
    cls = np.repeat(["I", "PC", "C"], n)
    same = rng.permutation(np.tile(np.linspace(0.0, 1.0, n), 3))  # one set of values
    base = np.tile(np.linspace(0.0, 1.0, n), 3)
    values = {
        # every pair differs
        "A_Syn|WordsSyn": base + np.repeat([2.0, 1.0, 0.0], n),
        # no pair differs: each class holds the same values
        "A_Syn|Rand": np.tile(np.linspace(0.0, 1.0, n), 3),
        # only I differs from the others (PC and C the same values)
        "Sim_R|Syn": base + np.repeat([3.0, 0.0, 0.0], n),
        "Sim_R|WordsSyn": same,
        # only C differs from the others (I and PC the same values)
        "Sim_R|Syn/Sim_R|WordsSyn": base + np.repeat([0.0, 0.0, 2.0], n),
    }
    rows = []
    for ctx in ("nat", "neut"):
        for measure, v in values.items():
            rows.append(pd.DataFrame({
                "model": "model-a", "lang": "en", "space": "raw", "layers": "-",
                "level": "nc", "context": ctx, "nc": [f"nc {i}" for i in range(3 * n)],
                "measure": measure, "value": v + (0.0 if ctx == "nat" else 0.01),
                "cls": cls, "gold": np.repeat([1.0, 2.5, 4.0], n)}))
    measures = pd.concat(rows, ignore_index=True)
    for c in ("model", "lang", "space", "layers", "level", "context", "nc", "cls"):
        measures[c] = measures[c].astype("string")
    return dataclasses.replace(full, measures=measures)


def _expected_pairs(res: Results) -> set[tuple[str, str, str, str]]:
    """(measure, condition, cls_a, cls_b) of the significant pairs: scipy and a Holm loop
    over every pair of every measure and condition in the table."""
    m = res.measures
    keys, ps = [], []
    for (ctx, measure), g in m.groupby(["context", "measure"], sort=False):
        for a, b in (("I", "PC"), ("I", "C"), ("PC", "C")):
            x = g.loc[g["cls"] == a, "value"].to_numpy()
            y = g.loc[g["cls"] == b, "value"].to_numpy()
            keys.append((measure, f"EN-{ctx.capitalize()}", a, b))
            ps.append(ss.mannwhitneyu(x, y, alternative="two-sided").pvalue)
    return {k for k, p in zip(keys, holm(ps), strict=True) if p <= 0.05}


def _marks(fig) -> set[tuple[str, str, str, str]]:
    found = set()
    for t in fig.findobj(Text):
        gid = t.get_gid() or ""
        if gid.startswith("class-test;") and t.get_text():
            found.add(tuple(gid.split(";")[1:]))
    return found


@pytest.mark.parametrize("name, measures", [
    ("affinity_by_class", ["A_Syn|WordsSyn", "A_Syn|Rand"]),
    ("simr_syn_by_class", ["Sim_R|Syn"]),
    ("simr_wordssyn_by_class", ["Sim_R|WordsSyn"]),
    ("ratio_by_class", ["Sim_R|Syn/Sim_R|WordsSyn"]),
])
def test_class_figures_mark_exactly_the_significant_pairs(full, name, measures):
    res = _separated(full)
    expected = {k for k in _expected_pairs(res) if k[0] in measures}
    # the data were made so: the pairs that differ are significant, the others not
    want = {"A_Syn|WordsSyn": {("I", "PC"), ("I", "C"), ("PC", "C")}, "A_Syn|Rand": set(),
            "Sim_R|Syn": {("I", "PC"), ("I", "C")}, "Sim_R|WordsSyn": set(),
            "Sim_R|Syn/Sim_R|WordsSyn": {("I", "C"), ("PC", "C")}}
    assert expected == {(m, c, a, b) for m in measures for c in ("EN-Nat", "EN-Neut")
                        for a, b in want[m]}
    fig, notes = plots.FIGURES[name](res, return_notes=True)
    assert _marks(fig) == expected
    assert any("Mann-Whitney" in n and "Holm" in n for n in notes)
    # the marks are readable: 8 pt, inside the figure, over their panel, none overlapping
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    texts = [t for t in fig.findobj(Text) if (t.get_gid() or "").startswith("class-test;")]
    for t in texts:
        assert t.get_fontsize() >= 8
        assert t.get_text() == "***"  # p of 20 vs 20 separated values is far below 0.001
    boxes = [t.get_window_extent(renderer) for t in texts]
    for a, b in itertools.combinations(boxes, 2):
        assert not a.overlaps(b)
    for ax in fig.axes:
        for t in ax.texts:
            if (t.get_gid() or "").startswith("class-test;"):
                bb, ab = t.get_window_extent(renderer), ax.get_window_extent(renderer)
                assert ab.x0 <= bb.x0 and bb.x1 <= ab.x1 and bb.y1 <= ab.y1 + 1
                # above every box and whisker of its panel
                tops = [ln.get_window_extent(renderer).y1 for ln in ax.lines
                        if not (ln.get_gid() or "").startswith("class-test;")
                        and len(ln.get_xdata())]
                assert bb.y0 >= max(tops) - 1
    fig.savefig(io.BytesIO(), format="png")


def test_no_marks_where_nothing_survives_the_correction(full):
    # 4 NCs per class: the least exact p is 2/70, and Holm over 216 pairs leaves none
    fig, notes = plots.fig_affinity_by_class(full, return_notes=True)
    assert _marks(fig) == set()
    assert any("216 pairs" in n for n in notes)
    expected = {k for k in inference.class_tests(full).itertuples() if k.significant}
    assert expected == set()
