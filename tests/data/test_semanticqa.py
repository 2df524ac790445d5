"""SemanticQA NCC's data layer (the ``ncc`` probe): pinned files verified before use, typed
items and answers, every check a named error, the stimuli (NCIMP's, or spliced). Expected
numbers come from the protocol (``../shared/semanticqa/PROTOCOL.md``), the paper's Table 3, or
are counted here from the raw files with the json and csv modules; the error paths edit a copy
of the real files."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
import warnings
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from ncprobe.data import SplicedStimuliWarning
from ncprobe.data.semanticqa import (
    PROMPT_FILES,
    RESULTS_DIR,
    UNANSWERED,
    compound_span,
    load_ncc,
    ncc_counts,
    ncc_stimuli,
    prediction_letter,
)
from ncprobe.data.stimuli import NATURALISTIC
from ncprobe.errors import DataError, DataErrors

PREFIX = "noun_compound_compositionality_"
TEXT_CLASS = {"Non-compositional": "NC", "Partly compositional": "PC", "Compositional": "C",
              "None of the above": "none"}


def rel(name: str) -> str:
    """A prediction file, inside the data directory, from its ``<setting>_<model>``."""
    return f"{RESULTS_DIR}/{PREFIX}{name}.json"


GPT5_0 = rel("0-shot_gpt-5")
FIRST = rel("0-shot_DeepSeek-R1")  # the first pinned prediction file


@pytest.fixture(scope="module")
def raw_lines(raw_dir: Path) -> dict[str, list[dict]]:
    """Every prediction file present, read with the json module: file -> its lines."""
    folder = raw_dir / RESULTS_DIR
    return {f"{RESULTS_DIR}/{p.name}": [json.loads(x) for x in p.read_text("utf-8").splitlines()]
            for p in sorted(folder.glob(PREFIX + "*.json"))}


@pytest.fixture(scope="module")
def ncc(raw_dir: Path):
    return load_ncc(raw_dir)


@pytest.fixture(scope="module")
def ncc_stim(ncc, raw_dir: Path):
    with warnings.catch_warnings():  # NCIMP's English probe sentences, spliced upstream
        warnings.simplefilter("ignore", SplicedStimuliWarning)
        return ncc_stimuli(ncc, data_dir=raw_dir)


@pytest.fixture
def sqa_copy(raw_dir: Path, tmp_path: Path) -> Path:
    """A data directory whose SemanticQA files are a writable copy (the others linked)."""
    dst = tmp_path / "data"
    dst.mkdir()
    for entry in raw_dir.iterdir():
        if entry.name == "jacklanda+SemanticQA":
            shutil.copytree(entry, dst / entry.name)
        else:
            (dst / entry.name).symlink_to(entry)
    for p in (dst / "jacklanda+SemanticQA").rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    return dst


def edit_lines(path: Path, edit) -> None:
    """Rewrite a JSON Lines file, ``edit(line_number, record)`` -> record (or None to drop)."""
    out = []
    for i, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
        rec = edit(i, json.loads(line))
        if rec is not None:
            out.append(json.dumps(rec, ensure_ascii=False))
    path.write_text("\n".join(out) + "\n", "utf-8")


def every_file(root: Path) -> list[Path]:
    return sorted((root / RESULTS_DIR).glob(PREFIX + "*.json"))


# --- the real data --------------------------------------------------------------------------

def test_counts_from_the_protocol_and_the_raw_files(ncc, raw_lines):
    # the protocol: 26 files, 241 items of 241 distinct compounds, gold 95 / 75 / 71, three
    # gemma files of 240 / 233 / 235 lines
    assert len(raw_lines) == 26
    lines = {k: len(v) for k, v in raw_lines.items()}
    short = {k.rsplit("/", 1)[1]: n for k, n in lines.items() if n != 241}
    assert short == {f"{PREFIX}0-shot_gemma-3-27b-it.json": 240,
                     f"{PREFIX}3-shot_gemma-3-27b-it.json": 233,
                     f"{PREFIX}5-shot_gemma-3-27b-it.json": 235}
    gpt = raw_lines[GPT5_0]
    by_hand = Counter(TEXT_CLASS[r[r["target"]]] for r in gpt)
    assert by_hand == {"NC": 95, "PC": 75, "C": 71}
    assert len({r["noun_compound"] for r in gpt}) == 241
    assert len(ncc.items) == 241 and ncc.gold_counts() == {"NC": 95, "PC": 75, "C": 71}
    assert len({it.nc for it in ncc.items}) == 241
    assert [it.id for it in ncc.items] == [r["id"] for r in raw_lines[FIRST]]
    assert {s.file: len(s.answers) for s in ncc.systems} == lines
    assert {s.label for s in ncc.systems} == {k.rsplit("/", 1)[1][len(PREFIX):-5]
                                             for k in raw_lines}
    assert set(ncc.sources) >= set(raw_lines) | set(PROMPT_FILES.values())
    assert not ncc.modified
    assert any("233 of the 241 items" in n for n in ncc.notes)


def test_setting_and_system_split_the_file_name(ncc):
    by_file = {s.file: (s.setting, s.system) for s in ncc.systems}
    assert by_file[rel("multi_step_3-shot_DeepSeek-R1")] == ("multi_step_3-shot", "DeepSeek-R1")
    assert by_file[rel("3-shot_gpt-5-Instruct")] == ("3-shot", "gpt-5-Instruct")
    assert by_file[rel("0-shot_qwen3-235b-a22b")] == ("0-shot", "qwen3-235b-a22b")


def test_items_are_typed_from_their_lines(ncc, raw_lines):
    raw = {r["id"]: r for r in raw_lines[FIRST]}
    for it in ncc.items:
        r = raw[it.id]
        assert it.sentence == r["context"].split("\nOptions: ")[0]
        assert it.tokens == tuple(it.sentence.split())
        assert it.options == {k: TEXT_CLASS[r[k]] for k in "ABCD"}
        assert it.gold == TEXT_CLASS[r[r["target"]]] and it.letter(it.gold) == r["target"]
        assert it.nc.lower() == r["noun_compound"].lower()
        assert (it.file, it.line) == (FIRST, list(raw).index(it.id) + 1)
        # the span holds the compound's words, the head perhaps a plural: an invariant
        held = it.tokens[it.span[0]:it.span[1]]
        words = it.nc.lower().split()
        assert [w.lower() for w in held[:-1]] == words[:-1]
        assert held[-1].lower() in (words[-1], words[-1] + "s", words[-1] + "es",
                                    words[-1][:-1] + "ies")
    # by hand, from the first lines of the files (046 and 086, quoted in the protocol's data)
    honey = ncc.item("046")
    assert (honey.nc, honey.gold, honey.span) == ("honey trap", "PC", (19, 21))
    assert honey.options == {"A": "none", "B": "C", "C": "NC", "D": "PC"}
    love = ncc.item("086")  # "the romance in moulin rouge breathes thanks to the love songs ..."
    assert (love.span, love.span_text) == ((9, 11), "love songs")


def test_gold_is_nctti_compscale(ncc, raw_dir):
    with open(raw_dir / "marcospln+nctti/data/data_en.tsv", encoding="utf-8", newline="") as f:
        nctti = {r["compound"].strip().lower(): r["CompScale"].strip()
                 for r in csv.DictReader(f, delimiter="\t")}
    for it in ncc.items:
        assert nctti[it.nc.lower()] == it.gold, it.id


def test_published_accuracy_is_the_papers_table_3(ncc):
    """Accuracy = items whose answer is the gold class, over the items in the file; the
    paper's NCC figures (Table 3) as printed, from the data file of published values
    (ncprobe/data/published.tsv), each within its stated tolerance (0.1 point)."""
    from ncprobe.verify import published_rows

    paper = {r.key: (r.value, r.tolerance) for r in published_rows("ncc")}
    assert len(paper) == 20  # Table 3's 0-, 3- and 5-shot rows; multi-step is not in it
    gold = {it.id: it.gold for it in ncc.items}
    got = {s.label: 100 * sum(a == gold[k] for k, a in s.answers.items()) / len(s.answers)
           for s in ncc.systems}
    for label, (figure, tolerance) in paper.items():
        assert tolerance == 0.1, label
        assert abs(got[label] - figure) <= tolerance + 1e-9, label  # o3 0-shot: 65.15 vs 65.2
    assert round(got["0-shot_o3"], 3) == 65.145  # 157 of 241: the one printed otherwise


def test_answers_follow_the_letter(ncc, raw_lines):
    gpt = next(s for s in ncc.systems if s.file == GPT5_0)
    for r in raw_lines[GPT5_0]:  # every prediction of this file is a bare letter
        assert gpt.answers[r["id"]] == TEXT_CLASS[r[r["prediction"].strip()]]
    # multi-step: the letter is the object's category; 046's is "B", its option B
    # "Compositional" (the file's first line, by hand)
    multi = next(s for s in ncc.systems if s.file == rel("multi_step_0-shot_gpt-5"))
    assert multi.answers["046"] == "C"
    # "B: Partly compositional" style categories: the letter before the colon
    raw = {r["id"]: r for r in raw_lines[rel("multi_step_0-shot_gpt-5")]}
    long = [k for k, r in raw.items() if len(r["prediction"]["category"]) > 1]
    assert long
    for k in long:
        assert multi.answers[k] == TEXT_CLASS[raw[k][raw[k]["prediction"]["category"][0]]]
    # Gemini's one prediction without a letter ("Output Option: B") is unanswered
    gem = next(s for s in ncc.systems if s.label == "0-shot_gemini-2.5-pro")
    odd = [r["id"] for r in raw_lines[gem.file] if r["prediction"].lstrip()[0] not in "ABCD"]
    assert len(odd) == 1 and gem.unanswered == tuple(odd)
    assert gem.answers[odd[0]] == UNANSWERED
    assert any(odd[0] in n and "unanswered" in n for n in ncc.notes)


def test_prompts_are_the_files(ncc, raw_dir):
    for kind, path in PROMPT_FILES.items():
        assert ncc.prompts[kind] == (raw_dir / path).read_text("utf-8")
        assert "{{context}}" in ncc.prompts[kind] and "{{noun compound}}" in ncc.prompts[kind]


def test_letter_and_span_rules():
    assert prediction_letter("  C") == "C" and prediction_letter("D: Compositional") == "D"
    assert prediction_letter("Output Option: B") is None and prediction_letter("") is None
    assert compound_span("we met the hen parties".split(), "hen party") == [(3, 5)]
    assert compound_span("big fishes than journalists".split(), "big fish") == [(0, 2)]
    assert compound_span("a love songbird".split(), "love song") == []
    assert compound_span("Love Song and love songs".split(), "love song") == [(0, 2), (3, 5)]


# --- the stimuli ----------------------------------------------------------------------------

def test_stimuli_reuse_ncimp_sentences(ncc, ncc_stim, raw_dir):
    stim, item_of_nc, notes = ncc_stim
    assert item_of_nc == {it.nc: it.id for it in ncc.items}
    originals = [s for s in stim if s.probe == "original"]
    assert sorted(s.nc for s in originals) == sorted(it.nc for it in ncc.items)  # one each
    # the matching rule applied by hand to NCIMP's originals (read here apart)
    from ncprobe.data import load_stimuli

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SplicedStimuliWarning)
        nat = load_stimuli("en", contexts="nat", probes="all", data_dir=raw_dir)
    text = {(s.nc, s.context): " ".join(s.tokens).lower() for s in nat if s.probe == "original"}
    matched = {}
    for it in ncc.items:
        norm = " ".join(it.sentence.lower().split())
        hits = [c for c in NATURALISTIC if text.get((it.nc, c)) == norm]
        if hits:
            matched[it.nc] = hits[0]
    assert len(matched) == 229  # the protocol's count
    for nc, c in list(matched.items())[::20]:  # NCIMP's stimuli of that context, unchanged
        # the same stimuli, relabelled S1: one context per compound, whichever it was
        assert [s for s in stim if s.nc == nc] == [
            dataclasses.replace(s, context="S1") for s in nat if (s.nc, s.context) == (nc, c)]
    assert stim.ncs == {k: v for k, v in nat.ncs.items() if k[1] in item_of_nc}
    assert "229 of 241" in notes[0] and "12 are not" in notes[0]
    assert notes[0] in stim.notes
    assert set(stim.sources) >= set(ncc.sources)


def test_spliced_items_by_hand(ncc, ncc_stim):
    stim, _, notes = ncc_stim
    own = {s.nc for s in stim if s.source.startswith(RESULTS_DIR) and s.probe == "original"}
    assert len(own) == 12
    assert all(f"{ncc.item(i).id} {ncc.item(i).nc}" in notes[0] for i in ("052", "150"))
    # 052 end user: "... to help end users maximise ..."; NCIMP's S1 holds "end users" too,
    # so its phrases come from S1 of the reference table: p_syn "users", p_comp "users || end",
    # first p_words_syn "final customers", first p_rand "calm air"
    item = ncc.item("052")
    assert item.nc in own
    by_probe = {(s.probe, s.variant): s for s in stim if s.nc == "end user"}
    assert by_probe[("original", 1)].text == item.sentence
    for (probe, variant), phrase in {("syn", 1): "users", ("comp-head", 1): "users",
                                     ("comp-mod", 1): "end", ("wordssyn", 1): "final customers",
                                     ("rand", 1): "calm air"}.items():
        s = by_probe[(probe, variant)]
        assert s.text == item.sentence.replace(" end users ", f" {phrase} ", 1)
        assert (s.context, s.spliced, s.target) == ("S1", True, phrase)
        assert s.span_text == phrase
    # 150 silver spoon: "her coke from a silver spoon and wonders", p_syn "rich life"
    spoon = next(s for s in stim if s.nc == "silver spoon" and s.probe == "syn")
    assert spoon.text == ncc.item("150").sentence.replace(" silver spoon ", " rich life ", 1)


def test_ncc_counts(raw_dir):
    counts, notes, problems = ncc_counts(raw_dir)
    assert counts == {"items": 241, "classes": {"NC": 95, "PC": 75, "C": 71}, "systems": 26,
                      "models": 10, "ncimp_sentences": 229, "spliced": 12}
    assert not problems and any("229 of 241" in n for n in notes)


def test_ncc_counts_without_the_files(tmp_path):
    assert ncc_counts(tmp_path) == ({}, [], [])


# --- bad input: edited copies of the real files ---------------------------------------------

def test_an_edited_file_is_refused_unless_accepted(sqa_copy):
    path = sqa_copy / GPT5_0
    edit_lines(path, lambda i, r: {**r, "prediction": "A"} if i == 1 else r)
    with pytest.raises(DataError, match="differs from the pinned") as e:
        load_ncc(sqa_copy)
    assert e.value.file == GPT5_0 and e.value.exit_code == 3
    data = load_ncc(sqa_copy, accept_modified=True)
    assert set(data.modified) == {GPT5_0}
    assert data.notes[0].startswith("MODIFIED DATA: " + GPT5_0)
    first = data.items[0]  # the edited line is the first item: A is its option "none" (046)
    gpt = next(s for s in data.systems if s.file == GPT5_0)
    assert first.id == "046" and gpt.answers["046"] == "none"


def test_gold_that_disagrees_with_nctti_is_refused(sqa_copy):
    # 046 honey trap: gold D "Partly compositional", NCTTI PC; point target at B
    # "Compositional" in every file, so that the files agree and only the gold is wrong
    for path in every_file(sqa_copy):
        edit_lines(path, lambda i, r: {**r, "target": "B"} if r["id"] == "046" else r)
    with pytest.raises(DataErrors) as e:
        load_ncc(sqa_copy, accept_modified=True, collect=True)
    (err,) = e.value.errors
    assert (err.file, err.row, err.key, err.column) == (FIRST, 1, "046", "target")
    assert "'honey trap'" in err.reason and "gold class is C" in err.reason
    assert "CompScale of the compound is PC" in err.reason


def test_an_item_that_differs_between_files_is_named(sqa_copy):
    path = sqa_copy / GPT5_0
    edit_lines(path, lambda i, r: {**r, "context": r["context"].replace("honey", "money")}
               if r["id"] == "046" else r)
    with pytest.raises(DataErrors) as e:
        load_ncc(sqa_copy, accept_modified=True, collect=True)
    (err,) = e.value.errors
    assert (err.file, err.row, err.key, err.column) == (GPT5_0, 1, "046", "context")
    assert FIRST in err.reason and "differs from the same item" in err.reason


def test_every_problem_is_reported_with_file_line_and_key(sqa_copy):
    o3 = rel("0-shot_o3")
    lines = (sqa_copy / o3).read_text("utf-8").splitlines()
    lines[2] = lines[2][:40]  # line 3 cut short
    lines.append(lines[4])  # line 5 again, as line 242: its id repeats
    (sqa_copy / o3).write_text("\n".join(lines) + "\n", "utf-8")
    claude = rel("5-shot_claude-sonnet-4-5")
    edit_lines(sqa_copy / claude, lambda i, r: {k: v for k, v in r.items() if k != "target"}
               if i == 7 else r)
    multi = rel("multi_step_5-shot_gpt-5")
    edit_lines(sqa_copy / multi, lambda i, r: {**r, "prediction": {"extracted": "x"}}
               if i == 2 else r)
    with pytest.raises(DataErrors) as e:
        load_ncc(sqa_copy, accept_modified=True, collect=True)
    where = sorted((err.file, err.row, err.column) for err in e.value.errors)
    assert where == sorted([(o3, 3, None), (o3, 242, "id"), (claude, 7, "target"),
                            (multi, 2, "prediction")])
    cut = next(err for err in e.value.errors if err.row == 3)
    assert "not valid JSON" in cut.reason
    dup = next(err for err in e.value.errors if err.row == 242)
    assert "repeats line 5" in dup.reason and dup.key == json.loads(lines[4])["id"]


def test_a_compound_that_is_not_ncimp_or_not_in_its_sentence(sqa_copy, ncc):
    # 046 -> a compound NCIMP lacks; 010 "critical review" (C) -> "music festival", an NCIMP
    # compound of class C that no item has, and that its sentence does not hold
    assert "music festival" not in {it.nc for it in ncc.items}

    def edit(i, r):
        if r["id"] == "046":
            return {**r, "noun_compound": "purple unicorn"}
        if r["id"] == "010":
            return {**r, "noun_compound": "music festival"}
        return r
    for path in every_file(sqa_copy):
        edit_lines(path, edit)
    with pytest.raises(DataErrors) as e:
        load_ncc(sqa_copy, accept_modified=True, collect=True)
    got = {err.key: err for err in e.value.errors}
    assert set(got) == {"046", "010"}
    assert "not an English NCIMP compound" in got["046"].reason
    assert "is not in the sentence" in got["010"].reason


def test_a_missing_file_is_named(sqa_copy):
    (sqa_copy / GPT5_0).unlink()
    with pytest.raises(DataError, match="file not found") as e:
        load_ncc(sqa_copy)
    assert GPT5_0 in str(e.value)


def test_an_item_without_stimuli_is_named(ncc, raw_dir):
    bad = replace(ncc.items[0], nc="purple unicorn")
    data = replace(ncc, items=(bad, *ncc.items[1:]))
    with warnings.catch_warnings(), pytest.raises(DataError, match="no stimuli") as e:
        warnings.simplefilter("ignore", SplicedStimuliWarning)
        ncc_stimuli(data, data_dir=raw_dir)
    assert e.value.key == bad.id and e.value.file == FIRST
