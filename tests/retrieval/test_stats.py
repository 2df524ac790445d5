"""Idiom-cluster bootstrap intervals and paired sign-flip tests of IdioLink's metrics
(:mod:`ncprobe.retrieval.stats`), on per-query frames built here with known values.

Expected numbers come from the test itself: means and per-idiom sums by hand, a naive loop
that concatenates the drawn idioms' queries (with the resample scheme the module documents),
the sign-flip p-value enumerated with ``itertools.product``, Holm's step-down written out, the
default pairs listed by hand."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ncprobe.errors import UsageError
from ncprobe.retrieval.stats import USAGES, cluster_intervals, default_pairs, paired_tests

from ..by_hand import holm


def frame(model: str, mode: str, per_idiom: dict[str, list[float]],
          ndcg_shift: float = 0.0) -> pd.DataFrame:
    """One cell: the queries of each idiom (values = r_precision; ndcg@10 = value + shift,
    clipped to [0, 1]), alternately literal and idiomatic, ids ``<idiom>-<i>``."""
    rows = []
    for idiom, vals in per_idiom.items():
        for i, v in enumerate(vals):
            rows.append({"model": model, "mode": mode, "query": f"{idiom}-{i}",
                         "idiom": idiom, "subject": "s",
                         "usage": "literal" if i % 2 == 0 else "idiomatic", "relevant": 40,
                         "r_precision": v, "ndcg@10": min(1.0, max(0.0, v + ndcg_shift))})
    return pd.DataFrame(rows)


def spread_idioms(k: int, offset: float = 0.0) -> dict[str, list[float]]:
    """``k`` idioms of four queries whose means alternate 0.3 / 0.7 (the same spread for
    every ``k``)."""
    out = {}
    for i in range(k):
        m = (0.3 if i % 2 == 0 else 0.7) + offset
        out[f"id{i:03d}"] = [m - 0.1, m + 0.1, m - 0.05, m + 0.05]
    return out


UNEVEN = {"c": [0.1, 0.2, 0.9], "a": [0.5, 0.6], "b": [0.0, 1.0, 0.4, 0.3], "d": [0.8]}


# ---------------------------------------------------------------------------------------------
# cluster_intervals


def test_rows_columns_and_means_by_hand() -> None:
    df = pd.concat([frame("m2", "span", UNEVEN), frame("m1", "sentence", UNEVEN, 0.05)],
                   ignore_index=True)
    out = cluster_intervals(df, n_boot=200)
    assert list(out.columns) == ["model", "mode", "usage", "n", "n_idioms", "r_precision",
                                 "r_precision_lo", "r_precision_hi", "ndcg@10", "ndcg@10_lo",
                                 "ndcg@10_hi"]
    assert list(zip(out["model"], out["mode"], out["usage"], strict=True)) == [
        ("m2", "span", u) for u in USAGES] + [("m1", "sentence", u) for u in USAGES]
    # literal = positions 0, 2 of each idiom: c 0.1 0.9, a 0.5, b 0.0 0.4, d 0.8
    lit = [0.1, 0.9, 0.5, 0.0, 0.4, 0.8]
    idi = [0.2, 0.6, 1.0, 0.3]
    every = lit + idi
    assert out["n"].tolist() == [10, 6, 4] * 2
    assert out["n_idioms"].tolist() == [4, 4, 3] * 2
    for got, want in zip(out["r_precision"][:3], [every, lit, idi], strict=True):
        assert got == pytest.approx(sum(want) / len(want))
    shifted = [min(1.0, v + 0.05) for v in every]
    assert out["ndcg@10"][3] == pytest.approx(sum(shifted) / 10)


def naive_intervals(per_idiom: dict[str, list[float]], n_boot: int, seed: int,
                    level: float) -> tuple[float, float]:
    """The documented resamples, drawn and averaged one at a time: idioms in sorted order,
    ``default_rng(seed).integers(0, k, (n_boot, k))``, each resample's queries concatenated."""
    names = sorted(per_idiom)
    draws = np.random.default_rng(seed).integers(0, len(names), size=(n_boot, len(names)))
    means = []
    for row in draws:
        pooled = [v for j in row for v in per_idiom[names[j]]]
        means.append(sum(pooled) / len(pooled))
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return float(lo), float(hi)


def test_interval_equals_a_naive_resampling_loop() -> None:
    out = cluster_intervals(frame("m", "sentence", UNEVEN), n_boot=300, seed=7, level=0.9)
    lo, hi = naive_intervals(UNEVEN, 300, 7, 0.9)
    assert out["r_precision_lo"][0] == pytest.approx(lo, abs=1e-12)
    assert out["r_precision_hi"][0] == pytest.approx(hi, abs=1e-12)


def test_equal_idiom_means_give_a_degenerate_interval() -> None:
    same = {"x": [0.2, 0.8], "y": [0.5], "z": [0.1, 0.9, 0.5], "w": [0.4, 0.6, 0.3, 0.7]}
    out = cluster_intervals(frame("m", "sentence", same), n_boot=500)
    row = out.iloc[0]
    assert row["r_precision"] == pytest.approx(0.5)
    assert row["r_precision_lo"] == pytest.approx(0.5, abs=1e-12)
    assert row["r_precision_hi"] == pytest.approx(0.5, abs=1e-12)


def test_interval_contains_the_mean_and_narrows_with_more_idioms() -> None:
    widths = []
    for k in (6, 48):
        out = cluster_intervals(frame("m", "sentence", spread_idioms(k)), n_boot=1000)
        row = out.iloc[0]
        assert row["r_precision"] == pytest.approx(0.5)
        assert row["r_precision_lo"] <= row["r_precision"] <= row["r_precision_hi"]
        assert row["r_precision_lo"] < row["r_precision_hi"]
        widths.append(row["r_precision_hi"] - row["r_precision_lo"])
    assert widths[1] < widths[0] / 2  # sqrt(8) ~ 2.8 times narrower in expectation


def test_deterministic_and_seeded() -> None:
    df = frame("m", "sentence", spread_idioms(10))
    a, b = cluster_intervals(df, seed=3), cluster_intervals(df, seed=3)
    pd.testing.assert_frame_equal(a, b)
    c = cluster_intervals(df, seed=4)
    assert not a[["r_precision_lo", "r_precision_hi"]].equals(
        c[["r_precision_lo", "r_precision_hi"]])
    pd.testing.assert_series_equal(a["r_precision"], c["r_precision"])  # means: no seed


def test_a_cell_does_not_depend_on_the_other_cells() -> None:
    alone = cluster_intervals(frame("m1", "sentence", spread_idioms(9)))
    other = frame("m0", "span", {"q": [0.1, 0.9], "r": [0.3], "s": [1.0, 0.0, 0.2]})
    both = cluster_intervals(pd.concat([other, frame("m1", "sentence", spread_idioms(9))],
                                       ignore_index=True))
    pd.testing.assert_frame_equal(both.iloc[3:].reset_index(drop=True), alone)


def test_no_resamples_gives_nan_intervals_and_a_missing_usage_is_empty() -> None:
    only_literal = {k: v[:1] for k, v in UNEVEN.items()}  # position 0: literal
    out = cluster_intervals(frame("m", "sentence", only_literal), n_boot=0)
    assert out["r_precision"][0] == pytest.approx((0.1 + 0.5 + 0.0 + 0.8) / 4)
    assert out[["r_precision_lo", "ndcg@10_hi"]].isna().all().all()
    assert out["n"].tolist() == [4, 4, 0]
    assert math.isnan(out["r_precision"][2])


def test_bad_input_is_refused() -> None:
    df = frame("m", "sentence", UNEVEN)
    with pytest.raises(UsageError, match="more than once"):
        cluster_intervals(pd.concat([df, df.iloc[:1]], ignore_index=True))
    with pytest.raises(UsageError, match="idiom"):
        cluster_intervals(df.drop(columns="idiom"))
    with pytest.raises(UsageError, match="n_boot"):
        cluster_intervals(df, n_boot=-1)
    with pytest.raises(UsageError, match="level"):
        cluster_intervals(df, level=95)


# ---------------------------------------------------------------------------------------------
# paired_tests


def exact_sign_flip(per_idiom_diffs: list[float]) -> float:
    stat = abs(sum(per_idiom_diffs))
    hits = sum(abs(sum(s * d for s, d in zip(signs, per_idiom_diffs, strict=True)))
               >= stat - 1e-12 for signs in itertools.product((1, -1), repeat=len(
                   per_idiom_diffs)))
    return hits / 2 ** len(per_idiom_diffs)


def test_exact_sign_flip_enumerated_by_hand() -> None:
    b_vals = {"i1": [0.5, 0.4, 0.3], "i2": [0.2, 0.6], "i3": [0.7, 0.1, 0.0, 0.9],
              "i4": [0.3], "i5": [0.5, 0.5]}
    delta = {"i1": [0.1, 0.2, -0.05], "i2": [0.3, 0.0], "i3": [-0.1, 0.05, 0.05, 0.0],
             "i4": [0.25], "i5": [-0.05, 0.15]}
    a_vals = {k: [x + d for x, d in zip(v, delta[k], strict=True)] for k, v in b_vals.items()}
    df = pd.concat([frame("m", "span", a_vals), frame("m", "sentence", b_vals)],
                   ignore_index=True)
    out = paired_tests(df, [(("m", "span"), ("m", "sentence"))], n_boot=1000)
    assert list(out.columns) == ["model_a", "mode_a", "model_b", "mode_b", "usage", "metric",
                                 "a", "b", "diff", "diff_lo", "diff_hi", "p", "p_bound",
                                 "p_corrected", "p_corrected_bound", "significant", "n",
                                 "n_idioms", "test", "correction", "family", "family_size"]
    assert len(out) == 6
    row = out[(out["usage"] == "all") & (out["metric"] == "r_precision")].iloc[0]
    want = exact_sign_flip([sum(v) for v in delta.values()])
    assert row["p"] == pytest.approx(want)
    assert "exact" in row["test"]
    every_a = [v for vals in a_vals.values() for v in vals]
    every_b = [v for vals in b_vals.values() for v in vals]
    assert row["a"] == pytest.approx(sum(every_a) / 12)
    assert row["b"] == pytest.approx(sum(every_b) / 12)
    assert row["diff"] == pytest.approx(sum(sum(v) for v in delta.values()) / 12)
    assert (row["n"], row["n_idioms"]) == (12, 5)
    assert row["diff_lo"] <= row["diff"] <= row["diff_hi"]
    # literal queries alone (positions 0 and 2): per-idiom sums by hand
    lit = out[(out["usage"] == "literal") & (out["metric"] == "r_precision")].iloc[0]
    assert lit["p"] == pytest.approx(exact_sign_flip([0.05, 0.3, -0.05, 0.25, -0.05]))
    assert lit["n"] == 7  # 2 + 1 + 2 + 1 + 1


def test_paired_interval_equals_a_naive_loop_and_rows_match_by_query_id() -> None:
    b_vals = spread_idioms(7)
    a_vals = {k: [v + 0.02 * (j + 1) * (1 if i % 3 else -1) for j, v in enumerate(vals)]
              for i, (k, vals) in enumerate(b_vals.items())}
    b_frame = frame("m2", "sentence", b_vals).iloc[::-1]  # other row order than a
    df = pd.concat([frame("m1", "sentence", a_vals), b_frame], ignore_index=True)
    out = paired_tests(df, n_boot=400, seed=2, level=0.8)
    assert out[["model_a", "model_b"]].drop_duplicates().values.tolist() == [["m1", "m2"]]
    row = out[(out["usage"] == "all") & (out["metric"] == "r_precision")].iloc[0]
    diffs = {k: [x - y for x, y in zip(a_vals[k], b_vals[k], strict=True)] for k in b_vals}
    lo, hi = naive_intervals(diffs, 400, 2, 0.8)
    assert row["diff_lo"] == pytest.approx(lo, abs=1e-12)
    assert row["diff_hi"] == pytest.approx(hi, abs=1e-12)
    assert row["p"] == pytest.approx(exact_sign_flip([sum(v) for v in diffs.values()]))


def test_random_flips_when_patterns_outnumber_resamples() -> None:
    rng = np.random.default_rng(11)
    b_vals = {f"i{j:02d}": list(rng.uniform(0.2, 0.8, 4)) for j in range(10)}
    a_vals = {k: [v + rng.normal(0.03, 0.1) for v in vals] for k, vals in b_vals.items()}
    df = pd.concat([frame("m", "span", a_vals), frame("m", "sentence", b_vals)],
                   ignore_index=True)
    exact = paired_tests(df, n_flips=1024)  # 2^10 patterns: enumerated
    rand = paired_tests(df, n_flips=1023)
    assert (exact["test"] == "sign-flip over idioms (exact, all 1,024 sign patterns)").all()
    assert (rand["test"] == "sign-flip over idioms (1,023 random flips)").all()
    diffs = [sum(a_vals[k]) - sum(b_vals[k]) for k in b_vals]
    assert exact["p"][0] == pytest.approx(exact_sign_flip(diffs))
    counts = rand["p"] * 1024 - 1  # p = (1 + hits) / (1 + 1023)
    np.testing.assert_allclose(counts, np.round(counts), atol=1e-9)
    assert (rand["p"] >= 1 / 1024).all()
    np.testing.assert_allclose(rand["p"], exact["p"], atol=0.06)
    pd.testing.assert_frame_equal(rand, paired_tests(df, n_flips=1023))  # seeded




def test_strong_difference_is_significant_after_holm() -> None:
    rng = np.random.default_rng(5)
    b_vals = {f"i{j:02d}": list(rng.uniform(0.2, 0.6, 4)) for j in range(12)}
    a_vals = {k: [v + 0.2 + rng.normal(0, 0.02) for v in vals] for k, vals in b_vals.items()}
    weak = {k: [v + rng.normal(0, 0.05) for v in vals] for k, vals in b_vals.items()}
    df = pd.concat([frame("m", "span", a_vals), frame("m", "sentence", b_vals),
                    frame("m2", "sentence", weak)], ignore_index=True)
    out = paired_tests(df)
    strong = out[(out["mode_a"] == "span") & (out["usage"] == "all")]
    assert (strong["p"] < 0.01).all()
    assert strong["significant"].all()
    assert (strong["diff_lo"] > 0.15).all()
    assert (out["correction"] == "holm").all()
    np.testing.assert_allclose(out["p_corrected"], holm(out["p"].tolist()), rtol=1e-12)
    assert (out["significant"] == (out["p_corrected"] < 0.05)).all()
    none = paired_tests(df, correction="none")
    np.testing.assert_array_equal(none["p_corrected"], none["p"])
    with pytest.raises(UsageError, match="holm"):
        paired_tests(df, correction="bonferroni")


def test_no_resamples_gives_nan_p_and_intervals() -> None:
    df = pd.concat([frame("m", "span", UNEVEN, 0.1), frame("m", "sentence", UNEVEN)],
                   ignore_index=True)
    out = paired_tests(df, n_boot=0, n_flips=0)
    assert out[["p", "p_corrected", "diff_lo", "diff_hi"]].isna().all().all()
    assert not out["significant"].any()
    assert not out["p_bound"].any() and (out["family_size"] == 0).all()
    # no intervals (n_boot 0) need not mean no test: the flips are their own parameter
    tested = paired_tests(df, n_boot=0)
    assert tested[["diff_lo", "diff_hi"]].isna().all().all() and tested["p"].notna().all()
    assert out["diff"][1] == pytest.approx(
        out["a"][1] - out["b"][1]) and out["diff"][1] > 0


def test_refusals() -> None:
    a = frame("m", "span", UNEVEN)
    b = frame("m", "sentence", UNEVEN)
    short = b[~b["query"].isin(["c-0", "b-3"])]
    with pytest.raises(UsageError, match=r"\(m, span\) and \(m, sentence\).*2 query") as err:
        paired_tests(pd.concat([a, short], ignore_index=True))
    assert isinstance(err.value, ValueError)
    renamed = b.assign(query=b["query"].replace({"c-0": "zz"}))
    with pytest.raises(UsageError, match="2 query"):
        paired_tests(pd.concat([a, renamed], ignore_index=True))
    df = pd.concat([a, b], ignore_index=True)
    with pytest.raises(UsageError, match=r"\(m, instruction_span\).*not in"):
        paired_tests(df, [(("m", "span"), ("m", "instruction_span"))])
    with pytest.raises(UsageError, match="more than once"):
        paired_tests(pd.concat([df, b.iloc[2:3]], ignore_index=True))


def test_default_pairs_listed_by_hand() -> None:
    cells = [("m1", "sentence"), ("m1", "span"), ("m1", "instruction_span"),
             ("bm25", "span"), ("bm25", "sentence"), ("m2", "instruction_sentence"),
             ("m2", "sentence"), ("m2", "span"), ("m1", "instruction_sentence")]
    df = pd.concat([frame(m, d, {"x": [0.5]}) for m, d in cells], ignore_index=True)
    assert default_pairs(df) == [
        (("m1", "span"), ("m1", "sentence")),
        (("m1", "instruction_sentence"), ("m1", "sentence")),
        (("m1", "instruction_span"), ("m1", "span")),
        (("m1", "instruction_span"), ("m1", "instruction_sentence")),
        (("bm25", "span"), ("bm25", "sentence")),
        (("m2", "span"), ("m2", "sentence")),
        (("m2", "instruction_sentence"), ("m2", "sentence")),
        # modes in order of appearance: sentence, span, instruction_span (m1 alone),
        # instruction_sentence
        (("m1", "sentence"), ("bm25", "sentence")),
        (("m1", "sentence"), ("m2", "sentence")),
        (("bm25", "sentence"), ("m2", "sentence")),
        (("m1", "span"), ("bm25", "span")),
        (("m1", "span"), ("m2", "span")),
        (("bm25", "span"), ("m2", "span")),
        (("m1", "instruction_sentence"), ("m2", "instruction_sentence"))]


def test_on_three_idioms_of_the_val_split(raw_dir: Path) -> None:
    from ncprobe.data.idiolink import IdioLink, load_idiolink
    from ncprobe.retrieval import aggregate, bm25_scores, evaluate

    val = load_idiolink("val", raw_dir)
    keep = set(val.idioms[:3])
    small = IdioLink("val", tuple(q for q in val.queries if q.idiom in keep),
                     tuple(d for d in val.documents if d.idiom in keep))
    df = pd.concat([evaluate(bm25_scores(small, m), small, "bm25", m)
                    for m in ("sentence", "span")], ignore_index=True)
    ci = cluster_intervals(df)
    means = aggregate(df)
    np.testing.assert_allclose(ci["r_precision"], means["r_precision"], rtol=1e-12)
    assert (ci["n_idioms"] == 3).all()
    assert (ci["r_precision_lo"] <= ci["r_precision_hi"]).all()
    out = paired_tests(df)
    assert len(out) == 6 and (out["test"] == "sign-flip over idioms (exact, all 8 sign "
                                                 "patterns)").all()
    assert ((out["p"] * 8).round(9) % 1 == 0).all()  # multiples of 1 / 2^3
    assert (out["p"] >= 0.25).all()  # the two all-equal patterns at least
