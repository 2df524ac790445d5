"""Statistics on results (ncprobe.ncimp.inference), the significance vocabulary
(ncprobe.significance) and the report's view and specs (ncprobe.ncimp.view): the per-class tests'
memo never serves a stale answer, a correction is checked in one place, and every spec names
options its builder takes."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from scipy.stats import mannwhitneyu

from ncprobe import schema, significance, stats
from ncprobe.errors import UsageError
from ncprobe.ncimp import figures as plots
from ncprobe.ncimp import inference, tables
from ncprobe.ncimp.selection import select
from ncprobe.ncimp.view import VIEW_FIELDS, Spec, View

from .. import synthetic


@pytest.fixture(scope="module")
def res():
    return synthetic.build()


@pytest.mark.slow
def test_class_tests_follow_an_in_place_edit_of_the_measures() -> None:
    res = synthetic.build()  # edited below: not the shared fixture
    first = inference.class_tests(res, correct="none")
    row = first[(first["test"] == "mann-whitney") & (first["measure"] == "syn")].iloc[0]
    # make the first pair's classes as far apart as they can be, in place
    m = res.measures
    pick = ((m["model"] == row["model"]) & (m["lang"] == row["lang"])
            & (m["layers"] == row["layers"]) & (m["level"] == row["level"])
            & (m["space"] == "raw") & (m["measure"].astype(str) == "syn"))
    m.loc[pick & (m["cls"] == row["cls_a"]), "value"] = 10.0 + np.arange(
        int((pick & (m["cls"] == row["cls_a"])).sum()))
    m.loc[pick & (m["cls"] == row["cls_b"]), "value"] = -10.0 - np.arange(
        int((pick & (m["cls"] == row["cls_b"])).sum()))
    again = inference.class_tests(res, correct="none")
    new = again[(again["test"] == "mann-whitney") & (again["measure"] == "syn")
                & (again["model"] == row["model"]) & (again["condition"] == row["condition"])
                & (again["cls_a"] == row["cls_a"]) & (again["cls_b"] == row["cls_b"])].iloc[0]
    sel = select(res.measures, measures=["syn"], level="nc")
    rows = sel[(sel["model"] == row["model"]) & (sel["condition"].astype(str) == row["condition"])
               & (sel["layers"] == row["layers"])]
    a = rows.loc[rows["cls"] == row["cls_a"], "value"].to_numpy(dtype=float)
    b = rows.loc[rows["cls"] == row["cls_b"], "value"].to_numpy(dtype=float)
    expected = mannwhitneyu(a, b, alternative="two-sided")
    assert new["statistic"] == pytest.approx(float(expected.statistic))
    assert new["p"] == pytest.approx(float(expected.pvalue))
    assert new["rank_biserial"] == pytest.approx(1.0)  # every value of cls_a is larger
    assert new["statistic"] != row["statistic"] or new["p"] != row["p"]


@pytest.mark.slow
def test_class_tests_answers_are_copies(res) -> None:
    first = inference.class_tests(res)
    first["p"] = -1.0
    first.attrs["family_mw"] = -1
    again = inference.class_tests(res)
    assert (again["p"].dropna() >= 0).all()
    assert again.attrs["family_mw"] > 0


def test_fingerprint_sees_values_and_dtypes(res) -> None:
    m = res.measures
    base = inference.fingerprint(m)
    assert inference.fingerprint(m.copy()) == base
    edited = m.copy()
    edited.loc[edited.index[0], "value"] = edited["value"].iloc[0] + 1.0
    assert inference.fingerprint(edited) != base
    assert inference.fingerprint(m.astype({"value": "float32"})) != base


def test_ratio_quartiles_are_numpy_percentiles(res) -> None:
    q = inference.ratio_quartiles(res)
    assert plots.ratio_quartiles is inference.ratio_quartiles
    r = q.iloc[0]
    sel = select(res.measures, measures=[schema.RATIO], level="nc")
    v = sel[(sel["model"] == r["model"]) & (sel["condition"].astype(str) == r["condition"])]
    v = v["value"].dropna().to_numpy(dtype=float)
    assert r["n"] == len(v) > 0
    assert [r["q1"], r["median"], r["q3"]] == pytest.approx(np.percentile(v, [25, 50, 75]))


def test_correlogram_correction_is_one_family_of_lower_cells() -> None:
    rng = np.random.default_rng(0)
    panels = []
    for n in (3, 4):
        p = rng.uniform(0, 0.2, (n, n))
        p = (p + p.T) / 2
        np.fill_diagonal(p, 0.0)
        panels.append(p)
    fixed, n = inference.correct_correlogram(panels, "holm")
    lower = np.concatenate([p[np.tril_indices(len(p), k=-1)] for p in panels])
    assert n == len(lower) == 3 + 6
    expected = stats.correct(lower, "holm")
    got = np.concatenate([q[np.tril_indices(len(q), k=-1)] for q in fixed])
    assert got == pytest.approx(expected)
    for q in fixed:
        assert np.allclose(q, q.T, equal_nan=True) and np.isnan(np.diag(q)).all()


@pytest.mark.parametrize("call", [
    lambda r: significance.check_correction("bonferroni"),
    lambda r: stats.correct([0.1], "bonferroni"),  # type: ignore[arg-type]
    lambda r: significance.correction_note("bonferroni", 3),
    lambda r: inference.class_tests(r, correct="bonferroni"),  # type: ignore[arg-type]
    lambda r: tables.nc_correlations(r, correct="bonferroni"),
    lambda r: inference.correct_correlogram([], "bonferroni"),  # type: ignore[arg-type]
])
def test_an_unknown_correction_is_refused_with_one_message(res, call) -> None:
    with pytest.raises(UsageError) as e:
        call(res)
    assert str(e.value) == ("unknown multiple-comparison correction 'bonferroni'; choose from "
                            + ", ".join(schema.CORRECTIONS))


def test_stars_and_their_note() -> None:
    assert [significance.stars(p) for p in (0.0005, 0.005, 0.05, 0.051, float("nan"))] == [
        "***", "**", "*", "", ""]
    assert significance.STARS_NOTE == (f"* p <= {significance.ALPHA:g}, ** p <= 0.01, "
                                       "*** p <= 0.001")
    assert set(significance.CORRECTION_NAMES) == set(schema.CORRECTIONS)
    assert set(significance.SHORT_CORRECTION_NAMES) == set(schema.CORRECTIONS) - {"none"}


@pytest.mark.parametrize("spec", plots.FIGURE_SPECS + tables.TABLE_SPECS,
                         ids=lambda s: s.name)
def test_every_spec_takes_only_options_its_builder_has(spec: Spec) -> None:
    params = inspect.signature(spec.build).parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    for name in spec.takes:
        assert name in VIEW_FIELDS
        assert takes_any or name in params, (spec.name, name)


def test_specs_are_the_study_s_figures_and_tables_then_ncprobe_s() -> None:
    figures = [s.name for s in plots.FIGURE_SPECS]
    assert figures == list(schema.PAPER_FIGURES) + ["layers"]
    assert [s.name for s in tables.TABLE_SPECS] == list(schema.PAPER_TABLES) + list(
        schema.ADDED_TABLES)
    plain = View()
    assert [s.name for s in plots.FIGURE_SPECS if s.shown(plain)] == list(schema.PAPER_FIGURES)
    assert all(s.shown(View(layerwise=True)) for s in plots.FIGURE_SPECS + tables.TABLE_SPECS)
    with pytest.raises(ValueError, match="no field of View"):
        Spec("x", len, ("colour",))


def test_shared_docstring_paragraphs_are_filled() -> None:
    for name, draw in {**plots.FIGURES, **plots.ADDED_FIGURES}.items():
        doc = draw.__doc__ or ""
        assert "{" not in doc.replace("{fig", ""), name
        assert "``return_notes=True`` returns ``(fig, notes)``." in doc, name
