"""The retrieval probe's guards (issue 28): runs of different items or data never share a table
or a test (and NCIMP runs of different data neither), parameters out of range are refused,
edited or incomplete results are said or refused, results are never written inside another
results directory, the mixed-probe refusal names the ``--exclude`` that resolves it, and
``retrieve`` and its report say what they do on stderr.

Every run here is BM25 (the lexical control: no model to load) on one or two idioms of the
val split, a second or two each.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ncprobe.cli import main
from ncprobe.errors import DataError, UsageError

from .. import synthetic

TWO = ["in the dock", "make tracks"]
ONE = ["in the dock"]
IDIOLINK = "Intellexus-DSI+IdioLink"
VAL_DOCS = f"{IDIOLINK}/data/val/indexes.json"


def retrieve_cli(out: Path, idioms: list[str], *args: str) -> int:
    return main(["retrieve", "--model", "bm25", "--split", "val", "--idioms", ",".join(idioms),
                 "--n-boot", "20", "--out", str(out), *args])


def renamed(src: Path, model: str, dst: Path) -> Path:
    """The results of ``src`` with their model called ``model``, saved at ``dst`` (another
    model of the same runs: two directories that may be shown together, as far as models go)."""
    from ncprobe.retrieval.results import RetrievalResults

    res = RetrievalResults.load(src)
    tables = {}
    for name, df in res.tables.items():
        df = df.copy()
        for col in ("model", "model_a", "model_b"):
            if col in df.columns:
                df[col] = model
        tables[name] = df
    meta = [{**m, "config": {**m["config"], "model": model}} for m in res.meta]
    return RetrievalResults(**tables, meta=meta).to_parquet(dst)


def git_blob(data: bytes) -> str:
    """A file's git blob id, as git computes it (sha1 of a header and the bytes)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@pytest.fixture(scope="module")
def val(raw_dir):
    from ncprobe.data.idiolink import load_idiolink

    return load_idiolink("val", raw_dir)


@pytest.fixture(scope="module")
def runs(raw_dir, tmp_path_factory):
    """bm25 on two idioms (``two``), and on one idiom saved as model ``bm25-one``."""
    from ncprobe.retrieval.probe import retrieve

    root = tmp_path_factory.mktemp("runs")
    two = retrieve(models=["bm25"], split="val", idioms=TWO, data_dir=raw_dir, n_boot=20,
                   progress=False, out=root / "two")
    assert two.models == ["bm25"]
    retrieve(models=["bm25"], split="val", idioms=ONE, data_dir=raw_dir, n_boot=20,
             progress=False, out=root / "one-bm25")
    return {"two": root / "two", "one": renamed(root / "one-bm25", "bm25-one", root / "one")}


# ---------------------------------------------------------------------------------------------
# 1. runs on different items or data: never one table or test


def test_a_report_or_compare_of_runs_on_different_idioms_is_refused(runs, val, tmp_path,
                                                                     capsys):
    # what each run was made on, counted from the data
    n_q = {k: len(val.subset(ids).queries) for k, ids in (("two", TWO), ("one", ONE))}
    n_d = {k: len(val.subset(ids).documents) for k, ids in (("two", TWO), ("one", ONE))}
    assert n_q["two"] != n_q["one"] and n_d["two"] != n_d["one"]
    rep = tmp_path / "rep"
    for argv in (["report", str(runs["two"]), str(runs["one"]), "--out", str(rep), "--quiet"],
                 ["compare", str(runs["two"]), str(runs["one"]), "--n-boot", "20"]):
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert out == ""  # no table, no test
        assert str(runs["two"]) in err and str(runs["one"]) in err
        assert f"idioms: 2 in {runs['two']}, 1 in {runs['one']}" in err
        assert f"queries: {n_q['two']} in {runs['two']}, {n_q['one']} in {runs['one']}" in err
        assert f"documents: {n_d['two']} in {runs['two']}, {n_d['one']} in {runs['one']}" in err
        assert "--exclude" in err and "separately" in err
    assert not rep.exists()  # refused before any file was written


def test_compare_against_a_run_on_modified_data_is_refused(runs, raw_dir, tmp_path, capsys):
    """The same idioms, one relevance label changed in the data: the blob ids differ."""
    data = tmp_path / "data"
    shutil.copytree(raw_dir / IDIOLINK, data / IDIOLINK)
    docs = data / VAL_DOCS
    docs.chmod(0o644)
    text = docs.read_text(encoding="utf-8")
    edited = text.replace('"usage": "idiomatic"', '"usage": "literal"', 1)
    assert edited != text
    docs.write_text(edited, encoding="utf-8")
    pinned, found = git_blob((raw_dir / VAL_DOCS).read_bytes()), git_blob(docs.read_bytes())
    assert pinned != found
    mine = tmp_path / "mine"
    assert retrieve_cli(mine, ONE, "--data-dir", str(data), "--accept-modified-data",
                        "--quiet") == 0
    other = renamed(mine, "bm25-edited", tmp_path / "edited")
    pinned_run = tmp_path / "pinned"
    assert retrieve_cli(pinned_run, ONE, "--data-dir", str(raw_dir), "--quiet") == 0
    capsys.readouterr()
    for argv in (["compare", str(pinned_run), str(other), "--n-boot", "20"],
                 ["report", str(pinned_run), str(other), "--out", str(tmp_path / "rep")]):
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert out == ""
        assert VAL_DOCS in err and pinned in err and found in err
        assert str(pinned_run) in err and str(other) in err
        assert f"differs from its pin in {other}" in err
        assert "idioms:" not in err and "queries:" not in err  # the same items
    # a run on the same data and items is compared
    assert main(["compare", str(pinned_run), str(renamed(pinned_run, "bm25-b",
                                                          tmp_path / "same")),
                 "--n-boot", "20"]) == 0


@pytest.fixture(scope="module")
def ncimp_runs():
    full = synthetic.build()
    a = synthetic.one_run(full, "model-a", "en")
    b = synthetic.one_run(full, "model-b", "en")
    b.meta = [{**b.meta[0], "data_sources": {"scores.csv": "f" * 40},
               "modified_data": {"scores.csv": {"blob": "f" * 40, "pinned": "abc"}}}]
    pt = synthetic.one_run(full, "model-a", "pt")
    pt.meta = [{**pt.meta[0], "data_sources": {"scores-pt.csv": "e" * 40}}]
    return a, b, pt


@pytest.mark.slow
def test_ncimp_runs_of_different_data_are_never_joined_or_compared(ncimp_runs, tmp_path,
                                                                  capsys):
    from ncprobe.ncimp.comparison import compare
    from ncprobe.ncimp.results import Results

    a, b, pt = ncimp_runs
    with pytest.raises(UsageError) as e:
        Results.concat([a, b], sources=["dir-a", "dir-b"])
    msg = str(e.value)
    assert "dir-a" in msg and "dir-b" in msg and "scores.csv" in msg
    assert "abc" in msg and "f" * 40 in msg and "modified" in msg
    with pytest.raises(UsageError, match="scores.csv"):
        compare(a, b, n_boot=20)
    # files read by one run only (another language's) are no conflict
    joined = Results.concat([a, pt])
    assert {m["config"]["lang"] for m in joined.meta} == {"en", "pt"}
    da, db = a.to_parquet(tmp_path / "a"), b.to_parquet(tmp_path / "b")
    capsys.readouterr()
    for argv in (["compare", str(da), str(db), "--n-boot", "20", "--quiet"],
                 ["report", str(da), str(db), "--out", str(tmp_path / "rep"), "--quiet"]):
        assert main(argv) == 2, argv
        out, err = capsys.readouterr()
        assert out == "" and str(da) in err and str(db) in err and "scores.csv" in err
    assert not (tmp_path / "rep").exists()


# ---------------------------------------------------------------------------------------------
# 2. parameters out of range


@pytest.mark.parametrize("option, value, words", [
    ("--k1", "nan", "finite number >= 0"), ("--k1", "inf", "finite number >= 0"),
    ("--k1", "-1", "finite number >= 0"), ("--k1", "-0.9", "finite number >= 0"),
    ("--b", "nan", "from 0 to 1"), ("--b", "2", "from 0 to 1"), ("--b", "-1", "from 0 to 1"),
    ("--b", "inf", "from 0 to 1"), ("--b", "1.0001", "from 0 to 1")])
def test_bm25_parameters_out_of_range_are_exit_2(raw_dir, tmp_path, capsys, option, value,
                                                words):
    out = tmp_path / "r"
    with pytest.raises(SystemExit) as e:
        retrieve_cli(out, ONE, "--data-dir", str(raw_dir), "--quiet", option + "=" + value)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert option in err and words in err and repr(value) in err
    assert not out.exists()


@pytest.mark.parametrize("kwargs", [
    {"k1": math.nan}, {"k1": math.inf}, {"k1": -1.0}, {"b": math.nan}, {"b": 2.0},
    {"b": -0.5}, {"seed": -1}, {"seed": math.nan}, {"batch_size": 0}, {"k1": True}])
def test_the_python_api_refuses_numbers_out_of_range(val, kwargs):
    from ncprobe.retrieval.probe import retrieve

    name = next(iter(kwargs))
    with pytest.raises(UsageError) as e:
        retrieve(models=["bm25"], modes="sentence", idiolink=val.subset(ONE), progress=False,
                 **kwargs)
    assert name in str(e.value)


def test_bm25_refuses_parameters_out_of_range_and_takes_its_bounds(raw_dir, tmp_path, val):
    """Out of range: refused by BM25 itself. At the bounds, k1 = 0 (term frequencies
    ignored) and b = 1 (lengths normalised fully) are BM25: accepted, and they reach the
    scores: with k1 = 0 a document scores the idf of the query words it holds, whatever
    their count (a sum of idfs by hand)."""
    from ncprobe.retrieval.bm25 import BM25, bm25_scores, tokenize

    for kwargs in ({"k1": math.nan}, {"k1": -0.9}, {"b": 2.0}, {"b": math.nan}):
        name = next(iter(kwargs))
        with pytest.raises(ValueError, match=name):
            BM25([["a", "b"], ["b", "c"]], **kwargs)
        with pytest.raises(ValueError, match=name):
            bm25_scores(val.subset(ONE), "span", **kwargs)
    assert retrieve_cli(tmp_path / "a", ONE, "--data-dir", str(raw_dir), "--quiet",
                        "--k1", "0", "--b", "1") == 0
    run = json.loads((tmp_path / "a" / "run.json").read_text())["runs"][0]
    assert (run["config"]["k1"], run["config"]["b"]) == (0.0, 1.0)
    corpus = [tokenize(d.sentence) for d in val.subset(ONE).documents]
    query = tokenize(val.subset(ONE).queries[0].span)
    index = BM25(corpus, k1=0.0, b=1.0)
    by_hand = [sum(index.idf[w] for w in query if w in set(doc)) for doc in corpus]
    assert np.allclose(index.get_scores(query), by_hand)


# ---------------------------------------------------------------------------------------------
# 3. edited or incomplete results


def _edit(results_dir: Path) -> str:
    """Rewrite one table with pandas (ncprobe's run id is lost): an edited results
    directory. Returns the file's name."""
    f = results_dir / "per_subject.parquet"
    pd.read_parquet(f).to_parquet(f, index=False)
    return f.name


@pytest.mark.slow
def test_edited_results_are_said_first_in_the_report_and_compare(runs, tmp_path, capsys):
    edited = tmp_path / "two"
    shutil.copytree(runs["two"], edited)
    name = _edit(edited)
    assert main(["report", str(edited), "--out", str(tmp_path / "plain")]) == 3  # refused
    rep = tmp_path / "rep"
    assert main(["report", str(edited), "--out", str(rep), "--format", "png",
                 "--accept-edited-results", "--quiet"]) == 0
    for f in ("README.md", "table_retrieval.md", "table_retrieval_tests.md"):
        lines = [x for x in (rep / f).read_text(encoding="utf-8").splitlines()
                 if x.strip()]
        # the first line after the file's heading says it, naming the file edited
        assert "EDITED RESULTS" in lines[1] and name in lines[1], (f, lines[:3])
    for f in ("table_retrieval.tex", "table_retrieval_tests.tex"):
        head = (rep / f).read_text(encoding="utf-8").splitlines()[0]
        assert "EDITED RESULTS" in head and name in head
    other = renamed(runs["two"], "bm25-b", tmp_path / "b")
    capsys.readouterr()
    assert main(["compare", str(edited), str(other), "--n-boot", "20",
                 "--accept-edited-results", "--out", str(tmp_path / "cmp.md")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("EDITED RESULTS (bm25)") and name in out.splitlines()[0]
    written = (tmp_path / "cmp.md").read_text(encoding="utf-8")
    assert "EDITED RESULTS (bm25)" in written.split("|")[0]  # before the table


@pytest.mark.parametrize("edit, words", [
    (lambda runs: [], "list of runs is empty"),
    (lambda runs: [{**r, "config": {**r["config"], "model": "other"}} for r in runs],
     "no run for the model(s) bm25"),
    (lambda runs: runs + runs, "two runs of bm25")])
def test_a_run_json_without_the_runs_of_its_tables_is_refused(runs, tmp_path, capsys, edit,
                                                              words):
    from ncprobe.retrieval.results import RetrievalResults

    broken = tmp_path / "two"
    shutil.copytree(runs["two"], broken)
    meta_file = broken / "run.json"
    meta = json.loads(meta_file.read_text())
    meta["runs"] = edit(meta["runs"])
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(DataError) as e:
        RetrievalResults.load(broken, accept_edited=True)
    assert words in str(e.value) and str(meta_file) in str(e.value)
    assert main(["report", str(broken), "--out", str(tmp_path / "rep"),
                 "--accept-edited-results"]) == 3
    assert words in capsys.readouterr().err
    assert not (tmp_path / "rep").exists()


# ---------------------------------------------------------------------------------------------
# 4. never written inside a results directory


@pytest.mark.parametrize("below", ["sub", "sub/deeper"])
def test_retrieve_and_compute_refuse_an_out_inside_a_results_directory(runs, raw_dir, tmp_path,
                                                                      capsys, below):
    results = tmp_path / "two"
    shutil.copytree(runs["two"], results)
    before = sorted(p.name for p in results.iterdir())
    out = results / below
    assert retrieve_cli(out, ONE, "--data-dir", str(raw_dir), "--quiet") == 2
    err = capsys.readouterr().err
    assert f"inside the results directory {results.resolve()}" in err
    assert main(["compute", "--out", str(out), "--quiet", "--n-boot", "0", "--no-cache",
                 "--data-dir", str(raw_dir), "--context", "neut"]) == 2
    assert "inside the results directory" in capsys.readouterr().err
    assert sorted(p.name for p in results.iterdir()) == before  # unchanged
    from ncprobe.retrieval.results import RetrievalResults

    RetrievalResults.load(results)  # still a results directory as ncprobe wrote it


# ---------------------------------------------------------------------------------------------
# 5. results of two probes: the refusal of compare names the --exclude that resolves it (a
#    report draws one report per probe: tests/cli/test_probes_meet.py)


def test_mixed_probes_name_the_exclude_of_each_probe(runs, tmp_path, capsys):
    from ncprobe.probes import probe_of_all

    root = tmp_path / "results"
    retrieval = root / "idiolink-val-bm25"
    shutil.copytree(runs["two"], retrieval)
    ncimp = synthetic.one_run(synthetic.build()).to_parquet(root / "model-a-en")
    other = tmp_path / "other"
    shutil.copytree(runs["two"], other / "idiolink-val-bm25")
    # side A holds both probes' results, side B retrieval results: the --exclude that leaves
    # both sides retrieval results, and no other
    assert main(["compare", str(root), str(other)]) == 2
    err = capsys.readouterr().err
    assert f"for the idiolink results alone, add --exclude {ncimp}" in err
    assert f"--exclude {retrieval}" not in err and "--out" not in err
    # the hint does what it says
    assert probe_of_all([root], [retrieval], advice="-") == "ncimp"
    assert probe_of_all([root], [ncimp], advice="-") == "idiolink"


# ---------------------------------------------------------------------------------------------
# 6. progress on stderr, none with --quiet


@pytest.mark.slow
def test_retrieve_and_its_report_say_each_step_unless_quiet(raw_dir, val, tmp_path, capsys):
    n_q, n_d = len(val.subset(ONE).queries), len(val.subset(ONE).documents)
    assert retrieve_cli(tmp_path / "r", ONE, "--data-dir", str(raw_dir)) == 0
    err = capsys.readouterr().err
    for i, mode in enumerate(("sentence", "span"), start=1):
        assert (f"model 1/1 (bm25), mode {i}/2 ({mode}): ranking {n_q} queries against "
                f"{n_d} documents") in err
    assert main(["report", str(tmp_path / "r"), "--out", str(tmp_path / "rep"),
                 "--format", "png"]) == 0
    err = capsys.readouterr().err
    for line in ("figure 1/4: fig01_modes_r_precision", "figure 4/4: fig04_idioms_ndcg10",
                 "table 1/2: table_retrieval", "table 2/2: table_retrieval_tests"):
        assert line in err
    assert retrieve_cli(tmp_path / "r", ONE, "--data-dir", str(raw_dir), "--quiet") == 0
    assert main(["report", str(tmp_path / "r"), "--out", str(tmp_path / "rep"),
                 "--format", "png", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "model 1/1" not in err and "figure 1/4" not in err
