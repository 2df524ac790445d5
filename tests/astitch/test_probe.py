"""``ncprobe run astitch`` end to end, on a small copy of the AStitch files
(:mod:`tests.astitch.subset`): the tables against the raw CSV rows read by hand, the scores
against vectors recomputed from a model's hidden states, the JSON rows, bad input.

Every expected value is derived here: labels, majority and expression-only baselines from the
CSV files with the csv module; AUROC by counting pairs; macro-F1 by counting; cosines from the
tiny BERT's hidden states straight from transformers.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pytest

import ncprobe
from ncprobe.cli import main

from ..command import exit_code
from .subset import SENSES, TASK, VARIANTS, make_subset, read_rows, write_rows

GLOVE = "glove-6b-50d"
#: What the span's words lose at their ends (the punctuation of the test sentences)
_PUNCTUATION = "\"'“”‘’«»()[]{}.,;:!?…-–—/*"
SETTINGS = {"zero-shot": ("train_zero_shot",), "one-shot": ("train_one_shot",),
            "few-shot": ("train_few_shot",),
            # SemEval's one-shot: the zero-shot rows and the one-shot rows
            "one-shot-semeval": ("train_zero_shot", "train_one_shot")}


@pytest.fixture(scope="module")
def subset(raw_dir, tmp_path_factory) -> Path:
    return make_subset(raw_dir, tmp_path_factory.mktemp("astitch-data"), per_label=6)


#: the linear probes' C, chosen on dev among two (not the default seven: the tests read the
#: probes' predictions, not which C won)
C_GRID = (0.01, 1.0)


@pytest.fixture(scope="module")
def glove_run(subset, tmp_path_factory):
    cache = tmp_path_factory.mktemp("astitch-cache")
    return ncprobe.run("astitch", models=[GLOVE], langs=["en", "pt"], static="none",
                       n_boot=200, c_grid=C_GRID, data_dir=subset, accept_modified_data=True,
                       cache_dir=cache, progress=False)


@pytest.fixture(scope="module")
def cli_run(subset, tmp_path_factory) -> tuple[int, Path, str]:
    """``ncprobe run astitch --model glove-6b-50d --lang en --json`` on the few-shot training,
    dev and test splits, its fits in a pool of worker processes (--jobs: the default, the CPUs
    up to 4): the exit code, the results directory and the JSON printed."""
    tmp = tmp_path_factory.mktemp("astitch-cli")
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main(["run", "astitch", "--model", GLOVE, "--lang", "en", "--static", "none",
                     "--n-boot", "20", "--c-grid", ",".join(map(str, C_GRID)),
                     "--splits", "train_few_shot,dev,test", "--json",
                     "--quiet", "--data-dir", str(subset), "--accept-modified-data",
                     "--cache-dir", str(tmp / "c"), "--out", str(tmp / "a")])
    return code, tmp / "a", out.getvalue()


def _auroc_by_hand(scores, labels) -> float:
    """P(score of a literal use > score of an idiomatic one), ties 1/2, counting pairs."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y == 1]
    neg = [s for s, y in zip(scores, labels, strict=True) if y == 0]
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def _macro_f1_by_hand(y, pred) -> float:
    f1 = []
    for c in (0, 1):
        tp = sum(1 for a, b in zip(y, pred, strict=True) if a == c and b == c)
        fp = sum(1 for a, b in zip(y, pred, strict=True) if a != c and b == c)
        fn = sum(1 for a, b in zip(y, pred, strict=True) if a == c and b != c)
        f1.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return sum(f1) / 2


def test_rows_are_the_csv_rows(glove_run, subset) -> None:
    """The test predictions hold every test row of the files with its label; the majority
    and expression-only controls are those of the training split, counted here."""
    for lang in ("en", "pt"):
        test = read_rows(subset / TASK / lang.upper() / VARIANTS[0] / "test.csv")
        for setting, splits in SETTINGS.items():
            train = [row for split in splits for row in read_rows(
                subset / TASK / lang.upper() / VARIANTS[0] / f"{split}.csv")]
            counts = Counter(int(r["label"]) for r in train)
            top = max(sorted(counts), key=lambda k: counts[k])
            by_expr: dict[str, Counter] = {}
            for r in train:
                by_expr.setdefault(r["sentence2"], Counter())[int(r["label"])] += 1
            for control in ("majority", "expression"):
                rows = glove_run.select("predictions", lang=lang, setting=setting,
                                        control=control).sort_values("row")
                assert rows["row"].tolist() == list(range(1, len(test) + 1))
                assert rows["label"].tolist() == [int(r["label"]) for r in test]
                if control == "majority":
                    want = [top] * len(test)
                else:
                    want = []
                    for r in test:
                        c = by_expr.get(r["sentence2"])
                        if c is None or c[0] == c[1]:
                            want.append(top)
                        else:
                            want.append(max(c, key=lambda k: c[k]))
                assert rows["predicted"].tolist() == want, (lang, setting, control)


def test_auroc_and_f1_recomputed_by_hand(glove_run) -> None:
    auroc = glove_run.auroc
    checked = 0
    for row in auroc[auroc["n"] > 0].head(16).to_dict("records"):
        cell = glove_run.select("scores", model=row["model"], lang=row["lang"],
                                split=row["split"], layer=row["layer"], level=row["level"],
                                context=row["context"])
        if row["subset"] == "ambiguous":    # the expressions with both labels in the cell
            both = {e for e in set(cell["expression"])
                    if set(cell.loc[cell["expression"] == e, "label"]) == {0, 1}}
            cell = cell[cell["expression"].isin(both)]
        ok = np.isfinite(cell[row["score"]].to_numpy(float))
        labels = cell["label"].to_numpy()[ok]
        if len(set(labels)) < 2:
            assert np.isnan(row["auroc"])
            continue
        values = cell[row["score"]].to_numpy(float)[ok]
        want = _auroc_by_hand(values.tolist(), labels)
        assert row["auroc"] == pytest.approx(want, abs=1e-12)
        assert row["n"] == int(ok.sum())
        # within expressions: the pairs of each expression's own uses, summed
        exprs = cell["expression"].to_numpy()[ok]
        wins = pairs = 0.0
        for e in set(exprs):
            pos = values[(exprs == e) & (labels == 1)]
            neg = values[(exprs == e) & (labels == 0)]
            wins += sum(1.0 if p > q else 0.5 if p == q else 0.0 for p in pos for q in neg)
            pairs += len(pos) * len(neg)
        if pairs:
            assert row["auroc_within"] == pytest.approx(wins / pairs, abs=1e-12)
        else:
            assert np.isnan(row["auroc_within"])
        assert row["ci_low"] <= row["ci_high"] or np.isnan(row["ci_low"])
        checked += 1
    assert checked >= 4
    lin = glove_run.linear
    # the cells of one prediction each (chance is the mean over its draws)
    lin = lin[(lin["subset"] == "all") & (lin["control"] != "chance")]
    for row in lin.head(10).to_dict("records"):
        keys = {k: row[k] for k in ("model", "lang", "setting", "layer", "level", "context",
                                    "probe_kind", "control")}
        pred = glove_run.select("predictions", **keys)
        assert row["macro_f1"] == pytest.approx(
            _macro_f1_by_hand(pred["label"].tolist(), pred["predicted"].tolist()), abs=1e-12)
        assert row["accuracy"] == pytest.approx(
            float((pred["label"] == pred["predicted"]).mean()), abs=1e-12)
        assert row["f1_low"] <= row["f1_high"]  # a percentile interval: it need not hold the
        # point value


def test_json_rows_have_the_headline_keys(cli_run) -> None:
    # the module's command-line run (its fits in a pool of fresh processes; the fits in this
    # process: the second run of test_report_and_compare_from_the_command_line)
    code, _, printed = cli_run
    assert code == 0
    rows = json.loads(printed)
    kinds = Counter(r["probe_kind"] for r in rows)
    assert kinds["paraphrase"] and kinds["linear"] and kinds["control"]
    for r in rows:
        for key in ("probe_kind", "lang", "split", "setting", "level", "layer", "n", "ci_low",
                    "ci_high"):
            assert key in r, key
        # the paraphrase probe's AUROC, and a linear probe's AUROC of its scores
        assert ("auroc" in r) == (r["probe_kind"] in ("paraphrase", "linear"))
        assert ("macro_f1" in r) == (r["probe_kind"] != "paraphrase")
        assert r["lang"] == "en"
    # every paraphrase cell for both subsets, its within-expression AUROC beside the pooled
    para = [r for r in rows if r["probe_kind"] == "paraphrase"]
    assert all("auroc_within" in r and "auroc_within_low" in r for r in para)
    assert Counter(r["subset"] for r in para) == {"all": len(para) // 2,
                                                  "ambiguous": len(para) // 2}


def test_scores_are_cosines_of_hidden_state_means(subset, bert_dir, tmp_path) -> None:
    """One use's literal score: the cosine of the expression's span vector in its sentence
    and the literal paraphrase's in the spliced sentence, each the mean over the span's words
    of the mean over their sub-tokens of the last layer's states, from transformers."""
    import csv

    import torch
    from transformers import AutoModel, AutoTokenizer

    # the test split alone: the scores checked are its rows' (no probe is trained here)
    res = ncprobe.run("astitch", models=[str(bert_dir)], langs=["en"], layers="-1",
                      static="none", n_boot=0, splits=["test"], data_dir=subset,
                      accept_modified_data=True, cache_dir=tmp_path / "c", progress=False)
    test = read_rows(subset / TASK / "EN" / VARIANTS[0] / "test.csv")
    with (subset / SENSES / "EN_Extended_Noun_Compound_Senses_Dataset.csv").open(
            encoding="utf-8", newline="") as fh:
        literal = {r["Multiword Expression"].strip().lower(): r["Literal Meaning"]
                   for r in csv.DictReader(fh)}
    tok = AutoTokenizer.from_pretrained(bert_dir)
    model = AutoModel.from_pretrained(bert_dir).eval()

    def span_vector(words, start, end):
        batch = tok([words], is_split_into_words=True, return_tensors="pt")
        with torch.no_grad():
            states = model(**batch, output_hidden_states=True).hidden_states[-1][0].numpy()
        wids = batch.word_ids(0)
        vecs = [states[[t for t, w in enumerate(wids) if w == k]].mean(0)
                for k in range(start, end)]
        return np.mean(vecs, axis=0)

    checked = peeled = 0
    for i, r in enumerate(test):
        expr, sent = r["sentence2"], r["sentence1"]
        at = sent.lower().find(expr)
        words = sent.split()
        # the words holding the expression, and the same words with the paraphrase
        starts = np.cumsum([0] + [len(w) + 1 for w in words[:-1]])
        span = [k for k, s in enumerate(starts) if s < at + len(expr) and s + len(words[k]) > at]
        if " ".join(sent.split()) != sent or literal.get(expr) in (None, "None"):
            continue
        s, e = span[0], span[-1] + 1
        first, last = words[s], words[e - 1]
        pre = first[:at - starts[s]]
        suf = last[at + len(expr) - starts[e - 1]:]
        # the punctuation before and after the expression is a word of its own, in neither
        # span: a quote that opens the first word, a comma or stop that closes the last
        lead = pre[:len(pre) - len(pre.lstrip(_PUNCTUATION))]
        trail = suf[len(suf.rstrip(_PUNCTUATION)):]
        inner = " ".join(words[s:e])[len(lead):len(" ".join(words[s:e])) - len(trail)].split()
        before, after = words[:s] + [lead] * bool(lead), [trail] * bool(trail) + words[e:]
        phrase = (pre[len(lead):] + literal[expr] + suf[:len(suf) - len(trail)]).split()
        original, spliced = before + inner + after, before + phrase + after
        if max(len(tok([w], is_split_into_words=True)["input_ids"][0])
               for w in (original, spliced)) > 128:  # the tiny model's limit: those are cut
            continue
        a = span_vector(original, len(before), len(before) + len(inner))
        b = span_vector(spliced, len(before), len(before) + len(phrase))
        want = float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
        got = res.select("scores", split="test", row=i + 1, level="nc", context="excluded")
        assert got["literal"].iloc[0] == pytest.approx(want, abs=1e-5)
        checked += 1
        peeled += bool(lead or trail)
    assert checked >= 3 and peeled >= 1


def test_a_split_without_both_labels_is_a_data_error(subset, tmp_path) -> None:
    import shutil

    data = tmp_path / "d"
    shutil.copytree(subset, data)
    for variant in VARIANTS:
        path = data / TASK / "EN" / variant / "dev.csv"
        rows = [r for r in read_rows(path) if r["label"] == "0"]
        write_rows(path, rows)
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = exit_code(["run", "astitch", "--lang", "en", "--static", "none",
                                "--data-dir", str(data), "--accept-modified-data", "--quiet",
                                "--cache-dir", str(tmp_path / "c"), "--out",
                                str(tmp_path / "r")])
    assert code == 3
    assert "dev" in err.getvalue() and "not idiomatic" in err.getvalue()
    assert not (tmp_path / "r").exists()


def test_an_unplaced_row_is_named_not_dropped(subset, tmp_path) -> None:
    import shutil

    data = tmp_path / "d"
    shutil.copytree(subset, data)
    rows = [read_rows(data / TASK / "EN" / v / "test.csv") for v in VARIANTS]
    expr, target = rows[0][2]["sentence2"], rows[0][2]["sentence1"]
    for variant, rs in zip(VARIANTS, rows, strict=True):
        rs[2]["sentence1"] = rs[2]["sentence1"].replace(target, "A sentence without it.")
        write_rows(data / TASK / "EN" / variant / "test.csv", rs)
    res = ncprobe.run("astitch", langs=["en"], static="none", n_boot=0, data_dir=data,
                      accept_modified_data=True, cache_dir=tmp_path / "c", progress=False)
    ex = res.excluded
    hit = ex[(ex["split"] == "test") & (ex["row"] == 3)]
    assert len(hit) == 1 and hit["expression"].iloc[0] == expr
    assert any("test" in n and "3" in n for n in res.notes)
    assert 3 not in set(res.select("predictions", control="majority", setting="zero-shot")["row"])


@pytest.mark.parametrize("argv", [["--c-grid", "nan"], ["--c-grid", "-1"], ["--lang", "fr"],
                                  ["--n-boot", "-1"], ["--model", "a,a"],
                                  ["--static", GLOVE, "--model", GLOVE]])
def test_bad_options_exit_2(argv, tmp_path) -> None:
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        code = exit_code(["run", "astitch", *argv, "--out", str(tmp_path / "r")])
    assert code == 2
    assert not (tmp_path / "r").exists()


def test_one_layer_view_at_a_time(subset, bert_dir, tmp_path, monkeypatch) -> None:
    """The vectors are read from the store view by view (never every view at once), each
    view once per part, in order; the results hold every view."""
    from ncprobe.embed import Embeddings

    reads: list[tuple[str, int]] = []
    part = Embeddings.part

    def logged(self, name, view):
        reads.append((name, view))
        return part(self, name, view)

    def refused(self):
        raise AssertionError("every view read at once")

    monkeypatch.setattr(Embeddings, "part", logged)
    monkeypatch.setattr(Embeddings, "sent", property(refused))
    monkeypatch.setattr(Embeddings, "span", property(refused))
    res = ncprobe.run("astitch", models=[str(bert_dir)], langs=["en"], layers="all",
                      static="none", n_boot=0, splits=["test"], data_dir=subset,
                      accept_modified_data=True, cache_dir=tmp_path / "c", progress=False)
    views = [v for _, v in reads]
    assert views == sorted(views)  # view 0's parts, then view 1's ...
    assert sorted(set(views)) == [0, 1, 2, 3]  # the tiny BERT: embeddings + 3 layers
    assert len(reads) == len(set(reads)) == 8  # span and sentence of each view, once
    assert sorted(res.auroc["layer"].unique()) == ["0", "1", "2", "3"]


def test_report_and_compare_from_the_command_line(cli_run, subset, bert_dir,
                                                  tmp_path) -> None:
    """``ncprobe report`` and ``ncprobe compare`` find AStitch results through the registry:
    the report's index names every file written; compare tests the cells of two runs on the
    same test uses, and its F1s are the runs' own."""
    code, a, _ = cli_run  # the first run: its fits in a pool of worker processes
    assert code == 0
    common = ["--lang", "en", "--static", "none", "--n-boot", "20", "--c-grid",
              ",".join(map(str, C_GRID)), "--splits", "train_few_shot,dev,test", "--data-dir",
              str(subset), "--accept-modified-data", "--quiet", "--cache-dir",
              str(tmp_path / "c")]
    with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
        # the second run fits in this process
        assert main(["run", "astitch", "--model", str(bert_dir), "--layers", "-1", "--out",
                     str(tmp_path / "b"), "--jobs", "1", *common]) == 0
        assert main(["report", str(a), "--out", str(tmp_path / "rep"),
                     "--format", "png"]) == 0
    index = (tmp_path / "rep" / "README.md").read_text(encoding="utf-8")
    written = sorted(p.name for p in (tmp_path / "rep").iterdir() if p.name != "README.md")
    assert written and all(name in index for name in written)
    assert any(name.startswith("fig") for name in written)
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        assert main(["compare", str(a), str(tmp_path / "b"), "--n-boot", "20"]) == 0
    from ncprobe.astitch.results import AStitchResults

    f1 = AStitchResults.load(a).select("linear", model=GLOVE, setting="few-shot", level="nc",
                                       context="excluded")
    assert f"{100 * f1['macro_f1'].iloc[0]:.1f}" in out.getvalue()
    assert "astitch across runs" in out.getvalue()


def test_the_static_control_must_be_static(bert_dir, tmp_path) -> None:
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = exit_code(["run", "astitch", "--static", str(bert_dir), "--out",
                          str(tmp_path / "r")])
    assert code == 2 and "not one" in err.getvalue()
    assert not (tmp_path / "r").exists()


def test_one_context_variant_only(glove_run, subset, tmp_path) -> None:
    """--context excluded: the target sentences alone, the same numbers as in a run of both
    variants for its cells, and none of the other variant's (English: the variants are
    chosen alike in either language)."""
    res = ncprobe.run("astitch", models=[GLOVE], langs=["en"], static="none",
                      contexts=["excluded"], n_boot=200, c_grid=C_GRID, data_dir=subset,
                      accept_modified_data=True, cache_dir=tmp_path / "c", progress=False)
    assert set(res.scores["context"]) == {"excluded"}
    assert set(res.linear["context"]) <= {"excluded", ""}
    assert set(res.auroc["lang"]) == {"en"} and len(res.auroc)
    auroc = glove_run.auroc
    both = auroc[(auroc["context"] == "excluded") & (auroc["lang"] == "en")].reset_index(
        drop=True)
    assert res.auroc["auroc"].tolist() == pytest.approx(both["auroc"].tolist(), nan_ok=True)
    mine = res.linear[res.linear["probe_kind"] == "linear"]
    theirs = glove_run.linear[(glove_run.linear["probe_kind"] == "linear")
                              & (glove_run.linear["context"] == "excluded")
                              & (glove_run.linear["lang"] == "en")]
    assert len(mine) == len(theirs) > 0
    # (the ambiguous rows of this small subset hold no use: NaN in both)
    assert mine["macro_f1"].tolist() == pytest.approx(theirs["macro_f1"].tolist(), nan_ok=True)
