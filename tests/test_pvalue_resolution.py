"""Issue 28: resampling p-values with the resolution their correction needs, and correction
families that do not change with the report.

Expected values are derived here: the sign-flip p of idioms that all differ in one direction
(only the identity and its mirror are as extreme: 2 / 2^k), a sign-flip p counted with
binomial coefficients, the least p of B random flips (1 / (B + 1)) and of a two-sided
bootstrap (2 / (B + 1)), Holm's step-down and Benjamini-Hochberg's step-up written out, the
family sizes counted from the rows. The new API is imported inside each test, so that each
test fails on its own on code without it."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ncprobe.cli import main

from .by_hand import holm
from .synthetic import only

IDIOMS = ["in the dock", "make tracks", "play for time", "take a dive", "lift a finger",
          "song and dance"]


def frame(model: str, mode: str, per_idiom: dict[str, list[float]]) -> pd.DataFrame:
    """One cell: the queries of each idiom (r_precision = the value, ndcg@10 = the value +
    0.1), alternately literal and idiomatic."""
    rows = []
    for idiom, vals in per_idiom.items():
        for i, v in enumerate(vals):
            rows.append({"model": model, "mode": mode, "query": f"{idiom}-{i}", "idiom": idiom,
                         "subject": "s", "usage": "literal" if i % 2 == 0 else "idiomatic",
                         "relevant": 40, "r_precision": v, "ndcg@10": v + 0.1})
    return pd.DataFrame(rows)


def one_direction(k: int) -> pd.DataFrame:
    """``k`` idioms of four queries; mode span beats mode sentence on every query (by 0.05 to
    0.2), so every idiom's summed difference is positive, for every usage and metric."""
    rng = np.random.default_rng(k)
    base = {f"i{j:02d}": list(rng.uniform(0.2, 0.6, 4)) for j in range(k)}
    better = {name: [v + rng.uniform(0.05, 0.2) for v in vals] for name, vals in base.items()}
    return pd.concat([frame("m", "span", better), frame("m", "sentence", base)],
                     ignore_index=True)




def resolution_warnings(caught) -> list[str]:
    from ncprobe.significance import ResolutionWarning

    return [str(w.message) for w in caught if issubclass(w.category, ResolutionWarning)]


# --- the sign-flip test ------------------------------------------------------------------------


def test_one_direction_on_every_idiom_is_exact_two_over_two_to_the_k() -> None:
    """10 idioms, all positive: of the 2^10 sign patterns only all-plus and all-minus reach
    |sum|, so p = 2 / 1024 exactly. The automatic flips of a family of 6 tests (6,000) are
    more than 2^10: every pattern is enumerated (the old default, 1,000 random flips, gave
    an estimate of about 3 / 1001)."""
    from ncprobe.retrieval.stats import paired_tests

    out = paired_tests(one_direction(10))
    assert len(out) == 6
    np.testing.assert_array_equal(out["p"], np.full(6, 2 / 1024))
    assert not out["p_bound"].any() and not out["p_corrected_bound"].any()
    assert (out["test"] == "sign-flip over idioms (exact, all 1,024 sign patterns)").all()
    np.testing.assert_allclose(out["p_corrected"], np.full(6, 6 * 2 / 1024), rtol=1e-12)


def test_automatic_flips_resolve_the_holm_family() -> None:
    """20 idioms, all positive: the exact p is 2 / 2^20, below anything B random flips can
    show; a family of m = 6 tests gets B = 1,000 m = 6,000 flips, so each p is the bound
    1 / 6001 and Holm's corrected p, 6 / 6001 < 0.001, earns ***. With the old 1,000 flips
    it read 0.006 (**), whatever the true p."""
    from ncprobe.retrieval.stats import paired_tests
    from ncprobe.significance import p_text, stars

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = paired_tests(one_direction(20))
    assert resolution_warnings(caught) == []  # resolved: nothing to warn about
    assert (out["test"] == "sign-flip over idioms (6,000 random flips)").all()
    np.testing.assert_allclose(out["p"], np.full(6, 1 / 6001), rtol=1e-12)
    assert out["p_bound"].all() and out["p_corrected_bound"].all()
    np.testing.assert_allclose(out["p_corrected"], np.full(6, 6 / 6001), rtol=1e-12)
    assert (out["p_corrected"] <= 0.001).all() and out["significant"].all()
    assert {stars(p, b) for p, b in zip(out["p_corrected"], out["p_corrected_bound"],
                                         strict=True)} == {"***"}
    assert {p_text(p, b) for p, b in zip(out["p_corrected"], out["p_corrected_bound"],
                                          strict=True)} == {"< 0.001"}


def test_too_few_flips_leave_a_bound_that_is_marked_and_warned_about() -> None:
    """200 flips for the same family: p is the bound 1/201 and Holm's 6/201 = 0.0299 earns
    one star only, shown as '< 0.03'; the warning names the 6 rows and the 6,000 flips that
    would resolve them."""
    from ncprobe.retrieval.report import paired_tests_table
    from ncprobe.retrieval.stats import paired_tests
    from ncprobe.significance import ResolutionWarning

    with pytest.warns(ResolutionWarning, match=r"6 of the 6 paired tests.*n_flips=6,000"):
        out = paired_tests(one_direction(20), n_flips=200)
    np.testing.assert_allclose(out["p"], np.full(6, 1 / 201), rtol=1e-12)
    np.testing.assert_allclose(out["p_corrected"], np.full(6, 6 / 201), rtol=1e-12)
    assert out["p_corrected_bound"].all()
    shown = paired_tests_table(out)
    assert set(shown["sig."]) == {"*"}  # 0.0299: never credited with ** or ***
    assert set(shown["p corrected"]) == {"< 0.03"} and set(shown["p"]) == {"< 0.005"}
    assert "a bound" in shown.attrs["note"]


def test_exact_enumeration_in_chunks_counts_every_pattern() -> None:
    """18 clusters (262,144 patterns, enumerated in several chunks): 17 differences of 1 and
    one of -5.5, observed |sum| = 11.5. With j minus signs among the seventeen ones and t the
    sign of the last, |(17 - 2j) + 5.5 t| >= 11.5 is counted with binomial coefficients."""
    from ncprobe.stats import _CHUNK, sign_flip

    k = 18
    assert 2 ** k * k > _CHUNK  # more than one chunk
    d = np.r_[np.ones(k - 1), -5.5]
    hits = sum(math.comb(k - 1, j) for j in range(k) for t in (1, -1)
               if abs((k - 1 - 2 * j) - 5.5 * t) >= 11.5 - 1e-9)
    got = sign_flip([d], 2 ** k)[0]
    assert got.exact and got.patterns == 2 ** k and not got.bound.any()
    assert got.p[0] == hits / 2 ** k
    # random flips: a p of (1 + hits) / (B + 1), seeded
    rand = sign_flip([d], 5000, seed=3)[0]
    assert not rand.exact and rand.describe() == "sign-flip over idioms (5,000 random flips)"
    assert (rand.p[0] * 5001) == pytest.approx(round(rand.p[0] * 5001), abs=1e-9)
    assert rand.p[0] == sign_flip([d], 5000, seed=3)[0].p[0]
    assert abs(rand.p[0] - hits / 2 ** k) < 0.03


def test_the_automatic_number_of_flips() -> None:
    """m tests under Holm: the least corrected p of B flips is m / (B + 1), so B = 1,000 m
    makes it < 0.001 and 1,000 m - 2 would not; BH alike (its rank-1 factor is m); none
    needs 1,000; beyond 2,000,000 the choice is capped and says so."""
    from ncprobe.stats import MAX_FLIPS, choose_flips, resamples_for

    assert resamples_for(42) == 42_000 and 42 / (42_000 + 1) <= 0.001 < 42 / (41_998 + 1)
    assert resamples_for(42, "fdr_bh") == 42_000 and resamples_for(42, "none") == 1000
    assert resamples_for(44, per=2) == 88_000  # compare's bootstrap: 2 m / (B + 1)
    assert choose_flips("auto", 42) == (42_000, False)
    assert choose_flips(500, 42) == (500, False)
    assert MAX_FLIPS == 2_000_000 and choose_flips("auto", 3000) == (MAX_FLIPS, True)


# --- corrections of bounds, display ------------------------------------------------------------


def test_correct_bounded_by_hand() -> None:
    """A corrected value is a bound where the bounds (true p anywhere in (0, value]) could
    still change it: compared with the correction of the bounds set to 0."""
    from ncprobe.stats import correct_bounded

    # Holm, sorted 0.002 (bound), 0.03, 0.2: 3 x 0.002, 2 x 0.03, max(0.06, 0.2); with the
    # bound at 0: 0, 0.06, 0.2 -> only the first is a bound
    q, b = correct_bounded([0.002, 0.03, 0.2], [True, False, False], "holm")
    np.testing.assert_allclose(q, [0.006, 0.06, 0.2], rtol=1e-12)
    assert b.tolist() == [True, False, False]
    # a bound above an exact p: 0.01 (exact), 0.02 (bound) give 0.02, 0.02; with the bound at
    # 0 the exact one moves to rank 2 and reads 0.01: both corrected values are bounds
    q, b = correct_bounded([0.01, 0.02], [False, True], "holm")
    np.testing.assert_allclose(q, [0.02, 0.02], rtol=1e-12)
    assert b.tolist() == [True, True]
    # Benjamini-Hochberg, sorted 0.001 (bound), 0.03, 0.04: 3 x 0.001 / 1, min(0.03 x 3 / 2,
    # 0.04), 0.04; with the bound at 0 the other two are unchanged
    q, b = correct_bounded([0.001, 0.04, 0.03], [True, False, False], "fdr_bh")
    np.testing.assert_allclose(q, [0.003, 0.04, 0.04], rtol=1e-12)
    assert b.tolist() == [True, False, False]
    # none: each keeps its own flag; NaN is never a bound
    q, b = correct_bounded([0.001, math.nan], [True, True], "none")
    assert b.tolist() == [True, False] and math.isnan(q[1])


def test_a_bound_is_shown_as_one_and_never_credited_with_more_stars() -> None:
    from ncprobe.significance import p_text, stars

    assert p_text(1 / 241, bound=True) == "< 0.0042"  # 0.0041494 rounded up, never down
    assert p_text(0.0042, bound=True) == "< 0.0042"
    assert p_text(1 / 1001, bound=True) == "< 0.001"
    assert p_text(0.0123) == "0.012" and p_text(0.0004) == "<0.001"  # exact: as before
    assert stars(0.006, bound=True) == "**" and stars(0.0009, bound=True) == "***"
    assert stars(0.06, bound=True) == ""


def test_a_floored_bootstrap_p_is_a_bound() -> None:
    """a is the gold plus a little noise, b unrelated: every resample's rho difference is
    above 0, so k = 0 and p = 2 (0 + 1) / (B + 1), the floor, a bound; a difference near 0
    is no bound."""
    from ncprobe.stats import paired_bootstrap_rho_diff

    rng = np.random.default_rng(0)
    gold = rng.normal(size=80)
    a = gold + rng.normal(scale=0.1, size=80)
    b = rng.normal(size=80)
    d = paired_bootstrap_rho_diff(a, b, gold, n_boot=499, seed=1)
    assert d.p == pytest.approx(2 / 500, abs=1e-15) and d.p_bound
    same = paired_bootstrap_rho_diff(a, a + rng.normal(scale=1e-3, size=80), gold,
                                     n_boot=499, seed=1)
    assert not same.p_bound and same.p > 2 / 500


# --- compare (NCIMP) ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def synthetic_results():
    from . import synthetic

    return synthetic.build()




@pytest.mark.slow
def test_compare_floored_family_is_bound_marked_and_warned(synthetic_results) -> None:
    """100 resamples over a family of m cells: a p no resample crossed is 2/101, Holm makes
    it a bound of at most 2m/101; it is marked as a bound, shown '< ...', given only the
    stars its value earns, and warned about with the 2,000 m resamples that resolve it."""
    from ncprobe.ncimp.comparison import compare
    from ncprobe.ncimp.tables import comparison_table
    from ncprobe.significance import p_text, stars

    # the cells of 12 NCs where the synthetic runs differ most (a few floored at 100)
    where = {"lang": "pt", "space": "standardised", "level": "sent"}
    static = only(synthetic_results, model="model-a", **where)
    layer12 = only(synthetic_results, model="model-b", layers="12", **where)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = compare(static, layer12, n_boot=100)
    m = int(got["p_boot"].notna().sum())
    assert (got["family_size"] == m).all() and got["family"].nunique() == 1
    floored = got["p_boot_bound"].to_numpy(dtype=bool)
    assert floored.any()
    np.testing.assert_allclose(got.loc[floored, "p_boot"], 2 / 101, rtol=1e-12)
    assert got.loc[floored, "p_corrected_bound"].all()
    want = holm(got["p_boot"].tolist())
    np.testing.assert_allclose(got["p_corrected"], want, rtol=1e-12)
    shown = comparison_table(got)
    for i in np.flatnonzero(got["p_corrected_bound"].to_numpy(dtype=bool)):
        p = got["p_corrected"].iloc[i]
        assert shown["p corrected"].iloc[i] == p_text(p, True)
        assert shown["p corrected"].iloc[i].startswith("< ")
        assert shown["sig."].iloc[i] == stars(p)  # never more than the bound earns
    above = int(((got["p_corrected"] > 0.001) & got["p_corrected_bound"]).sum())
    said = resolution_warnings(caught)
    assert above > 0 and len(said) == 1
    assert said[0].startswith(f"{above} of the {m} compared cells")
    assert f"n_boot={2000 * m:,}" in said[0]


@pytest.mark.slow
def test_class_tests_name_their_family(synthetic_results) -> None:
    """Kruskal-Wallis and Mann-Whitney p-values are scipy's (no floor); each row names the
    family it was corrected in and its size, counted from the rows."""
    from ncprobe.ncimp.inference import class_tests
    from ncprobe.stats import class_tests as class_tests_of_one

    got = class_tests(synthetic_results)
    for kind in ("kruskal-wallis", "mann-whitney"):
        rows = got[got["test"] == kind]
        assert rows["family"].nunique() == 1 and "this table" in rows["family"].iloc[0]
        assert (rows["family_size"] == int(rows["p"].notna().sum())).all()
    one = class_tests_of_one([1, 2, 3, 2, 4, 5, 6, 7], ["I", "I", "I", "PC", "PC", "C", "C", "C"],
                             correct_method="holm")
    assert one["family_size"].tolist() == [1, 3, 3, 3]
    assert one["family"].iloc[0] != one["family"].iloc[1]


# --- families of retrieval tests across reports ----------------------------------------------


@pytest.mark.slow
def test_a_runs_corrected_p_does_not_depend_on_what_else_is_reported(raw_dir, tiny_st_dir,
                                                                      tmp_path) -> None:
    """bm25 on six idioms (X) and a tiny sentence-transformers model (Y): X's tests read the
    same corrected p in X's own report and in a report of X and Y, one family of 6 tests;
    the models across X and Y are a family of their own, Holm-corrected over their own 6
    rows; the tests table names each family with its size."""
    from ncprobe.retrieval.probe import retrieve
    from ncprobe.retrieval.results import RetrievalResults

    x, y = tmp_path / "x", tmp_path / "y"
    assert main(["retrieve", "--model", "bm25", "--split", "val", "--idioms", ",".join(IDIOMS),
                 "--n-boot", "50", "--quiet", "--out", str(x), "--data-dir",
                 str(raw_dir)]) == 0
    retrieve(models=str(tiny_st_dir), modes="sentence", split="val", idioms=IDIOMS,
             data_dir=raw_dir, cache_dir=tmp_path / "cache", n_boot=50, progress=False, out=y)
    own = RetrievalResults.load_many([x]).tests
    joined = RetrievalResults.load_many([x, y]).tests
    assert (own["family"] == "run bm25: its modes and models").all()
    assert (own["family_size"] == 6).all()
    again = joined[joined["family"] == "run bm25: its modes and models"].reset_index(drop=True)
    pd.testing.assert_frame_equal(again, own.reset_index(drop=True), check_dtype=False)
    across = joined[joined["family"] == f"models across runs: {x}, {y}"]
    assert len(across) == 6 and (across["family_size"] == 6).all()
    assert set(across["model_a"]) == {"bm25"} and set(across["mode_a"]) == {"sentence"}
    np.testing.assert_allclose(across["p_corrected"], holm(across["p"].tolist()), rtol=1e-12)
    # every family with a p: 6 for bm25, the tiny model's (no second mode: none), 6 across
    assert len(joined) == 12
    assert main(["report", str(x), str(y), "--out", str(tmp_path / "rep"), "--format", "png",
                 "--quiet"]) == 0
    text = Path(tmp_path / "rep" / "table_retrieval_tests.md").read_text()
    assert "**Family: run bm25: its modes and models** (6 tests" in text
    assert f"**Family: models across runs: {x}, {y}** (6 tests" in text
    index = Path(tmp_path / "rep" / "README.md").read_text()
    assert "2 families, each corrected on its own" in index
    # compare X Y: the same family, so the same corrected p as the joined report's
    assert main(["compare", str(x), str(y), "--n-boot", "50", "--quiet", "--out",
                 str(tmp_path / "cmp.csv")]) == 0
    cmp = pd.read_csv(tmp_path / "cmp.csv")
    assert (cmp["family"] == f"models across runs: {x}, {y}").all()
    np.testing.assert_allclose(cmp["p_corrected"], across["p_corrected"], rtol=1e-12)


