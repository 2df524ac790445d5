"""The splicing warning's counts are measured on the data, never written into the code.

Expected counts are computed here from the English neutral file with the csv module:
each probe sentence's span (from its own ``_tag``, parsed with ``ast.literal_eval``) is
spliced into the neutral sentence's span, and the result is compared with the
official probe sentence. The loader's own code is not used for that.
"""

from __future__ import annotations

import ast
import csv
import re
import warnings
from pathlib import Path

import pytest

import ncprobe

EN_NEUTRAL = "risehnhew+Finding-Idiomaticity-in-Word-Representations/dataset/EN/neutral.csv"
#: The paper's probe families -> the sentence columns of the English neutral file (SCHEMA 2).
FAMILIES = {
    "P_Syn": ["synonym for compound"],
    "P_Comp": ["original head only", "original modifier only"],
    "P_WordsSyn": ["synonym both"] + [f"both synonym alt{k}" for k in range(1, 5)],
    "P_Rand": [f"nc rand freq sentence{k}" for k in range(1, 6)],
}


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _span(tag: str) -> tuple[int, int]:
    flags = ast.literal_eval(tag)
    idx = [i for i, f in enumerate(flags) if f]
    return idx[0], idx[-1] + 1


def _splice_counts(path: Path) -> dict[str, tuple[int, int]]:
    """Per family: (probe sentences that splicing would not give, probe sentences)."""
    rows = _rows(path)
    out = {}
    for family, columns in FAMILIES.items():
        differ = 0
        for r in rows:
            words = r["neutral sentence"].split()
            a, b = _span(r["original sentence_tag"])
            for col in columns:
                probe = r[col].split()
                s, e = _span(r[col + "_tag"])
                differ += words[:a] + probe[s:e] + words[b:] != probe
        out[family] = (differ, len(rows) * len(columns))
    return out


def _warning(data_dir: Path, **kwargs) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ncprobe.load_stimuli("en", contexts="nat", probes="syn", data_dir=data_dir,
                                 **kwargs)
        except ncprobe.DataError:
            pass
    [msg] = [str(w.message) for w in caught
             if issubclass(w.category, ncprobe.SplicedStimuliWarning)]
    return msg


def _reported(message: str) -> dict[str, tuple[int, int]]:
    return {f: (int(n), int(t)) for f, n, t in re.findall(r"(P_\w+) (\d+)/(\d+)", message)}


def test_the_counts_are_those_of_the_neutral_file(raw_dir: Path) -> None:
    want = _splice_counts(raw_dir / EN_NEUTRAL)
    assert [t for _, t in want.values()] == [281, 562, 1405, 1405]  # 281 NCs (SCHEMA 0)
    assert _reported(_warning(raw_dir)) == want


def test_the_counts_follow_an_edited_neutral_file(data_copy: Path) -> None:
    """Edit the word before the span of some P_Syn sentences that splicing gave exactly:
    the warning must report the counts of the edited file, not those of the published one."""
    path = data_copy / EN_NEUTRAL
    before = _splice_counts(path)
    rows = _rows(path)
    edited = 0
    for r in rows:
        words = r["neutral sentence"].split()
        a, b = _span(r["original sentence_tag"])
        probe = r["synonym for compound"].split()
        s, e = _span(r["synonym for compound_tag"])
        if s > 0 and words[:a] + probe[s:e] + words[b:] == probe:
            probe[s - 1] = "Zzz"
            r["synonym for compound"] = " ".join(probe)
            edited += 1
        if edited == 7:
            break
    with open(path, "w", newline="", encoding="utf-8") as fh:
        out = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\r\n")
        out.writeheader()
        out.writerows(rows)
    want = _splice_counts(path)
    assert want["P_Syn"] != before["P_Syn"] and want["P_Rand"] == before["P_Rand"]
    assert _reported(_warning(data_copy, accept_modified=True)) == want


def test_no_counts_without_a_neutral_file(data_copy: Path) -> None:
    """Where nothing can be measured, the warning names the cost without numbers."""
    (data_copy / EN_NEUTRAL).unlink()
    msg = _warning(data_copy, collect=True)
    assert "article and agreement edits" in msg
    assert _reported(msg) == {}


def test_the_warning_is_not_given_for_official_files(raw_dir: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", ncprobe.SplicedStimuliWarning)
        stim = ncprobe.load_stimuli("pt", contexts="nat", probes="syn", data_dir=raw_dir)
    assert not any(s.spliced for s in stim)


@pytest.mark.parametrize("wordssyn", ["first", "all"])
def test_spliced_stimuli_are_the_reference_rows(raw_dir: Path, wordssyn: str) -> None:
    """One spliced stimulus per phrase of the reference table's English S1-S3 rows."""
    ref = "malibayram+idiomaticity_probing/studio/public/references/ncimp_en_pt_reference.csv"
    rows = [r for r in _rows(raw_dir / ref) if r["language"] == "EN"
            and r["slot"] in ("S1", "S2", "S3")]
    alternatives = sum(len(r["p_words_syn"].split("||")) for r in rows)
    # per row: P_Syn 1, P_Comp 2, P_Rand 5, and one or every WordsSyn phrase
    want = len(rows) * 8 + (alternatives if wordssyn == "all" else len(rows))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ncprobe.SplicedStimuliWarning)
        stim = ncprobe.load_stimuli("en", contexts="nat", wordssyn=wordssyn, data_dir=raw_dir)
    assert sum(s.spliced for s in stim) == want
    assert len(stim.originals()) == len(rows) == 843
