"""IdioLink's BM25 control and metrics: scores equal to ``rank_bm25.BM25Okapi`` (called
directly) on a slice of the test split, the tokenisation, R-Precision and nDCG@10 on rankings
computed by hand, the tie rule and the tie range counted by hand."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from ncprobe.data.idiolink import IdioLink, load_idiolink
from ncprobe.retrieval import (
    BM25,
    aggregate,
    bm25_scores,
    evaluate,
    rank,
    ranking_metrics,
    relevance_matrix,
    tokenize,
)

rank_bm25 = pytest.importorskip("rank_bm25")


@pytest.fixture(scope="module")
def test_split(raw_dir: Path) -> IdioLink:
    return load_idiolink("test", raw_dir)


@pytest.fixture(scope="module")
def small(test_split: IdioLink) -> IdioLink:
    """Five idioms of the test split: their queries and documents."""
    keep = set(test_split.idioms[:5])
    return IdioLink("test", tuple(q for q in test_split.queries if q.idiom in keep),
                    tuple(d for d in test_split.documents if d.idiom in keep))


def test_tokenize() -> None:
    assert tokenize("He didn't SPILL the beans, did he?") == [
        "he", "didn't", "spill", "the", "beans", "did", "he"]
    assert tokenize("rock-and-roll's 2 o'clock") == ["rock", "and", "roll's", "2", "o'clock"]
    assert tokenize("'quoted' words'") == ["quoted", "words"]
    assert tokenize("") == []


@pytest.mark.parametrize("mode", ["sentence", "span"])
def test_scores_equal_rank_bm25(small: IdioLink, mode: str) -> None:
    corpus = [tokenize(d.sentence) for d in small.documents]
    ref = rank_bm25.BM25Okapi(corpus, k1=0.9, b=0.4)
    got = bm25_scores(small, mode)
    assert got.shape == (100, 500)
    for i, q in enumerate(small.queries):
        want = ref.get_scores(tokenize(q.sentence if mode == "sentence" else q.span))
        np.testing.assert_allclose(got[i], want, rtol=0, atol=1e-9)


def test_scores_equal_rank_bm25_other_parameters_and_unknown_words() -> None:
    corpus = [["a", "b", "a"], ["b", "c"], ["a"], ["d", "d", "d", "b"], ["a", "b"]]
    ref = rank_bm25.BM25Okapi(corpus, k1=1.5, b=0.75, epsilon=0.25)
    mine = BM25(corpus, k1=1.5, b=0.75)
    assert mine.average_idf == pytest.approx(ref.average_idf, abs=1e-12)
    for query in (["a"], ["b", "b"], ["zz", "d", "a"], []):  # b and a: negative idf, floored
        np.testing.assert_allclose(mine.get_scores(query), ref.get_scores(query), atol=1e-12)


def test_unknown_mode(small: IdioLink) -> None:
    with pytest.raises(ValueError, match="unknown BM25 mode"):
        bm25_scores(small, "instruction_span")  # type: ignore[arg-type]


def test_metrics_on_a_hand_made_ranking() -> None:
    # 8 documents, R = 4 relevant (0, 2, 3, 6); ranking 0, 1, 2, 3, 4, 5, 6, 7 by score:
    # relevant at ranks 1, 3, 4 inside the first R = 4 -> R-Precision 3/4
    rel = np.array([[True, False, True, True, False, False, True, False]])
    scores = np.array([[8.0, 7, 6, 5, 4, 3, 2, 1]])
    got = ranking_metrics(rank(scores), rel)
    assert got["r_precision"][0] == pytest.approx(3 / 4)
    dcg = 1 / math.log2(2) + 1 / math.log2(4) + 1 / math.log2(5) + 1 / math.log2(8)
    idcg = sum(1 / math.log2(i + 1) for i in range(1, 5))
    assert got["ndcg@10"][0] == pytest.approx(dcg / idcg)
    assert got["relevant"][0] == 4


def test_ndcg_ideal_over_at_most_ten() -> None:
    # 12 relevant of 14, the two irrelevant at ranks 1 and 2: ranks 3..10 relevant
    rel = np.ones((1, 14), dtype=bool)
    rel[0, :2] = False
    got = ranking_metrics(rank(-np.arange(14.0)[None, :]), rel)
    dcg = sum(1 / math.log2(i + 1) for i in range(3, 11))
    idcg = sum(1 / math.log2(i + 1) for i in range(1, 11))  # min(R, 10) = 10
    assert got["ndcg@10"][0] == pytest.approx(dcg / idcg)
    assert got["r_precision"][0] == pytest.approx(10 / 12)  # ranks 3..12 of the first 12


def test_tie_rule_and_tie_range_by_hand() -> None:
    # scores 9, 5, 5, 5, 5, 1 ; relevant: 0, 3, 5 (R = 3). The tie group of 5s holds ranks
    # 2-5 and straddles the cut-off R = 3; it has one relevant document (3) among 4.
    scores = np.array([[9.0, 5, 5, 5, 5, 1]])
    rel = np.array([[True, False, False, True, False, True]])
    # stable: corpus order 0, 1, 2, 3, 4, 5 -> first 3 = 0, 1, 2 -> 1 relevant -> 1/3
    assert rank(scores).tolist() == [[0, 1, 2, 3, 4, 5]]
    assert ranking_metrics(rank(scores), rel)["r_precision"][0] == pytest.approx(1 / 3)
    # best: 0, 3, 1, 2, 4, 5 -> 2 relevant in the first 3 -> 2/3; worst: 0, 1, 2, 4, 3, 5
    assert rank(scores, rel, "best").tolist() == [[0, 3, 1, 2, 4, 5]]
    assert rank(scores, rel, "worst").tolist() == [[0, 1, 2, 4, 3, 5]]
    best_rp = ranking_metrics(rank(scores, rel, "best"), rel)["r_precision"][0]
    worst_rp = ranking_metrics(rank(scores, rel, "worst"), rel)["r_precision"][0]
    assert (best_rp, worst_rp) == (pytest.approx(2 / 3), pytest.approx(1 / 3))
    # nDCG@10 (all 6 ranks inside the cut-off): idcg over min(3, 10) = 3 ranks
    idcg = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    best = (1 + 1 / math.log2(3) + 1 / math.log2(7)) / idcg        # relevant at ranks 1, 2, 6
    worst = (1 + 1 / math.log2(6) + 1 / math.log2(7)) / idcg       # relevant at ranks 1, 5, 6
    stable = (1 + 1 / math.log2(5) + 1 / math.log2(7)) / idcg      # relevant at ranks 1, 4, 6
    for ties, want in (("best", best), ("worst", worst), ("stable", stable)):
        assert ranking_metrics(rank(scores, rel, ties), rel)["ndcg@10"][0] == pytest.approx(want)
    # -0.0 and 0.0 are one tie group
    assert rank(np.array([[0.0, -0.0, 0.0]])).tolist() == [[0, 1, 2]]
    with pytest.raises(ValueError):
        rank(scores, None, "best")


def test_relevance_from_the_data_layer(small: IdioLink) -> None:
    rel = relevance_matrix(small)
    ids = [d.id for d in small.documents]
    for i, q in enumerate(small.queries):
        assert {ids[j] for j in np.flatnonzero(rel[i])} == small.relevant(q)
        # counted by hand from the protocol: 40 literal, or 20 + 20 + 20
        want = {d.id for d in small.documents if d.idiom == q.idiom and (
            d.usage == "literal" if q.usage == "literal" else d.usage != "literal")}
        assert small.relevant(q) == want
        assert len(want) == (40 if q.usage == "literal" else 60)


def test_evaluate_and_aggregate(small: IdioLink) -> None:
    per_query = evaluate(bm25_scores(small, "span"), small, mode="span")
    assert len(per_query) == 100
    for m in ("r_precision", "ndcg@10"):
        assert (per_query[m + "_min"] <= per_query[m] + 1e-12).all()
        assert (per_query[m] <= per_query[m + "_max"] + 1e-12).all()
    # a perfect score matrix: every metric 1, no tie range
    perfect = evaluate(relevance_matrix(small).astype(float) + 0.0, small)
    np.testing.assert_allclose(perfect[["r_precision", "ndcg@10"]], 1.0, rtol=1e-12)
    overall = aggregate(per_query)
    assert overall["usage"].tolist() == ["all", "literal", "idiomatic"]
    assert overall["n"].tolist() == [100, 50, 50]
    lit = per_query[per_query.usage == "literal"]
    assert overall.loc[1, "r_precision"] == pytest.approx(lit["r_precision"].mean())
    assert len(aggregate(per_query, "idiom")) == 5
    assert aggregate(per_query, "subject")["n"].sum() == 100
    with pytest.raises(ValueError):
        aggregate(per_query, "nothing")
    with pytest.raises(ValueError, match="shape"):
        evaluate(np.zeros((3, 3)), small)
    # a record's fields matter, not the object: a renamed copy scores the same
    renamed = IdioLink("test", tuple(replace(q, id=q.id + "x") for q in small.queries),
                       small.documents)
    again = evaluate(bm25_scores(renamed, "span"), renamed, mode="span")
    np.testing.assert_array_equal(again["r_precision"], per_query["r_precision"])


@pytest.mark.slow
def test_full_test_split_stable_figures(test_split: IdioLink) -> None:
    # the protocol's figures with a stable tie order (PROTOCOL.md, "Published results")
    want = {"sentence": (36.03, 59.06), "span": (49.15, 49.79)}
    for mode, (rp, ndcg) in want.items():
        got = aggregate(evaluate(bm25_scores(test_split, mode), test_split, mode=mode)).iloc[0]
        assert round(100 * got["r_precision"], 2) == rp
        assert round(100 * got["ndcg@10"], 2) == ndcg


def test_the_first_ranks_equal_the_first_columns_of_the_whole_stable_sort() -> None:
    """rank(top=k) partitions instead of sorting every document: it must give the first k
    columns of numpy's stable argsort, ties across the cut included."""
    from ncprobe.retrieval.metrics import rank

    rng = np.random.default_rng(3)
    for scores in (rng.standard_normal((50, 300)), np.round(rng.standard_normal((50, 300)), 1),
                   rng.integers(0, 4, (50, 300)).astype(float), np.zeros((3, 300))):
        expected = np.argsort(-scores, axis=1, kind="stable")[:, :40]
        np.testing.assert_array_equal(rank(scores, top=40), expected)
