"""AStitch Task 1 A's data layer (the ``astitch`` probe): pinned files verified, rows checked,
expressions placed (verbatim, or by the inflection rule), paraphrases, splicing.

Expected numbers come from the protocol (``../shared/astitch/PROTOCOL.md``: rows, labels and
expressions per split), are counted here from the raw files with the csv module, or are worked
out by hand from the rule; the error paths write a small data directory of their own."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from ncprobe.astitch import SPLITS, VARIANTS
from ncprobe.data.astitch import (
    AStitchRecord,
    astitch_counts,
    counts_lines,
    load_astitch,
    paraphrase_file,
    peel,
    place_expression,
    spliced,
    split_file,
    task_file,
)
from ncprobe.errors import DataError, DataErrors, UsageError

#: The protocol's rows per split: (rows, label 0, label 1, expressions); None: not stated.
PROTOCOL = {
    "en": {"train_zero_shot": (3327, 1762, 1565, 163), "train_one_shot": (87, None, None, 60),
           "train_few_shot": (282, None, None, 60), "dev": (466, None, None, 30),
           "test": (483, 149, 334, 30)},
    "pt": {"train_zero_shot": (1164, 773, 391, 73), "train_one_shot": (53, None, None, 40),
           "train_few_shot": (156, None, None, 40), "dev": (273, None, None, 20),
           "test": (279, 165, 114, 20)},
}
PARAPHRASED = {"en": 223, "pt": 113}  # the protocol's expressions of the paraphrase files


@pytest.fixture(scope="module")
def en(raw_dir: Path):
    return load_astitch("en", raw_dir)


@pytest.fixture(scope="module")
def pt(raw_dir: Path):
    return load_astitch("pt", raw_dir)


def raw_rows(raw_dir: Path, lang: str, split: str, context: str = "excluded") -> list[list[str]]:
    """A task file's data rows, read with the csv module."""
    with open(raw_dir / task_file(lang, split, context), encoding="utf-8", newline="") as f:
        return list(csv.reader(f))[1:]


def _is_punctuation(text: str) -> bool:
    return bool(text) and not any(c.isalnum() for c in text)


def check_peeled(tokens, span, punctuation, words) -> None:
    """``tokens`` are the whitespace ``words`` with the span's punctuation split off: the
    words rebuilt by joining the lead to the first span word and the trail to the last; the
    lead and trail punctuation only; the span's words begin and end with no punctuation where
    a lead or trail was split off (written out here, not with the code under test)."""
    lead, trail = punctuation
    a, b = span
    rebuilt = list(tokens)
    if trail:
        assert _is_punctuation(trail) and rebuilt[b] == trail
        rebuilt[b - 1:b + 1] = [rebuilt[b - 1] + trail]
    if lead:
        assert _is_punctuation(lead) and rebuilt[a - 1] == lead
        rebuilt[a - 1:a + 1] = [lead + rebuilt[a]]
    assert rebuilt == list(words)
    # nothing was left to peel: the span begins and ends with a letter or digit
    assert tokens[a][0].isalnum() and tokens[b - 1][-1].isalnum(), (tokens, span)


# --- the real data -------------------------------------------------------------------------

@pytest.mark.parametrize("lang", ["en", "pt"])
def test_rows_labels_expressions_are_the_protocols(lang, en, pt):
    data = {"en": en, "pt": pt}[lang]
    for split, (rows, _, _, expressions) in PROTOCOL[lang].items():
        placed = data.split(split)
        gone = [u for u in data.unplaced if u.split == split]
        assert len(placed) + len(gone) == rows, split
        assert len({r.expression for r in placed} | {u.expression for u in gone}) == expressions
        assert all(r.lang == lang and r.split == split for r in placed)
        assert sum(data.labels(split).values()) == len(placed)
    assert len(data.paraphrases) == PARAPHRASED[lang]


@pytest.mark.parametrize("lang", ["en", "pt"])
def test_labels_match_the_file(lang, en, pt, raw_dir):
    data = {"en": en, "pt": pt}[lang]
    for split in SPLITS:
        rows = raw_rows(raw_dir, lang, split)
        gone = {u.row for u in data.unplaced if u.split == split}
        want = Counter(int(r[0]) for i, r in enumerate(rows, start=1) if i not in gone)
        assert data.labels(split) == {0: want[0], 1: want[1]}
        zero, one = PROTOCOL[lang][split][1:3]
        if zero is not None:  # the protocol's labels count every row, placed or not
            every = Counter(int(r[0]) for r in rows)
            assert (every[0], every[1]) == (zero, one)
        # rows keep the file's numbering: row r is the file's data row r
        assert [r.row for r in data.split(split)] == [i for i in range(1, len(rows) + 1)
                                                      if i not in gone]


def test_every_english_row_is_verbatim_at_its_first_occurrence(en, raw_dir):
    assert not en.unplaced
    assert {r.placed for r in en.records} == {"verbatim"}
    for split in SPLITS:
        rows = raw_rows(raw_dir, "en", split)
        recs = en.split(split)
        assert len(recs) == len(rows)
        for rec, (label, sentence, expression) in zip(recs, rows, strict=True):
            assert (rec.label, rec.expression) == (int(label), expression)
            check_peeled(rec.tokens, rec.span, rec.punctuation, sentence.split())
            a, b = rec.span
            # the span's words are the expression with the prefix and suffix around it
            assert " ".join(rec.tokens[a:b]).lower() == (rec.prefix + expression
                                                         + rec.suffix).lower()
            # and its first occurrence in the sentence (words joined by single spaces)
            text = " ".join(rec.tokens).lower()
            start = len(" ".join(rec.tokens[:a])) + (1 if a else 0) + len(rec.prefix)
            assert text.find(expression.lower()) == start


def test_portuguese_inflected_and_unplaced_rows(pt, raw_dir):
    # the rows that lack the expression verbatim, counted with str.lower and `in`
    not_verbatim = {(split, i) for split in SPLITS
                    for i, (_, s, e) in enumerate(raw_rows(raw_dir, "pt", split), start=1)
                    if e.lower() not in s.lower()}
    assert Counter(split for split, _ in not_verbatim) == {"train_zero_shot": 98, "test": 1}
    inflected = {(r.split, r.row) for r in pt.records if r.placed == "inflected"}
    unplaced = {(u.split, u.row) for u in pt.unplaced}
    assert inflected | unplaced == not_verbatim and not inflected & unplaced
    assert {(r.split, r.row) for r in pt.records if r.placed == "verbatim"}.isdisjoint(
        not_verbatim)
    assert (len(inflected), len(unplaced)) == (98, 1)
    # by hand: row 759's sentence writes "circulo virtuoso" without the accent, which no
    # stem of "círculo" begins
    (u,) = pt.unplaced
    assert (u.split, u.row, u.expression) == ("train_zero_shot", 759, "círculo virtuoso")
    assert u.file == task_file("pt", "train_zero_shot", "excluded")
    assert any("train_zero_shot row 759" in n for n in pt.notes)
    # by hand: test row 108 holds "núcleos atômicos" for "núcleo atômico"
    rec = next(r for r in pt.split("test") if r.row == 108)
    assert (rec.placed, rec.span_text, rec.prefix, rec.suffix) == (
        "inflected", "núcleos atômicos", "", "")


@pytest.mark.parametrize("lang", ["en", "pt"])
def test_context_span_points_at_the_same_words(lang, en, pt, raw_dir):
    data = {"en": en, "pt": pt}[lang]
    for split in SPLITS:
        contexts = raw_rows(raw_dir, lang, split, "included")
        for rec in data.split(split):
            check_peeled(rec.context_tokens, rec.context_span, rec.punctuation,
                         contexts[rec.row - 1][1].split())
            a, b = rec.span
            ca, cb = rec.context_span
            assert cb - ca == b - a
            # the whole target sentence sits in the context where the shift puts it
            shift = ca - a
            assert rec.context_tokens[shift:shift + len(rec.tokens)] == rec.tokens


def test_spliced_known_row_by_hand(en):
    rec = next(r for r in en.split("test") if r.row == 5)
    assert rec.expression == "mailing list"
    assert rec.tokens[:6] == ("Larger", "and", "active", "mailing", "lists", "(e.g.,")
    assert (rec.span, rec.prefix, rec.suffix) == ((3, 5), "", "s")
    literal = en.paraphrases["mailing list"].literal
    assert literal == "address list"
    tokens, span = spliced(rec, literal, context=False)
    assert tokens == ("Larger", "and", "active", "address", "lists", "(e.g.,") + rec.tokens[6:]
    assert span == (3, 5)
    c_tokens, c_span = spliced(rec, literal, context=True)
    target = " ".join(rec.tokens)
    want = " ".join(rec.context_tokens).replace(
        target, target.replace("mailing lists", "address lists", 1), 1)
    assert " ".join(c_tokens) == want
    assert c_tokens[c_span[0]:c_span[1]] == ("address", "lists")


def test_spliced_keeps_punctuation_and_replaces_an_inflection():
    # "“ex-efeitos especiais”," peeled: the quotes and comma are words of their own, the
    # "ex-" before the place is kept around the paraphrase
    rec = AStitchRecord("pt", "test", 1, 0, "efeito especial",
                        ("Os", "“", "ex-efeitos", "especiais", "”,", "caros"), (2, 4),
                        ("Antes.", "Os", "“", "ex-efeitos", "especiais", "”,", "caros"),
                        (3, 5), "inflected", "ex-", "", "f.csv", ("“", "”,"))
    assert spliced(rec, "truque de cinema", context=False) == (
        ("Os", "“", "ex-truque", "de", "cinema", "”,", "caros"), (2, 5))
    assert spliced(rec, "truque", context=True) == (
        ("Antes.", "Os", "“", "ex-truque", "”,", "caros"), (3, 4))


def test_paraphrases_none_is_absent(en, raw_dir):
    with open(raw_dir / paraphrase_file("en"), encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    elbow = next(r for r in rows if r["Multiword Expression"] == "elbow room")
    p = en.paraphrases["elbow room"]
    assert (p.literal, p.nonliteral, p.split) == ("joint room", ("space", "freedom"), "test")
    assert elbow["Non-Literal Meaning 3"] == "None"
    no_nonliteral = sum(all(r[f"Non-Literal Meaning {i}"] == "None" for i in (1, 2, 3))
                        for r in rows)
    assert sum(not p.nonliteral for p in en.paraphrases.values()) == no_nonliteral
    # a trailing space in the file is not part of the paraphrase
    assert en.paraphrases["sacred cow"].nonliteral == ("above criticism",)


def test_counts_for_data_info(raw_dir, tmp_path):
    counts, notes, errors = astitch_counts(raw_dir)
    assert errors == []
    for lang in ("en", "pt"):
        for split, (rows, _, _, expressions) in PROTOCOL[lang].items():
            got = counts[lang][split]
            assert (got["rows"], got["expressions"]) == (rows, expressions)
    assert counts["pt"]["train_zero_shot"]["unplaced"] == 1
    assert counts["pt"]["train_zero_shot"]["inflected"] == 97
    assert counts["en"]["test"]["labels"] == {0: 149, 1: 334}
    assert any("row 759" in n for n in notes)
    lines = counts_lines(counts)
    en_test = next(x for x in lines if x.startswith("  en test:"))
    assert "483 rows" in en_test and "149 / 334" in en_test and "30 expressions" in en_test
    assert "1 unplaced" in next(x for x in lines if x.startswith("  pt train_zero_shot:"))
    assert counts_lines(json.loads(json.dumps(counts))) == lines  # as `data info --json` has it
    assert astitch_counts(tmp_path) == ({}, [], [])
    assert counts_lines({}) == []


def test_unknown_language_and_split(en):
    with pytest.raises(UsageError, match="'de'"):
        load_astitch("de")
    with pytest.raises(UsageError, match="'train'"):
        en.split("train")


# --- the inflection rule on hand-written cases ---------------------------------------------

@pytest.mark.parametrize("sentence, expression, want", [
    # hyphen and space are one separator
    ("O gelo seco sublima.", "gelo-seco", ((1, 3), "inflected", "", "", "", "")),
    ("um livre-docente da USP", "livre docente", ((1, 2), "inflected", "", "", "", "")),
    # plural and gender: "efeito" (6 letters) -> stem "efei"; "especial" -> "especi"; the
    # comma is peeled off
    ("Os efeitos especiais, caros", "efeito especial",
     ((1, 3), "inflected", "", "", "", ",")),
    # leading and trailing punctuation peeled off, outside prefix and suffix
    ("é “mão fechada”.", "mão-fechada", ((1, 3), "inflected", "", "", "“", "”.")),
    # at most three letters longer: "efeitinho" is 9 letters, "efeito" 6
    ("os efeitinho especial", "efeito especial", ((1, 3), "inflected", "", "", "", "")),
    # a short part (<= 4 letters) must begin with all of itself: "mãos" begins with "mão"
    ("as mãos fechadas", "mão fechada", ((1, 3), "inflected", "", "", "", "")),
    # the place begins inside a hyphenated word: the earlier part is kept as prefix, the
    # quote before it peeled
    ("um “ex-deputados federais”", "deputado federal",
     ((1, 3), "inflected", "ex-", "", "“", "”")),
    # the first place wins
    ("conta corrente e contas correntes", "conta-corrente",
     ((0, 2), "inflected", "", "", "", "")),
    # verbatim, case-insensitive, inside a longer word: the inflection stays, the comma goes
    ("Their Mailing lists, old", "mailing list", ((1, 3), "verbatim", "", "s", "", ",")),
    # a leading quote; an internal hyphen and apostrophe stay in the word
    ('He is a "fat cat\'s", no', "fat cat", ((3, 5), "verbatim", "", "'s", '"', '",')),
    ("the well-known big fish.", "known big fish",
     ((1, 4), "verbatim", "well-", "", "", ".")),
    ("(grey matter)", "grey matter", ((0, 2), "verbatim", "", "", "(", ")")),
])
def test_place_expression_by_hand(sentence, expression, want):
    got = place_expression(sentence, expression)
    assert got is not None
    assert (got.span, got.placed, got.prefix, got.suffix, got.lead, got.trail) == want


def test_peel_splits_the_span_words_punctuation_into_words_of_its_own():
    # by hand: the quote before "fat", the comma after "list,", nothing else moves
    words = ('She', 'said', '"fat', 'cat', 'list,', 'indeed.')
    assert peel(words, (2, 5), '"', ",") == (
        ('She', 'said', '"', 'fat', 'cat', 'list', ',', 'indeed.'), (3, 6))
    # one word holding both
    assert peel(("«bem-vindo»",), (0, 1), "«", "»") == (("«", "bem-vindo", "»"), (1, 2))
    # nothing to peel: the words as they are
    assert peel(words, (3, 4), "", "") == (words, (3, 4))


def test_spliced_into_a_peeled_span_keeps_the_punctuation_around_it(tmp_path):
    rows = {k: list(v) for k, v in ROWS.items()}
    rows["dev"] = [("0", 'Use "your grey matter," she said.', "grey matter"),
                   ("1", "Grey matter is tissue.", "grey matter")]
    data = load_small(small_dir(tmp_path, rows))
    rec = data.split("dev")[0]
    assert rec.tokens == ("Use", '"your', "grey", "matter", ',"', "she", "said.")
    assert (rec.span, rec.punctuation, rec.span_text) == ((2, 4), ("", ',"'), "grey matter")
    assert spliced(rec, "intelligence", context=False) == (
        ("Use", '"your', "intelligence", ',"', "she", "said."), (2, 3))
    assert spliced(rec, "intelligence", context=True)[0] == (
        "Before", "it.", "Use", '"your', "intelligence", ',"', "she", "said.", "After", "it.")
    # the notes count the rows whose span lost punctuation, per split: dev 1 of 2, test 1
    # of 1 ("lists,"); 2 of the 7 rows
    note = next(n for n in data.notes if "punctuation" in n)
    assert "2 of 7 rows" in note and "dev 1 of 2" in note and "test 1 of 1" in note


@pytest.mark.parametrize("sentence, expression", [
    ("um circulo virtuoso", "círculo virtuoso"),    # an accent differs: no stem matches
    ("os efeitinhos especiais", "efeito especial"),  # 10 letters: 4 more than "efeito"
    ("os efeitos especulares", "efeito especial"),  # "espec...", not the stem "especi"
    ("o gel seco", "gelo-seco"),                     # "gel" does not begin with "gelo"
    ("gelo. e seco", "gelo-seco"),                   # not consecutive
])
def test_place_expression_refuses(sentence, expression):
    assert place_expression(sentence, expression) is None


# --- bad input: a small data directory of its own ------------------------------------------

ROWS = {  # (label, target sentence, expression); the context adds a sentence on each side
    "train_zero_shot": [("0", "He is a big fish in town.", "big fish"),
                        ("1", "A big fish swam by.", "big fish")],
    "train_one_shot": [("0", "Grey matter counts.", "grey matter")],
    "train_few_shot": [("1", "The grey matter of the brain.", "grey matter")],
    "dev": [("0", "Use your grey matter.", "grey matter"),
            ("1", "Grey matter is tissue.", "grey matter")],
    "test": [("1", "The mailing lists, sorted.", "mailing list")],
}
PARA = [["Multiword Expression", "Literal Meaning", "Non-Literal Meaning 1",
         "Non-Literal Meaning 2", "Non-Literal Meaning 3", "Data Split"],
        ["big fish", "large fish", "important person", "None", "None", "train"],
        ["Grey Matter ", "grey tissue", "intelligence", "None", "None", "dev"]]


def write_csv(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as f:
        csv.writer(f).writerows(rows)


def small_dir(root: Path, rows=None, context_rows=None, para=None,
              header=("label", "sentence1", "sentence2")) -> Path:
    """An English data directory: the five splits in both context files, the paraphrases."""
    rows = rows or ROWS
    for split in SPLITS:
        ex = rows[split]
        inc = (context_rows or {}).get(split) or [
            (label, f"Before it. {s} After it.", e) for label, s, e in ex]
        write_csv(root / task_file("en", split, "excluded"), [header, *ex])
        write_csv(root / task_file("en", split, "included"), [header, *inc])
    write_csv(root / paraphrase_file("en"), para or PARA)
    return root


def load_small(root: Path, **kw):
    return load_astitch("en", root, accept_modified=True, **kw)


def with_row(split: str, i: int, row) -> dict:
    rows = {k: list(v) for k, v in ROWS.items()}
    rows[split][i] = row
    return rows


def test_small_dir_loads(tmp_path):
    data = load_small(small_dir(tmp_path))
    assert [len(data.split(s)) for s in SPLITS] == [2, 1, 1, 2, 1]
    rec = data.split("test")[0]
    assert (rec.span, rec.suffix, rec.context_span) == ((1, 3), "s", (3, 5))
    assert spliced(rec, "address list", context=True)[0] == (
        "Before", "it.", "The", "address", "lists", ",", "sorted.", "After", "it.")
    assert set(data.modified) == {*(task_file("en", s, c) for s in SPLITS for c in VARIANTS),
                                  paraphrase_file("en")}
    assert data.paraphrases["grey matter"].nonliteral == ("intelligence",)
    # the mailing list has no paraphrase row: a note with the count, not an error
    assert any("1 expression(s)" in n and "'mailing list'" in n for n in data.notes)
    assert any(n.startswith("MODIFIED DATA") for n in data.notes)


def test_modified_copy_needs_accept_modified(tmp_path):
    with pytest.raises(DataError, match="differs from the pinned") as e:
        load_astitch("en", small_dir(tmp_path))
    assert e.value.file == task_file("en", "train_zero_shot", "excluded")


def test_bad_label_names_file_row_column(tmp_path):
    root = small_dir(tmp_path, rows=with_row("dev", 1, ("2", "Grey matter is tissue.",
                                                        "grey matter")))
    with pytest.raises(DataError, match="neither 0") as e:
        load_small(root)
    assert (e.value.file, e.value.row, e.value.column) == (split_file("en", "dev"), 2, "label")


def test_missing_column(tmp_path):
    root = small_dir(tmp_path, header=("label", "sentence1", "expression"))
    with pytest.raises(DataError, match="missing column") as e:
        load_small(root)
    assert (e.value.file, e.value.column) == (task_file("en", "train_zero_shot", "excluded"),
                                              "sentence2")


def test_empty_expression(tmp_path):
    root = small_dir(tmp_path, rows=with_row("test", 0, ("1", "The mailing lists.", " ")))
    with pytest.raises(DataError, match="empty expression") as e:
        load_small(root)
    assert (e.value.row, e.value.column) == (1, "sentence2")


@pytest.mark.parametrize("edit, column, match", [
    (lambda r: ("0", r[1], r[2]), "label", "label 1 here, 0 in"),
    (lambda r: (r[0], r[1], "brain matter"), "sentence2", "'grey matter' here, 'brain matter'"),
    (lambda r: (r[0], "Something else entirely.", r[2]), "sentence1", "does not hold"),
    (lambda r: (r[0], "XGrey matter is tissue. After.", r[2]), "sentence1", "word boundary"),
])
def test_misaligned_context_files(tmp_path, edit, column, match):
    inc = [(label, f"Before it. {s} After it.", e) for label, s, e in ROWS["dev"]]
    inc[1] = edit(inc[1])
    root = small_dir(tmp_path, context_rows={"dev": inc})
    with pytest.raises(DataError, match=match) as e:
        load_small(root)
    ex_rel, in_rel = (task_file("en", "dev", c) for c in VARIANTS)
    assert (e.value.row, e.value.column) == (2, column)
    assert e.value.file in (ex_rel, in_rel)
    assert ex_rel in str(e.value) and in_rel in str(e.value)  # both files named


def test_context_file_with_fewer_rows(tmp_path):
    inc = [(label, f"Before. {s}", e) for label, s, e in ROWS["dev"]][:1]
    root = small_dir(tmp_path, context_rows={"dev": inc})
    with pytest.raises(DataError, match="2 rows here, 1 in") as e:
        load_small(root)
    assert e.value.file == task_file("en", "dev", "excluded")
    assert task_file("en", "dev", "included") in str(e.value)
    assert e.value.row == 2


def test_unplaced_row_is_kept_and_named(tmp_path):
    root = small_dir(tmp_path, rows=with_row("dev", 0, ("0", "Use your brain.", "grey matter")))
    data = load_small(root)
    (u,) = data.unplaced
    assert (u.split, u.row, u.expression, u.file) == ("dev", 1, "grey matter",
                                                      task_file("en", "dev", "excluded"))
    assert "neither verbatim" in u.why
    assert [r.row for r in data.split("dev")] == [2]
    assert data.labels("dev") == {0: 0, 1: 1}
    assert any("dev row 1" in n and "grey matter" in n for n in data.notes)
    counts, _, errors = astitch_counts(root)
    assert errors == []
    assert counts["en"]["dev"] == {"rows": 2, "labels": {0: 0, 1: 1}, "expressions": 1,
                                   "inflected": 0, "unplaced": 1}


def test_repeated_paraphrase_row(tmp_path):
    root = small_dir(tmp_path, para=[*PARA, ["big fish", "x", "None", "None", "None", "train"]])
    with pytest.raises(DataError, match="repeats row 1") as e:
        load_small(root)
    assert (e.value.file, e.value.row, e.value.column) == (paraphrase_file("en"), 3,
                                                           "Multiword Expression")


def test_collect_reports_every_problem(tmp_path):
    rows = with_row("dev", 1, ("x", "Grey matter is tissue.", "grey matter"))
    rows["test"] = [("1", "", "mailing list")]
    with pytest.raises(DataErrors) as e:
        load_small(small_dir(tmp_path, rows=rows), collect=True)
    where = {(err.file, err.row, err.column) for err in e.value.errors}
    assert (task_file("en", "dev", "excluded"), 2, "label") in where
    assert (task_file("en", "test", "excluded"), 1, "sentence1") in where
    counts, _, errors = astitch_counts(tmp_path)
    assert counts == {} and len(errors) >= 2
