"""ncprobe.compare: differences of rho between two runs or conditions, checked against scipy
and statsmodels on small synthetic results."""

from __future__ import annotations

import logging
import math

import numpy as np
import pandas as pd
import pytest
import scipy.stats as ss
from statsmodels.stats.multitest import multipletests

from ncprobe.errors import UsageError
from ncprobe.ncimp.comparison import SIDE_COLUMNS, STAT_COLUMNS, compare
from ncprobe.ncimp.results import Results
from ncprobe.stats import paired_bootstrap_rho_diff, williams_t

from .. import synthetic
from ..synthetic import only

N_BOOT = 200




@pytest.fixture(scope="module")
def res() -> Results:
    return synthetic.build()


@pytest.fixture(scope="module")
def static(res) -> Results:
    return only(res, model="model-a")


@pytest.fixture(scope="module")
def layer12(res) -> Results:
    return only(res, model="model-b", layers="12")


def _side(res: Results, **where: str) -> pd.DataFrame:
    m = res.measures
    mask = pd.Series(True, index=m.index)
    for col, value in where.items():
        mask &= m[col].astype(str) == value
    return m[mask][["lang", "nc", "value", "gold"]]


def _cells(res: Results, keys: list[str]) -> dict[tuple, pd.DataFrame]:
    """:func:`_side` of every cell at once: the rows of ``res`` by their values of ``keys``
    (as strings), ``(value, ...) -> rows`` in table order (one pass, for tests that read
    every cell)."""
    m = res.measures
    by = m.assign(**{col: m[col].astype(str) for col in keys})
    return {key: m.loc[g.index, ["lang", "nc", "value", "gold"]]
            for key, g in by.groupby(keys, sort=False)}


def _expected(a: pd.DataFrame, b: pd.DataFrame) -> dict:
    """n, rho_a, rho_b, r_ab of two sides' rows of one cell, paired on (lang, nc) by hand."""
    both = a.merge(b, on=["lang", "nc"], suffixes=("_a", "_b"))
    both = both.dropna(subset=["value_a", "value_b", "gold_a"])
    return {"n": len(both),
            "rho_a": ss.spearmanr(both["value_a"], both["gold_a"]).statistic,
            "rho_b": ss.spearmanr(both["value_b"], both["gold_a"]).statistic,
            "r_ab": ss.spearmanr(both["value_a"], both["value_b"]).statistic,
            "frame": both}


@pytest.mark.slow
def test_two_models_every_cell_against_scipy(static, layer12):
    got = compare(static, layer12, n_boot=N_BOOT, seed=3)
    keys = ["lang", "space", "level", "context", "measure"]
    assert list(got.columns) == (["model_a", "model_b", "layers_a", "layers_b"] + keys
                                 + list(STAT_COLUMNS) + list(SIDE_COLUMNS))
    # every cell of the synthetic runs: 2 langs x 2 spaces x 2 levels x 2 contexts x 11
    assert len(got) == 2 * 2 * 2 * 2 * 11
    assert set(got["model_a"]) == {"model-a"} and set(got["model_b"]) == {"model-b"}
    assert set(got["layers_a"]) == {"-"} and set(got["layers_b"]) == {"12"}
    assert not got.duplicated(keys).any()
    cells_a, cells_b = _cells(static, keys), _cells(layer12, keys)
    first = {k: got.iloc[0][k] for k in keys}  # the cells are _side's rows, cell by cell
    pd.testing.assert_frame_equal(cells_a[tuple(map(str, first.values()))],
                                  _side(static, **first))
    for _, r in got.iterrows():
        cell = tuple(str(r[k]) for k in keys)
        want = _expected(cells_a[cell], cells_b[cell])
        # English: 13 NCs, one without a gold score; Portuguese: 12
        assert r["n"] == want["n"] == 12
        assert r["rho_a"] == pytest.approx(want["rho_a"], abs=1e-12)
        assert r["rho_b"] == pytest.approx(want["rho_b"], abs=1e-12)
        assert r["diff"] == pytest.approx(want["rho_a"] - want["rho_b"], abs=1e-12)
        assert r["r_ab"] == pytest.approx(want["r_ab"], abs=1e-12)
        t, p = williams_t(want["rho_a"], want["rho_b"], want["r_ab"], want["n"])
        assert r["williams_t"] == pytest.approx(t, abs=1e-9, nan_ok=True)
        assert r["p_williams"] == pytest.approx(p, abs=1e-9, nan_ok=True)
    # the family of the correction is the whole output
    holm = multipletests(got["p_boot"].to_numpy(), method="holm")[1]
    assert got["p_corrected"].to_numpy() == pytest.approx(holm, abs=1e-15)
    assert got["significant"].tolist() == (holm <= 0.05).tolist()


def test_one_cell_bootstrap_against_an_explicit_loop(static, layer12):
    where = {"lang": "en", "space": "raw", "level": "nc", "context": "nat",
             "measure": "A_Syn|Rand"}
    # a key given one value on one side only: the other side must hold one value of it
    with pytest.raises(UsageError, match="side B holds several: en, pt; select one"):
        compare(static, layer12, select_a=where, n_boot=N_BOOT)
    got = compare(static, layer12, select_a=where, select_b=where, n_boot=N_BOOT, seed=5,
                  correct="none")
    assert len(got) == 1
    r = got.iloc[0]
    assert (r["lang_a"], r["lang_b"], r["measure_a"], r["measure_b"]) == (
        "en", "en", "A_Syn|Rand", "A_Syn|Rand")
    both = _expected(_side(static, **where), _side(layer12, **where))["frame"]
    x, y, g = (both[c].to_numpy(float) for c in ("value_a", "value_b", "gold_a"))
    loop = []
    for i in np.random.default_rng(5).integers(0, len(x), (N_BOOT, len(x))):
        if any(np.all(v[i] == v[i][0]) for v in (x, y, g)):
            continue
        loop.append(ss.spearmanr(x[i], g[i]).statistic - ss.spearmanr(y[i], g[i]).statistic)
    diffs = np.array(loop)
    lo, hi = np.percentile(diffs, [2.5, 97.5])
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((lo, hi), abs=1e-12)
    k = min((diffs <= 0).sum(), (diffs >= 0).sum())
    assert r["p_boot"] == pytest.approx(min(1.0, 2 * (k + 1) / (len(diffs) + 1)), abs=1e-15)
    assert r["p_corrected"] == r["p_boot"]  # correct="none"


def test_self_comparison_of_two_contexts(static):
    got = compare(static, select_a={"context": "nat"}, select_b={"context": "neut"},
                  n_boot=N_BOOT, correct="fdr_bh")
    keys = ["lang", "space", "layers", "level", "measure"]
    assert list(got.columns) == (["model_a", "model_b", "context_a", "context_b"] + keys
                                 + list(STAT_COLUMNS) + list(SIDE_COLUMNS))
    assert len(got) == 2 * 2 * 2 * 11
    assert set(got["context_a"]) == {"nat"} and set(got["context_b"]) == {"neut"}
    cells = _cells(static, ["context", *keys])
    for _, r in got.iterrows():
        cell = tuple(str(r[k]) for k in keys)
        want = _expected(cells[("nat", *cell)], cells[("neut", *cell)])
        assert r["n"] == want["n"]
        assert r["rho_a"] == pytest.approx(want["rho_a"], abs=1e-12)
        assert r["rho_b"] == pytest.approx(want["rho_b"], abs=1e-12)
    bh = multipletests(got["p_boot"].to_numpy(), method="fdr_bh")[1]
    assert got["p_corrected"].to_numpy() == pytest.approx(bh, abs=1e-15)


def test_two_layer_views_of_one_model(res):
    model_b = only(res, model="model-b")
    got = compare(model_b, select_a={"layers": "9+10+11+12"}, select_b={"layers": "12"},
                  n_boot=N_BOOT)
    assert set(got["layers_a"]) == {"9+10+11+12"} and set(got["layers_b"]) == {"12"}
    assert len(got) == 2 * 2 * 2 * 2 * 11


@pytest.mark.slow
def test_output_is_deterministic(static, layer12):
    one = compare(static, layer12, n_boot=N_BOOT, seed=9)
    two = compare(static, layer12, n_boot=N_BOOT, seed=9)
    pd.testing.assert_frame_equal(one, two, check_exact=True)
    other = compare(static, layer12, n_boot=N_BOOT, seed=10)
    assert not np.array_equal(one["ci_low"], other["ci_low"])


def test_nan_values_reduce_the_shared_ncs(static, layer12):
    b = layer12.measures.copy()
    b.loc[(b["nc"] == "grey matter") & (b["measure"] == "syn"), "value"] = np.nan
    gappy = Results(**{**_tables(layer12), "measures": b}, meta=layer12.meta)
    got = compare(static, gappy, n_boot=N_BOOT)
    syn = got[(got["measure"] == "syn") & (got["lang"] == "en")]
    assert (syn["n"] == 11).all()
    assert (got[got["measure"] != "syn"]["n"] == 12).all()


def _tables(res: Results) -> dict:
    return {k: getattr(res, k) for k in ("cosines", "sentences", "measures", "correlations",
                                         "distributions", "lexical_overlap", "rogue",
                                         "standardisation", "ncs")}


def test_a_different_gold_is_refused(static, layer12):
    b = layer12.measures.copy()
    b.loc[b["nc"] == "acid test", "gold"] += 0.5
    other_gold = Results(**{**_tables(layer12), "measures": b}, meta=layer12.meta)
    with pytest.raises(UsageError, match=r"'acid test' \(en\) is 0.55 on side A and 1.05 on "
                                         r"side B.*--gold"):
        compare(static, other_gold, n_boot=N_BOOT)
    b = layer12.measures.copy()
    b.loc[b["nc"] == "big fish", "gold"] = np.nan
    no_gold = Results(**{**_tables(layer12), "measures": b}, meta=layer12.meta)
    with pytest.raises(UsageError, match="'big fish'.* missing on side B"):
        compare(static, no_gold, n_boot=N_BOOT)


def test_bad_selections_and_nothing_shared(res, static, layer12):
    with pytest.raises(UsageError, match="context 'plural' is not in.*nat, neut"):
        compare(static, select_a={"context": "plural"}, select_b={"context": "neut"})
    with pytest.raises(UsageError, match="cannot select on 'probe'"):
        compare(static, layer12, select_a={"probe": "syn"})
    with pytest.raises(UsageError, match="two different selections"):
        compare(static)
    with pytest.raises(UsageError, match="two different selections"):
        compare(static, select_a={"context": "nat"}, select_b={"context": "nat"})
    with pytest.raises(UsageError, match="holds 2 models .*model-a, model-b"):
        compare(res, static)
    # the NCs are paired on (lang, nc): English against Portuguese shares none
    with pytest.raises(UsageError, match="no NC is on both sides"):
        compare(static, layer12, select_a={"lang": "en"}, select_b={"lang": "pt"})
    # layer views named, several on side B, none shared: the error says what each holds
    with pytest.raises(UsageError, match="layers -.*on side A, 9\\+10\\+11\\+12, 12 on side B"):
        compare(static, only(res, model="model-b"), select_b={"layers": ["9+10+11+12", "12"]})
    with pytest.raises(UsageError, match="side B holds several: nat, neut.*select_b"):
        compare(static, select_a={"context": "nat"}, select_b={"measure": ["syn"]})


def test_two_models_without_a_shared_view_compare_on_their_default_views(res, static):
    """Issue 38: a static model (view ``-``) against a transformer holding several views
    (``9+10+11+12`` listed first, then ``12``, then its own sentence embedding put first in
    the table): no option needed; side B is read in its default view, the first layer view
    of the run (the model's own embedding is never the default while it has another)."""
    import dataclasses

    b = only(res, model="model-b")
    m = b.measures
    own = m[m["layers"].astype(str) == "12"].assign(layers="own")  # the own view, first
    with_own = dataclasses.replace(b, measures=pd.concat([own, m], ignore_index=True))
    for side_b in (b, with_own):
        got = compare(static, side_b, n_boot=N_BOOT, seed=2)
        assert set(got["layers_a"]) == {"-"} and set(got["layers_b"]) == {"9+10+11+12"}
        assert len(got) == 2 * 2 * 2 * 2 * 11  # every cell, once
        for _, r in got.head(12).iterrows():
            where = {k: r[k] for k in ("lang", "space", "level", "context", "measure")}
            want = _expected(_side(static, **where), _side(b, layers="9+10+11+12", **where))
            assert r["rho_b"] == pytest.approx(want["rho_b"], abs=1e-12)
            assert r["rho_a"] == pytest.approx(want["rho_a"], abs=1e-12)


def test_messages_name_the_command_lines_options(static, res):
    """Issue 38: ``ncprobe compare``'s hints name its options (--a KEY=VALUE), not the Python
    keywords (select_a)."""
    with pytest.raises(UsageError, match="holds 2 models") as e:
        compare(res, static, options=True)
    assert "--a model=VALUE" in str(e.value) and "select_a" not in str(e.value)
    with pytest.raises(UsageError, match="two different selections") as e:
        compare(static, options=True)
    assert "--a context=nat" in str(e.value) and "select_" not in str(e.value)
    with pytest.raises(UsageError, match="side B holds several: nat, neut") as e:
        compare(static, select_a={"context": "nat"}, select_b={"measure": ["syn"]},
                options=True)
    assert "--b context=VALUE" in str(e.value) and "select_b" not in str(e.value)


def test_holm_with_too_few_resamples_warns(static, layer12, caplog):
    from ncprobe.significance import ResolutionWarning

    with caplog.at_level(logging.WARNING, logger="ncprobe.compare"), \
            pytest.warns(ResolutionWarning, match="n_boot=352,000"):  # 2,000 x 176 cells
        got = compare(static, layer12, n_boot=100)
    assert "no test can be significant" in caplog.text
    # the cells no resample crossed: p at the floor 2/101, a bound, and so after Holm
    floored = got["p_boot_bound"].to_numpy(dtype=bool)
    np.testing.assert_allclose(got.loc[floored, "p_boot"], 2 / 101, rtol=1e-12)
    assert got.loc[floored, "p_corrected_bound"].all()
    assert (got["family_size"] == len(got)).all()
    assert not got["significant"].any()
    # Holm's least corrected p: the least p times the number of tests (at most 1)
    assert math.isclose(min(1.0, got["p_boot"].min() * len(got)), got["p_corrected"].min())


def test_matches_the_stats_function_cell_by_cell(static, layer12):
    got = compare(static, layer12, n_boot=N_BOOT, seed=2, select_a={"level": "nc"},
                  select_b={"level": "nc"})
    r = got.iloc[0]
    where = {k: r[k] for k in ("lang", "space", "context", "measure")}
    both = _expected(_side(static, level="nc", **where),
                     _side(layer12, level="nc", **where))["frame"]
    d = paired_bootstrap_rho_diff(both["value_a"], both["value_b"], both["gold_a"],
                                  n_boot=N_BOOT, seed=2)
    assert (r["diff"], r["ci_low"], r["ci_high"], r["p_boot"]) == (d.diff, d.ci_low,
                                                                   d.ci_high, d.p)


def test_the_same_run_twice_is_refused(layer12) -> None:
    # every difference would be 0: nothing to test, and saying so beats a table of p = 1
    with pytest.raises(UsageError, match="same value for every NC"):
        compare(layer12, layer12, n_boot=N_BOOT)
