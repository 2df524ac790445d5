"""IdioLink's data layer: pinned files verified before use, typed records, the relevance rule,
named errors for damaged input. Every expected number is counted here from the raw JSON (read
with the json module) or taken from the protocol, not from the loader."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from ncprobe.cli import main
from ncprobe.data.idiolink import (
    DOCUMENTS_FILE,
    QUERIES_FILE,
    check_idiolink,
    idiolink_counts,
    load_idiolink,
    span_offsets,
)
from ncprobe.errors import DataError, DataErrors, UsageError

TEST_Q = QUERIES_FILE.format(split="test")
TEST_D = DOCUMENTS_FILE.format(split="test")


@pytest.fixture(scope="module")
def raw_json(raw_dir: Path) -> dict[str, list[dict]]:
    return {rel: json.loads((raw_dir / rel).read_text("utf-8")) for rel in (TEST_Q, TEST_D)}


@pytest.fixture(scope="module")
def test_split(raw_dir: Path):
    return load_idiolink("test", raw_dir)


def test_test_split_counts(test_split, raw_json):
    queries, docs = raw_json[TEST_Q], raw_json[TEST_D]
    # by hand from the raw files, and the protocol's numbers
    assert (len(queries), len(docs)) == (1500, 7500)
    assert len({r["idiom"] for r in queries}) == 75
    c = test_split.counts()
    assert (c["queries"], c["documents"], c["idioms"], c["subjects"]) == (1500, 7500, 75, 10)
    assert c["query_usage"] == {"idiomatic": 750, "literal": 750}
    assert c["document_usage"] == {"idiomatic": 1500, "literal": 3000,
                                   "simplification": 1500, "sense": 1500}
    per_idiom_q = Counter(r["idiom"] for r in queries)
    assert set(per_idiom_q.values()) == {20}
    per_idiom_d = Counter((r["idiom"], r["usage"]) for r in docs)
    for idiom in per_idiom_q:
        assert [per_idiom_d[(idiom, u)] for u in ("idiomatic", "literal", "simplification",
                                                   "sense")] == [20, 40, 20, 20]
    assert [q.id for q in test_split.queries] == [r["id"] for r in queries]
    assert [d.id for d in test_split.documents] == [r["id"] for r in docs]
    assert test_split.sources.keys() == {TEST_Q, TEST_D} and not test_split.modified


@pytest.mark.parametrize("split,expected", [("val", (200, 1000, 10)), ("train", (440, 2200, 22))])
def test_other_splits_counts_from_the_protocol(raw_dir, split, expected):
    c = load_idiolink(split, raw_dir).counts()
    assert (c["queries"], c["documents"], c["idioms"]) == expected
    assert c["query_usage"] == {"idiomatic": expected[0] // 2, "literal": expected[0] // 2}


def test_records_are_typed_and_spans_are_first_occurrences(test_split, raw_json):
    raw = {r["id"]: r for r in raw_json[TEST_Q] + raw_json[TEST_D]}
    for rec in test_split.queries + test_split.documents:
        r = raw[rec.id]
        assert (rec.sentence, rec.idiom, rec.span, rec.usage, rec.subject, rec.is_gold) == (
            r["sentence"], r["idiom"], r["span"], r["usage"], r["subject"], r["is_gold"])
        assert rec.sentence[rec.start:rec.end] == rec.span
        assert rec.start == r["sentence"].find(r["span"]) and rec.offsets == (rec.start, rec.end)
    q = test_split.queries[0]
    assert q.role == "query" and test_split.documents[0].role == "document"
    with pytest.raises(AttributeError):  # frozen
        q.span = "x"  # type: ignore[misc]


def test_relevance_by_hand(test_split, raw_json):
    docs = raw_json[TEST_D]
    by_id = {r["id"]: r for r in raw_json[TEST_Q]}
    picks = [raw_json[TEST_Q][i]["id"] for i in (0, 1, 777, 1499)]
    for qid in picks:
        q = by_id[qid]
        wanted = ({"literal"} if q["usage"] == "literal"
                  else {"idiomatic", "simplification", "sense"})
        by_hand = {d["id"] for d in docs if d["idiom"] == q["idiom"] and d["usage"] in wanted}
        assert len(by_hand) == (40 if q["usage"] == "literal" else 60)
        assert test_split.relevant(qid) == by_hand
        assert test_split.relevant(test_split[qid]) == by_hand
    assert {len(test_split.relevant(q)) for q in test_split.queries} == {40, 60}
    with pytest.raises(ValueError, match="document"):
        test_split.relevant(test_split.documents[0])


def test_span_offsets():
    text = "Based on the span 'spill the beans' in: they spill the beans."
    assert span_offsets(text, "spill the beans") == (19, 34)
    assert span_offsets(text, "spill the beans", "last") == (45, 60)
    assert text[45:60] == "spill the beans"
    for bad in ("Spill", ""):
        with pytest.raises(ValueError):
            span_offsets(text, bad)
    with pytest.raises(ValueError, match="occurrence"):
        span_offsets(text, "spill", "second")  # type: ignore[arg-type]


def test_unknown_split():
    with pytest.raises(UsageError, match="split"):
        load_idiolink("dev")


# -- damaged input: small copies in tmp directories -------------------------------------------

def _small_copy(raw_json, tmp_path: Path, edit=None) -> Path:
    """The test split cut to its first two idioms, ``edit(queries, docs)`` applied."""
    idioms = list(dict.fromkeys(r["idiom"] for r in raw_json[TEST_Q]))[:2]
    queries = [dict(r) for r in raw_json[TEST_Q] if r["idiom"] in idioms]
    docs = [dict(r) for r in raw_json[TEST_D] if r["idiom"] in idioms]
    if edit:
        edit(queries, docs)
    for rel, items in ((TEST_Q, queries), (TEST_D, docs)):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(json.dumps(items), "utf-8")
    return tmp_path


def test_small_copy_loads_when_modified_data_are_accepted(raw_json, tmp_path):
    il = load_idiolink("test", _small_copy(raw_json, tmp_path), accept_modified_data=True)
    assert il.counts()["queries"] == 40 and il.counts()["documents"] == 200
    assert set(il.modified) == {TEST_Q, TEST_D}
    assert il.notes[0].startswith("MODIFIED DATA")


def _errors(root: Path) -> list[DataError]:
    with pytest.raises(DataErrors) as e:
        load_idiolink("test", root, accept_modified_data=True, collect=True)
    return e.value.errors


def test_span_not_in_sentence(raw_json, tmp_path):
    def edit(q, d):
        q[2]["span"] = "not in there"
    (err,) = _errors(_small_copy(raw_json, tmp_path, edit))
    assert (err.file, err.row, err.column) == (TEST_Q, 3, "span")
    assert err.key == raw_json[TEST_Q][2]["id"]
    assert "not found" in str(err)


def test_duplicate_ids_within_and_across_files(raw_json, tmp_path):
    def edit(q, d):
        d[5]["id"] = d[4]["id"]
        q[0]["id"] = d[0]["id"]
    errs = _errors(_small_copy(raw_json, tmp_path, edit))
    assert [(e.file, e.row, e.column) for e in errs] == [(TEST_D, 6, "id"), (TEST_Q, 1, "id")]
    assert "repeats record 5" in str(errs[0]) and "also the id of record 1" in str(errs[1])


def test_unknown_usage_missing_and_mistyped_keys(raw_json, tmp_path):
    def edit(q, d):
        q[0]["usage"] = "simplification"  # a document usage, not a query's
        d[1]["usage"] = "figurative"
        del d[2]["subject"]
        d[3]["is_gold"] = "yes"
    errs = _errors(_small_copy(raw_json, tmp_path, edit))
    got = {(e.file, e.row, e.column) for e in errs}
    assert got == {(TEST_Q, 1, "usage"), (TEST_D, 2, "usage"), (TEST_D, 3, "subject"),
                   (TEST_D, 4, "is_gold")}
    text = "\n".join(map(str, errs))
    assert "unknown usage 'figurative'" in text and "missing key 'subject'" in text
    assert "expected true or false" in text


def test_not_a_list(raw_json, tmp_path):
    root = _small_copy(raw_json, tmp_path)
    (root / TEST_Q).write_text('{"id": "x"}', "utf-8")
    with pytest.raises(DataError, match="expected a JSON list") as e:
        load_idiolink("test", root, accept_modified_data=True)
    assert e.value.file == TEST_Q and e.value.exit_code == 3


def test_edited_or_missing_file_is_exit_3_naming_it(raw_dir, tmp_path, capsys):
    root = tmp_path / "data"
    for rel in (TEST_Q, TEST_D):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(raw_dir / rel, root / rel)
    assert load_idiolink("test", root).counts()["queries"] == 1500  # the verified copy
    data = (root / TEST_D).read_bytes()
    (root / TEST_D).write_bytes(data.replace(b"all along", b"all alone", 1))
    with pytest.raises(DataError) as e:
        load_idiolink("test", root)
    assert e.value.file == TEST_D and "ncprobe data download" in str(e.value)
    assert e.value.exit_code == 3
    (root / TEST_Q).unlink()
    with pytest.raises(DataError, match="ncprobe data download") as e:
        load_idiolink("test", root)
    assert e.value.file.endswith(TEST_Q)
    # data check: the edited file is named (the missing one is `extra`: not an error there)
    assert main(["data", "check", "--data-dir", str(root)]) == 3
    err = capsys.readouterr().err
    assert f"{TEST_D}: content differs from the pinned upstream file" in err
    assert "ncprobe data download" in err


def test_data_check_names_file_record_and_key(raw_json, tmp_path, capsys):
    def edit(q, d):
        q[2]["span"] = "not in there"
        d[1]["usage"] = "figurative"
    root = _small_copy(raw_json, tmp_path, edit)
    errors, _ = check_idiolink(root)
    assert {(e.file, e.row, e.column) for e in errors} == {(TEST_Q, 3, "span"),
                                                           (TEST_D, 2, "usage")}
    assert main(["data", "check", "--data-dir", str(root)]) == 3
    err = capsys.readouterr().err
    assert f"{TEST_Q}, row 3 ({raw_json[TEST_Q][2]['id']}), column 'span': span" in err
    assert f"{TEST_D}, row 2 ({raw_json[TEST_D][1]['id']}), column 'usage': unknown usage" in err


def test_counts_for_data_info(raw_json, raw_dir, tmp_path, capsys):
    counts, errors = idiolink_counts(raw_dir)
    assert not errors and list(counts) == ["test", "val", "train"]
    assert counts["val"]["documents"] == 1000 and counts["train"]["queries"] == 440
    root = _small_copy(raw_json, tmp_path)  # 2 idioms; NCIMP files absent: exit 3
    assert main(["data", "info", "--json", "--data-dir", str(root)]) == 3
    info = json.loads(capsys.readouterr().out)
    assert list(info["idiolink"]) == ["test"]
    assert (info["idiolink"]["test"]["queries"], info["idiolink"]["test"]["documents"]) == (40,
                                                                                            200)
