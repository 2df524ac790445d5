"""``ncprobe run ncc`` end to end (ncprobe.ncc.probe.run_ncc through the command line and
``ncprobe.run``): the JSON rows, the results directory, the report, the comparison of two runs,
bad input, and a local model that answers the items.

Every expected value is derived here, independently of the package: the published systems'
accuracies by counting the raw JSON Lines files of the shared data copy, the paper's figures
as printed (SemanticQA, Table 3), a classifier's accuracy and a McNemar p from the items
table by hand (scipy's binomial test), a local model's answers from direct forward passes.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest

import ncprobe
from ncprobe.cli import main

from ..command import exit_code

SQA = Path("jacklanda+SemanticQA/semantic_qa")
RESULTS = SQA / "results/noun_compound_compositionality"
TEMPLATE = SQA / "prompts/noun_compound_compositionality_zeroshot.txt"
#: <setting>_<model> of a prediction file's name (the protocol: 0-shot, multi_step_3-shot ...)
NAME = re.compile(r"noun_compound_compositionality_((?:multi_step_)?\d-shot)_(.+)\.json")
#: the option texts of SemanticQA's items and the probe's classes (ncc_spec.md), written out
CLASS_OF = {"Non-compositional": "NC", "Partly compositional": "PC", "Compositional": "C",
            "None of the above": "none"}
KINDS = {"baseline", "published", "representation", "selected", "ceiling", "behaviour"}
GLOVE = "glove-6b-50d"
#: the classifier row whose accuracy and tests are checked by hand: all measures, NC level
GLOVE_ALL = (GLOVE, "representation", "all", "-", "nc", "all")
KEYS = ["system", "kind", "setting", "layer", "level", "measure"]


# --- the raw files, read by hand -------------------------------------------------------------

def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n")
            if line.strip()]


def _letter(obj: dict, multi_step: bool) -> str:
    """The protocol's letter: the prediction's first non-space character (a multi-step
    file: its ``category``'s)."""
    pred = obj["prediction"]
    if multi_step:
        pred = (pred if isinstance(pred, dict) else json.loads(pred))["category"]
    return pred.lstrip()[:1]


def _published(data_dir: Path) -> dict[tuple[str, str], list[dict]]:
    """(system, setting) -> the file's lines, each with its ``letter`` added."""
    out = {}
    for path in sorted((data_dir / RESULTS).glob("*.json")):
        m = NAME.fullmatch(path.name)
        assert m, path.name
        setting, system = m.groups()
        rows = _lines(path)
        for r in rows:
            r["letter"] = _letter(r, setting.startswith("multi_step"))
        out[(system, setting)] = rows
    return out


def _accuracy(rows: list[dict]) -> float:
    """Items whose letter is the target, over the lines of the file."""
    return sum(r["letter"] == r["target"] for r in rows) / len(rows)


def _gold(data_dir: Path) -> dict[str, str]:
    """Item id -> the gold class: the option text at ``target``."""
    rows = _lines(data_dir / RESULTS / "noun_compound_compositionality_0-shot_gpt-5.json")
    return {r["id"]: CLASS_OF[r[r["target"]]] for r in rows}


def _git_blob(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _row(df: pd.DataFrame, key: tuple[str, ...]) -> pd.DataFrame:
    mask = np.ones(len(df), bool)
    for k, v in zip(KEYS, key, strict=True):
        mask &= df[k].astype(str).to_numpy() == v
    return df[mask]


def _label(key: tuple[str, ...]) -> str:
    """The spec's label: the non-empty of system, setting, layer, level, measure (no kind)."""
    system, _kind, *rest = key
    return " ".join(v for v in (system, *rest) if v)


# --- one run of the command, shared by the module ----------------------------------------------

@dataclass
class Run:
    rc: int
    out: Path
    stdout: str
    stderr: str
    argv: list[str]


def _main(argv: list[str]) -> tuple[int, str, str]:
    """``ncprobe ARGV`` in this process: its exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = exit_code(argv)
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def module_cache(tmp_path_factory):
    """An embedding cache of the module's own (GloVe's vectors computed once)."""
    root = tmp_path_factory.mktemp("ncc-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NCPROBE_CACHE", str(root))
        yield root


@pytest.fixture(scope="module")
def glove_run(raw_dir, module_cache, tmp_path_factory) -> Run:
    """``ncprobe run ncc --model glove-6b-50d --json --n-boot 50 --repeats 2 --out DIR`` (every
    other option at its default: 10 folds; repeats: two, the fewest that give each classifier
    row a least, mean and greatest repeat accuracy of several repeats)."""
    out = tmp_path_factory.mktemp("glove") / "ncc-glove"
    argv = ["run", "ncc", "--model", GLOVE, "--json", "--n-boot", "50", "--repeats", "2",
            "--out", str(out), "--data-dir", str(raw_dir)]
    rc, stdout, stderr = _main(argv)
    return Run(rc, out, stdout, stderr, argv)


@pytest.fixture(scope="module")
def vec_run(raw_dir, module_cache, tmp_path_factory) -> Run:
    """A second static model's run (random 8-d vectors, :func:`_vectors`), small: ``ncprobe
    run ncc --model VEC --json --n-boot 20 --repeats 2 --folds 3 --out DIR``; compared with
    :func:`glove_run` and rerun."""
    base = tmp_path_factory.mktemp("vec")
    vec = _vectors(raw_dir, base / "vec.txt")
    out = base / "ncc-vec"
    argv = ["run", "ncc", "--model", str(vec), "--json", "--n-boot", "20", "--repeats", "2",
            "--folds", "3", "--out", str(out), "--data-dir", str(raw_dir)]
    rc, stdout, stderr = _main(argv)
    return Run(rc, out, stdout, stderr, argv)


@pytest.fixture(scope="module")
def published(raw_dir) -> dict[tuple[str, str], list[dict]]:
    return _published(raw_dir)


# --- 1. the JSON rows and the results directory ---------------------------------------------------
@pytest.mark.slow  # the module's glove run (~3 s)

def test_the_json_rows_have_every_field_as_fractions(glove_run, published) -> None:
    assert glove_run.rc == 0, glove_run.stderr
    assert f"results written to {glove_run.out}" in glove_run.stderr
    every = json.loads(glove_run.stdout)
    for r in every:
        assert {"system", "kind", "setting", "layer", "accuracy", "macro_f1", "n", "ci_low",
                "ci_high", "repeat_mean", "repeat_min", "repeat_max"} <= set(r), r
        assert r["kind"] in KINDS
    # the rows of items (not the baselines, not the paper's rows without a file)
    rows = [r for r in every if r["kind"] != "baseline" and r["n"]]
    for r in rows:
        assert isinstance(r["n"], int) and 0 < r["n"] <= 241
        for k in ("accuracy", "macro_f1", "ci_low", "ci_high"):
            assert 0.0 <= r[k] <= 1.0, (r, k)
        assert r["ci_low"] <= r["accuracy"] <= r["ci_high"], r
    kinds = {r["kind"] for r in every}
    # no behaviour asked for
    assert kinds == {"baseline", "published", "representation", "selected", "ceiling"}
    # the published rows: one per file, named <setting>_<system> as the file is; the
    # paper's fine-tuned BERT rows (Table 12, protocol) without items or interval
    assert {(r["system"], r["setting"]) for r in rows if r["kind"] == "published"} \
        == set(published)
    paper = {r["system"]: r for r in every if r["kind"] == "published" and not r["n"]}
    assert {k: r["accuracy"] for k, r in paper.items()} == {"BERT-base": 0.536,
                                                           "BERT-large": 0.515}
    assert all(r["ci_low"] is None for r in paper.values())
    # the baselines of the 241 items (NC 95, PC 75, C 71), each task's
    base = {r["system"]: r for r in every if r["kind"] == "baseline"}
    assert base["majority"]["accuracy"] == pytest.approx(95 / 241)
    assert base["stratified"]["accuracy"] == pytest.approx((95**2 + 75**2 + 71**2) / 241**2)
    assert base["uniform"]["accuracy"] == pytest.approx(1 / 3)
    assert (base["four_options"]["setting"], base["four_options"]["accuracy"]) == (
        "4-option", 0.25)
    # every classifier row: the mean of its repeats' accuracies between their least and
    # greatest; the other rows have none
    for r in rows:
        if r["kind"] in ("representation", "selected", "ceiling"):
            assert r["repeat_min"] <= r["repeat_mean"] <= r["repeat_max"], r
        else:
            assert r["repeat_mean"] is None, r
    assert len(published) == 26
    assert all(r["layer"] == "" for r in rows if r["kind"] != "representation")
    rep = [r for r in rows if r["kind"] == "representation"]
    assert {r["system"] for r in rep} == {GLOVE}
    assert {r["layer"] for r in rep} == {"-"}  # a static model: one view
    assert {(r["setting"], r["level"]) for r in rep} == {
        (s, lv) for s in ("single", "all") for lv in ("nc", "sent")}
    assert all(r["n"] == 241 for r in rows if r["kind"] != "published")
    ceiling = [r for r in rows if r["kind"] == "ceiling"]
    assert {(r["system"], r["setting"]) for r in ceiling} == {
        ("gold score", "single"), ("gold score", "all"), ("gold score", "nested")}
    selected = [r for r in rows if r["kind"] == "selected"]
    assert [(r["system"], r["setting"]) for r in selected] == [(GLOVE, "nested")]
@pytest.mark.slow  # the module's glove run (~3 s)


def test_every_published_accuracy_is_the_count_of_its_file(glove_run, published) -> None:
    rows = {(r["system"], r["setting"]): r for r in json.loads(glove_run.stdout)
            if r["kind"] == "published"}
    for key, lines in published.items():
        assert rows[key]["n"] == len(lines), key
        assert rows[key]["accuracy"] == pytest.approx(_accuracy(lines), abs=1e-12), key
    # three files hold fewer lines (the protocol): accuracy over the items in the file
    assert sorted(len(v) for k, v in published.items() if k[0] == "gemma-3-27b-it"
                  and not k[1].startswith("multi")) == [233, 235, 240]


@pytest.mark.parametrize(("system", "setting", "paper"), [
    ("gpt-5", "0-shot", 66.8), ("claude-sonnet-4-5", "5-shot", 70.1), ("o3", "0-shot", 65.1),
    ("Kimi-K2-Instruct", "5-shot", 64.7), ("gemma-3-27b-it", "3-shot", 56.7)])
@pytest.mark.slow  # the module's glove run (~3 s)
def test_the_paper_figures_come_out(glove_run, system, setting, paper) -> None:
    # SemanticQA's Table 3 (NCC), as printed; o3 0-shot is 65.2 there, 65.1 in its file
    row, = [r for r in json.loads(glove_run.stdout)
            if (r["kind"], r["system"], r["setting"]) == ("published", system, setting)]
    assert 100 * row["accuracy"] == pytest.approx(paper, abs=0.05 + 1e-9)
@pytest.mark.slow  # the module's glove run (~3 s)


def test_the_items_table_holds_each_files_answers_and_the_gold(glove_run, raw_dir,
                                                               published) -> None:
    items = pd.read_parquet(glove_run.out / "items.parquet")
    gold = _gold(raw_dir)
    assert len(gold) == 241
    assert dict(zip(items["item"], items["gold"], strict=True)) == gold
    assert sorted(pd.Series(list(gold.values())).value_counts().items()) == \
        [("C", 71), ("NC", 95), ("PC", 75)]  # the protocol's counts
    for (system, setting), lines in published.items():
        part = _row(items, (system, "published", setting, "", "", ""))
        want = {r["id"]: CLASS_OF[r[r["letter"]]] if r["letter"] and r["letter"] in "ABCD"
                else "unanswered" for r in lines}
        assert dict(zip(part["item"], part["predicted"], strict=True)) == want, system
    # one prediction without a letter (gemini 0-shot, item 038): an item of its file, wrong
    gemini = _row(items, ("gemini-2.5-pro", "published", "0-shot", "", "", ""))
    assert gemini.loc[gemini["item"] == "038", "predicted"].tolist() == ["unanswered"]
@pytest.mark.slow  # the module's glove run (~3 s)


def test_a_representation_accuracy_by_hand(glove_run) -> None:
    items = pd.read_parquet(glove_run.out / "items.parquet")
    acc = pd.read_parquet(glove_run.out / "accuracy.parquet")
    rep = acc[acc["kind"].isin(["representation", "selected"])]
    assert len(rep) > 2
    for r in rep.to_dict("records"):
        key = tuple(str(r[k]) for k in KEYS)
        part = _row(items, key)
        assert len(part) == r["n"] == 241, key
        assert sorted(part["item"]) == sorted(set(part["item"]))  # each item once
        by_hand = float(np.mean(part["predicted"].to_numpy() == part["gold"].to_numpy()))
        assert r["accuracy"] == pytest.approx(by_hand, abs=1e-12), key
    # a classifier predicts a class, never "none"
    assert set(items.loc[items["kind"] == "representation", "predicted"]) <= {"NC", "PC", "C"}
    # the nested selection chose, fold by fold, among the model's classifiers: said in the
    # notes with how often each was chosen (10 folds x 2 repeats)
    notes = json.loads((glove_run.out / "run.json").read_text())["runs"][0]["notes"]
    said = next(n for n in notes if n.startswith(f"{GLOVE} nested:"))
    counts = [int(k) for k in re.findall(r" (\d+)(?:,| \(times)", said.split(": ", 1)[1])]
    assert sum(counts) <= 20 and counts == sorted(counts, reverse=True)
@pytest.mark.slow  # the module's glove run (~3 s)


def test_a_mcnemar_p_and_the_families_by_hand(glove_run, published) -> None:
    items = pd.read_parquet(glove_run.out / "items.parquet")
    tests = pd.read_parquet(glove_run.out / "tests.parquet")
    a_key = GLOVE_ALL
    b_key = ("gemma-3-27b-it", "published", "3-shot", "", "", "")  # 233 items answered
    a = _row(items, a_key).set_index("item")
    b = _row(items, b_key).set_index("item")
    both = sorted(set(a.index) & set(b.index))
    assert len(both) == len(published[("gemma-3-27b-it", "3-shot")]) == 233
    right_a = a.loc[both, "predicted"] == a.loc[both, "gold"]
    right_b = b.loc[both, "predicted"] == b.loc[both, "gold"]
    a_only, b_only = int((right_a & ~right_b).sum()), int((~right_a & right_b).sum())
    row, = tests[(tests["a"] == _label(a_key)) & (tests["b"] == _label(b_key))].to_dict(
        "records")
    assert (row["n"], row["a_only"], row["b_only"]) == (233, a_only, b_only)
    assert row["accuracy_a"] == pytest.approx(right_a.mean(), abs=1e-12)
    assert row["accuracy_b"] == pytest.approx(right_b.mean(), abs=1e-12)
    assert row["diff"] == pytest.approx(right_a.mean() - right_b.mean(), abs=1e-12)
    assert row["diff_low"] <= row["diff"] <= row["diff_high"]
    assert a_only + b_only > 0
    assert row["p"] == pytest.approx(binomtest(a_only, a_only + b_only, 0.5).pvalue, rel=1e-9)
    # every classifier row against every published row with a file, in two families fixed
    # by the question: the model's classifiers (representation, selected), the ceiling's
    acc = pd.read_parquet(glove_run.out / "accuracy.parquet")
    n_model = int(acc["kind"].isin(["representation", "selected"]).sum())
    n_ceiling = int((acc["kind"] == "ceiling").sum())
    assert len(tests) == (n_model + n_ceiling) * len(published)
    sizes = tests.groupby("family")["family_size"].agg(["min", "max", "size"])
    assert sizes.to_dict("index") == {
        f"classifiers vs systems: {GLOVE}": {"min": n_model * 26, "max": n_model * 26,
                                             "size": n_model * 26},
        "gold ceiling vs systems": {"min": n_ceiling * 26, "max": n_ceiling * 26,
                                    "size": n_ceiling * 26}}
    # max-T by default: within a family the adjusted p never falls as McNemar's z grows
    assert set(tests["correction"]) == {"maxt"}
    for _, part in tests.groupby("family"):
        z = (part["a_only"] - part["b_only"]).abs() / np.sqrt(
            np.maximum(part["a_only"] + part["b_only"], 1))
        by_z = part.assign(z=z.round(9)).groupby("z")["p_corrected"].agg(["min", "max"])
        by_z = by_z.sort_index(ascending=False)            # the most extreme first
        assert (by_z["min"].to_numpy()[1:] >= by_z["max"].cummax().to_numpy()[:-1]
                - 1e-12).all()
    assert (tests["significant"] == (tests["p_corrected"] <= 0.05)).all()


def test_probes_counts_the_systems_of_the_pinned_files(capsys) -> None:
    """Regression (issue 38): ``ncprobe probes`` said "eleven systems"; the pinned files name
    eight (DeepSeek-R1 and GPT-5 also as <name>-Instruct) in 26 files."""
    import importlib.resources

    pins = importlib.resources.files("ncprobe.data").joinpath("upstream.tsv").read_text("utf-8")
    names = [NAME.fullmatch(line.split("\t")[2].rsplit("/", 1)[-1])
             for line in pins.splitlines() if "noun_compound_compositionality_" in line
             and line.split("\t")[2].endswith(".json")]
    systems = {m.group(2).removesuffix("-Instruct") for m in names if m}
    assert (len(systems), len(names)) == (8, 26)
    assert main(["probes"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("ncc"))
    assert "8 systems' predictions in 26 files" in line and "eleven" not in line


# --- 2. reruns, the report, two runs compared -----------------------------------------------

@pytest.mark.slow  # the module's vector run, twice (the same options: repeats, nested folds)
def test_a_rerun_writes_byte_identical_files(vec_run) -> None:
    assert vec_run.rc == 0, vec_run.stderr
    before = {p.name: p.read_bytes() for p in sorted(vec_run.out.iterdir())}
    assert {"run.json", "items.parquet", "accuracy.parquet", "tests.parquet"} <= set(before)
    rc, stdout, stderr = _main(vec_run.argv)
    assert rc == 0, stderr
    assert stdout == vec_run.stdout
    after = {p.name: p.read_bytes() for p in sorted(vec_run.out.iterdir())}
    assert after.keys() == before.keys()
    for name, data in before.items():
        assert after[name] == data, name


@pytest.mark.slow
def test_the_report_writes_its_files(glove_run, tmp_path) -> None:
    out = tmp_path / "report"
    rc, stdout, stderr = _main(["report", str(glove_run.out), "--out", str(out), "--format",
                                "png", "--quiet"])
    assert rc == 0, stderr
    written = {p.name for p in out.iterdir()}
    assert {"README.md", "table_ncc.md", "table_ncc.tex", "table_ncc_tests.md",
            "table_ncc_tests.tex", "table_ncc_items.md", "fig01_accuracy.png",
            "fig03_confusion.png", "fig04_agreement.png"} <= written
    assert "fig02_layers.png" not in written  # one view of a static model: no layer figure
    for name in written:
        if name.endswith(".png"):
            assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name
    # the comparison table holds the published systems as counted by hand: GPT-5 0-shot 66.8
    table = (out / "table_ncc.md").read_text(encoding="utf-8")
    gpt5 = [line for line in table.splitlines() if "gpt-5" in line and "0-shot" in line
            and "multi" not in line]
    assert gpt5 and "66.8" in gpt5[0]
@pytest.mark.slow  # the module's glove run (~3 s)


def test_one_model_in_two_directories_is_not_reported_together(glove_run, tmp_path,
                                                               capsys) -> None:
    import shutil

    twin = tmp_path / "twin"
    shutil.copytree(glove_run.out, twin)
    out = tmp_path / "report"
    assert main(["report", str(glove_run.out), str(twin), "--out", str(out), "--quiet"]) == 2
    assert f"model '{GLOVE}' is in both" in capsys.readouterr().err
    assert not out.exists()


def _vectors(raw_dir: Path, path: Path) -> Path:
    """A second static model: random 8-d vectors for every word of the items' stimuli."""
    import warnings

    from ncprobe.data.semanticqa import load_ncc, ncc_stimuli

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stim = ncc_stimuli(load_ncc(raw_dir), data_dir=raw_dir)[0]
    words = sorted({t.lower() for tokens in stim.to_frame()["tokens"] for t in tokens})
    rng = np.random.default_rng(0)
    path.write_text("".join(f"{w} {' '.join(f'{x:.3f}' for x in rng.normal(size=8))}\n"
                            for w in words), encoding="utf-8")
    return path


@pytest.mark.slow
def test_two_runs_compared_print_the_tests_table(glove_run, vec_run) -> None:
    vec, other = vec_run.argv[vec_run.argv.index("--model") + 1], vec_run.out
    assert vec_run.rc == 0, vec_run.stderr
    rc, stdout, stderr = _main(["compare", str(glove_run.out), str(other), "--n-boot", "20"])
    assert rc == 0, stderr
    lines = stdout.splitlines()
    assert lines[0].startswith("| A | B | n |")
    acc_a = pd.read_parquet(glove_run.out / "accuracy.parquet")
    acc_b = pd.read_parquet(other / "accuracy.parquet")
    n_rows = int((acc_a["kind"] == "representation").sum()) * int(
        (acc_b["kind"] == "representation").sum())
    assert sum(line.startswith(f"| {GLOVE} ") for line in lines) == n_rows
    # one row by hand: all measures at NC level, glove against the vectors
    b_key = (vec, "representation", "all", "-", "nc", "all")
    a = _row(pd.read_parquet(glove_run.out / "items.parquet"), GLOVE_ALL).set_index("item")
    b = _row(pd.read_parquet(other / "items.parquet"), b_key).set_index("item")
    assert sorted(a.index) == sorted(b.index) and len(a) == 241
    right_a = a["predicted"] == a["gold"]
    right_b = (b["predicted"] == b["gold"]).loc[a.index]
    a_only, b_only = int((right_a & ~right_b).sum()), int((~right_a & right_b).sum())
    row, = [line for line in lines
            if line.startswith(f"| {_label(GLOVE_ALL)} | {_label(b_key)} |")]
    cells = [c.strip() for c in row.strip("|").split(" | ")]
    assert cells[2:5] == ["241", f"{100 * right_a.mean():.1f}", f"{100 * right_b.mean():.1f}"]
    assert cells[6:8] == [str(a_only), str(b_only)]


# --- 3. bad input -------------------------------------------------------------------------------

def _edit(data_dir: Path, name: str, change) -> tuple[str, dict]:
    """Change the first line of a prediction file that ``change`` accepts (it edits the object
    in place and returns True); the file's path inside the data directory and the line."""
    path = data_dir / RESULTS / name
    lines = path.read_text(encoding="utf-8").split("\n")
    for i, line in enumerate(lines):
        if line.strip():
            obj = json.loads(line)
            if change(obj):
                lines[i] = json.dumps(obj, ensure_ascii=False)
                path.write_text("\n".join(lines), encoding="utf-8")
                return (RESULTS / name).as_posix(), obj
    raise AssertionError(f"no line of {name} to change")


O3_5 = "noun_compound_compositionality_5-shot_o3.json"


def test_an_edited_item_is_exit_3_naming_the_file_and_the_item(data_copy, tmp_path) -> None:
    def new_target(obj: dict) -> bool:
        obj["target"] = "A" if obj["target"] != "A" else "B"
        return True
    rel, obj = _edit(data_copy, O3_5, new_target)
    out = tmp_path / "out"
    common = ["run", "ncc", "--model", GLOVE, "--n-boot", "20", "--repeats", "1", "--quiet",
              "--out", str(out), "--data-dir", str(data_copy)]
    rc, _, err = _main(common)
    assert rc == 3
    assert rel in err and "--accept-modified-data" in err  # differs from its pin
    # accepting modified files does not accept an item that differs between the files
    rc, _, err = _main([*common, "--accept-modified-data"])
    assert rc == 3
    assert f"{rel}, row " in err and f"item {obj['id']}" in err and "'target'" in err
    assert not out.exists()
    rc, _, err = _main(["data", "check", "--probe", "ncc", "--data-dir", str(data_copy)])
    assert rc == 3 and f"item {obj['id']}" in err


@pytest.mark.slow  # a second glove run (~2 s)
def test_an_edited_prediction_runs_with_accept_modified_data(data_copy, tmp_path,
                                                             module_cache) -> None:
    def wrong_answer(obj: dict) -> bool:
        if obj["prediction"].lstrip()[:1] != obj["target"]:
            return False
        letter = next(k for k in "ABCD" if k != obj["target"])
        obj["prediction"] = f"{letter}: {obj[letter]}"
        return True
    right_before = _accuracy(_published(data_copy)[("o3", "5-shot")])
    rel, obj = _edit(data_copy, O3_5, wrong_answer)
    lines = _published(data_copy)[("o3", "5-shot")]
    assert _accuracy(lines) == pytest.approx(right_before - 1 / len(lines))
    out = tmp_path / "out"
    common = ["run", "ncc", "--model", GLOVE, "--n-boot", "20", "--repeats", "1", "--folds",
              "3", "--json", "--out", str(out), "--data-dir", str(data_copy)]
    assert _main(common)[0] == 3
    rc, stdout, err = _main([*common, "--accept-modified-data"])
    assert rc == 0, err
    row, = [r for r in json.loads(stdout)
            if (r["kind"], r["system"], r["setting"]) == ("published", "o3", "5-shot")]
    assert row["accuracy"] == pytest.approx(_accuracy(lines), abs=1e-12)
    run = json.loads((out / "run.json").read_text(encoding="utf-8"))["runs"][0]
    blob = _git_blob((data_copy / rel).read_bytes())
    assert run["modified_data"][rel]["blob"] == blob
    assert list(run["modified_data"]) == [rel]  # the one file edited, and only it
    assert run["config"]["accept_modified_data"] is True
    assert any(n.startswith(f"MODIFIED DATA: {rel}") for n in run["notes"])


@pytest.mark.parametrize(("argv", "named"), [
    (["--folds", "1"], "--folds"),
    (["--n-boot", "-1"], "--n-boot"),
    (["--regularisation", "nan"], "--regularisation"),
    (["--regularisation", "0"], "--regularisation"),
    (["--repeats", "0"], "--repeats"),
    (["--model", f"{GLOVE},{GLOVE}"], f"model '{GLOVE}' is named twice"),
    (["--model", GLOVE, "--model", GLOVE], f"model '{GLOVE}' is named twice"),
])
def test_a_bad_option_is_exit_2_before_any_work(argv, named, tmp_path, monkeypatch,
                                                capsys) -> None:
    monkeypatch.setenv("NCPROBE_DATA", str(tmp_path / "nowhere"))  # refused before any read
    out = tmp_path / "out"
    assert exit_code(["run", "ncc", *argv, "--out", str(out), "--quiet"]) == 2
    assert named in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("folds", ["72", "242"])
def test_more_folds_than_the_smallest_class_has_items_is_exit_2(folds, raw_dir, tmp_path,
                                                                 capsys) -> None:
    # the protocol's smallest class: Compositional, 71 items (scikit-learn only warns at 72,
    # folds without that class, and fails past the 241 items)
    out = tmp_path / "out"
    assert exit_code(["run", "ncc", "--folds", folds, "--quiet", "--out", str(out),
                      "--data-dir", str(raw_dir)]) == 2
    err = capsys.readouterr().err
    assert f"folds={folds} (--folds)" in err and "give --folds from 2 to 71" in err
    assert not out.exists()


@pytest.mark.parametrize(("models", "extra", "rc", "said"), [
    (GLOVE, ["--behaviour"], 5, f"{GLOVE} cannot answer the items"),
    ("{lm}," + GLOVE, ["--behaviour"], 5, f"{GLOVE} cannot answer the items"),
    (GLOVE + ",nosuchmodel-xyz", [], 2, "unknown model 'nosuchmodel-xyz'"),
    ("{lm}," + GLOVE, ["--layers", "all"], 2, f"--layers all has no effect for model {GLOVE}"),
], ids=["cannot-answer", "cannot-answer-after-a-causal-lm", "unknown-second", "no-layers"])
def test_a_model_refused_is_refused_before_any_work(models, extra, rc, said, tmp_path,
                                                    monkeypatch, capsys) -> None:
    # refused before the data are read (there are none: else exit 3) and before any model
    # before it in --model is computed; {lm} is a causal LM's config without its weights
    # (4 layers: the default view, last4, exists)
    monkeypatch.setenv("NCPROBE_DATA", str(tmp_path / "nowhere"))
    monkeypatch.setenv("NCPROBE_CACHE", str(tmp_path / "cache"))
    lm = tmp_path / "config-only-llama"
    lm.mkdir()
    (lm / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 32,
        "num_hidden_layers": 4, "num_attention_heads": 2, "num_key_value_heads": 2,
        "intermediate_size": 64, "vocab_size": 300, "max_position_embeddings": 1024}))
    out = tmp_path / "out"
    assert exit_code(["run", "ncc", "--model", models.format(lm=lm), *extra, "--quiet",
                      "--out", str(out)]) == rc
    assert said in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "cache").exists()


def test_an_out_that_is_or_is_below_a_file_is_refused(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("NCPROBE_DATA", str(tmp_path / "nowhere"))  # refused before any read
    blocker = tmp_path / "afile"
    blocker.write_text("mine\n")
    assert main(["run", "ncc", "--quiet", "--out", str(blocker / "sub")]) == 6
    assert f"not a directory: {blocker};" in capsys.readouterr().err
    assert main(["run", "ncc", "--quiet", "--out", str(blocker)]) == 2
    assert f"{blocker} is not an ncprobe results directory" in capsys.readouterr().err
    assert blocker.read_text() == "mine\n"
@pytest.mark.slow  # the module's glove run (~3 s)


def test_an_out_inside_a_results_directory_is_refused(glove_run, tmp_path, monkeypatch,
                                                      capsys) -> None:
    monkeypatch.setenv("NCPROBE_DATA", str(tmp_path / "nowhere"))
    before = sorted(p.name for p in glove_run.out.iterdir())
    inner = glove_run.out / "sub"
    assert main(["run", "ncc", "--quiet", "--out", str(inner)]) == 2
    assert f"is inside the results directory {glove_run.out}" in capsys.readouterr().err
    assert sorted(p.name for p in glove_run.out.iterdir()) == before
@pytest.mark.slow  # the module's glove run (~3 s)


def test_another_run_into_the_same_out_needs_overwrite(glove_run, tmp_path, monkeypatch,
                                                       capsys) -> None:
    monkeypatch.setenv("NCPROBE_DATA", str(tmp_path / "nowhere"))  # refused before any read
    before = {p.name: p.read_bytes() for p in glove_run.out.iterdir()}
    assert main(["run", "ncc", "--model", GLOVE, "--n-boot", "50", "--seed", "1", "--quiet",
                 "--out", str(glove_run.out)]) == 2
    err = capsys.readouterr().err
    assert f"{glove_run.out} holds another run" in err and "--overwrite" in err
    assert {p.name: p.read_bytes() for p in glove_run.out.iterdir()} == before


# --- 4. one model, what it says and what it encodes ---------------------------------------------

@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::ncprobe.SplicedStimuliWarning")  # the data's, noted
def test_a_local_model_answers_and_its_hidden_states_are_classified(
        raw_dir, tiny_byte_llama_dir, tmp_path, own_cache) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model_dir = tiny_byte_llama_dir
    name = str(model_dir)
    res = ncprobe.run("ncc", models=[name], behaviour=True, layers="all", n_boot=20, repeats=1,
                      folds=3, data_dir=raw_dir, progress=False, cache_dir=tmp_path / "cache",
                      device="cpu")
    # by hand: each item's prompt, one forward pass, the letter with the highest logit
    rows = _lines(raw_dir / RESULTS / "noun_compound_compositionality_0-shot_gpt-5.json")
    template = (raw_dir / TEMPLATE).read_text(encoding="utf-8")
    assert template.endswith("\n")  # so the letters are the bare "A".."D"
    tok = AutoTokenizer.from_pretrained(model_dir)
    lm = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    ids = tok.convert_tokens_to_ids(list("ABCD"))
    said, close = {}, set()
    with torch.no_grad():
        for row in rows:
            prompt = template.replace("{{context}}", row["context"]).replace(
                "{{noun compound}}", row["noun_compound"])
            logits = lm(**tok(prompt, return_tensors="pt")).logits[0, -1, ids].double()
            top = torch.sort(logits, descending=True).values
            if top[0] - top[1] < 1e-4:  # a near tie: batching may round either way
                close.add(row["id"])
            said[row["id"]] = CLASS_OF[row["ABCD"[int(torch.argmax(logits))]]]
    gold = {r["id"]: CLASS_OF[r[r["target"]]] for r in rows}
    assert len(said) == 241 and len(close) < 5

    beh_key = (name, "behaviour", "0-shot", "", "", "")
    part = _row(res.items, beh_key)
    got = dict(zip(part["item"], part["predicted"], strict=True))
    assert got.keys() == said.keys()
    assert {k: v for k, v in got.items() if k not in close} == \
        {k: v for k, v in said.items() if k not in close}
    assert len(set(said.values())) > 1  # the answers are not one letter throughout
    acc_row, = _row(res.accuracy, beh_key).to_dict("records")
    assert acc_row["n"] == 241
    by_hand = np.mean([got[k] == gold[k] for k in gold])
    assert acc_row["accuracy"] == pytest.approx(by_hand, abs=1e-12)
    if not close:
        assert acc_row["accuracy"] == pytest.approx(
            np.mean([said[k] == gold[k] for k in gold]), abs=1e-12)
    behaviour = res.meta[0]["behaviour"]
    assert behaviour["letters"]["form"] == "A"
    assert behaviour["letters"]["token_ids"] == list(ids)

    # what it encodes: every layer view (embeddings and the 2 layers) at both levels
    rep = res.accuracy[(res.accuracy["kind"] == "representation")
                       & (res.accuracy["system"] == name)]
    views = {(r["layer"], r["level"]) for r in rep.to_dict("records")}
    n_views = lm.config.num_hidden_layers + 1
    assert len({v[0] for v in views}) == n_views
    assert views == {(layer, level) for layer in {v[0] for v in views}
                     for level in ("nc", "sent")}
    assert (rep["n"] == 241).all()
    assert (rep[rep["setting"] == "all"].groupby(["layer", "level"]).size() == 1).all()
    # every classifier is tested against the model's own answers
    tests = res.tests[res.tests["b"] == _label(beh_key)]
    n_classifiers = int(res.accuracy["kind"].isin(["representation", "selected",
                                                   "ceiling"]).sum())
    assert len(tests) == n_classifiers
    assert set(tests["kind_b"]) == {"behaviour"}
    # the model's own answers are in its family; the ceiling against them, a family of its own
    assert set(tests.loc[tests["kind_a"] != "ceiling", "family"]) == {
        f"classifiers vs systems: {name}"}
    assert set(tests.loc[tests["kind_a"] == "ceiling", "family"]) == {
        f"gold ceiling vs {name}'s answers"}
    assert (tests["n"] == 241).all()
    np.testing.assert_allclose(tests["accuracy_b"], by_hand, rtol=0, atol=1e-12)


# --- 5. the data and the models -----------------------------------------------------------------

def test_data_check_passes_on_the_shared_copy(raw_dir, capsys) -> None:
    assert main(["data", "check", "--probe", "ncc", "--data-dir", str(raw_dir)]) == 0
    captured = capsys.readouterr()
    assert f"0 error(s) in {raw_dir}" in captured.out + captured.err
    assert "241" in captured.out + captured.err  # the items are counted in its notes


def test_models_prints_the_probes_text(capsys) -> None:
    assert main(["models", "--probe", "ncc"]) == 0
    out = capsys.readouterr().out
    assert "--behaviour" in out and "causal language model" in out
    assert GLOVE not in out  # not NCIMP's table of aliases


def test_no_classifier_to_choose_among_gives_no_nested_row_and_says_so() -> None:
    from ncprobe.ncc.config import NccConfig
    from ncprobe.ncc.probe import _selected

    notes: list[str] = []
    rows = _selected("m", "selected", [], [], NccConfig(), [], notes)
    assert rows.empty and list(rows.columns)[:6] == KEYS
    assert notes == ["m nested: no classifier to choose among, no nested selection"]
