"""The probe generator validated on NCIMP itself (issue 13).

P_Comp: the released neutral head-only and modifier-only sentences are regenerated with
``comp_probes`` from the neutral sentence, its tag and the file's own head and modifier
columns, and compared word by word with the released sentences, which are read here with
the csv module. The generator keeps every word outside the span; the released sentences
were written by hand, with the article (EN) or the gender agreement (PT) before the span
edited to fit the new word. So the expected number of identical sentences is derived
from the raw file alone: the rows whose released probe keeps the original's words outside
the span.

P_Rand: ``rand_stimuli`` on a handful of English neutral originals; the frequency match is
recomputed with ``wordfreq`` itself.
"""

from __future__ import annotations

import ast
import csv
import warnings
from pathlib import Path

import pytest

from ncprobe.data.generate import comp_probes, rand_stimuli
from ncprobe.data.ncimp import NEUTRAL_FILE

wordfreq = pytest.importorskip("wordfreq")

# Masculine/feminine (singular and plural) forms of the Portuguese determiners that can
# stand before the NC in the neutral pattern ("Este é um", "Esta é uma", "Estes são" ...).
PT_AGREEMENT = [frozenset(p) for p in (("este", "esta"), ("estes", "estas"), ("um", "uma"),
                                       ("uns", "umas"), ("o", "a"), ("os", "as"))]
EN_ARTICLES = frozenset(("a", "an"))
PROBE_COLUMNS = {"comp-head": ("original head only", "compound noun head"),
                 "comp-mod": ("original modifier only", "compound noun modifier")}


def _rows(raw_dir: Path, lang: str) -> list[dict[str, str]]:
    path = raw_dir / NEUTRAL_FILE.format(LANG=lang.upper())
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def _span(tag_text: str) -> tuple[int, int]:
    """The [start, end) of the True entries of a tag list, which must be contiguous."""
    tag = ast.literal_eval(tag_text)
    true = [i for i, t in enumerate(tag) if t]
    assert true and true == list(range(true[0], true[-1] + 1)), tag_text
    return true[0], true[-1] + 1


def _explained(lang: str, generated: str, released: str) -> bool:
    """Whether two differing words are an article (EN) or agreement (PT) alternation."""
    pair = frozenset((generated.casefold(), released.casefold()))
    if lang == "en":
        return pair == EN_ARTICLES
    return pair in PT_AGREEMENT


@pytest.mark.parametrize("probe", ["comp-head", "comp-mod"])
@pytest.mark.parametrize("lang", ["en", "pt"])
def test_comp_regenerated_from_the_neutral_file(raw_dir: Path, lang: str, probe: str) -> None:
    rows = _rows(raw_dir, lang)
    sentence_col, part_col = PROBE_COLUMNS[probe]
    idx = list(PROBE_COLUMNS).index(probe)
    identical = expected_identical = explained = 0
    for n, r in enumerate(rows, start=2):  # file line of the row (header is line 1)
        where = f"{lang} line {n} ({r['compound']})"
        tokens = r["neutral sentence"].split()
        start, end = _span(r["original sentence_tag"])
        part = r[part_col].split()
        gen = comp_probes(tokens, (start, end), r["compound noun head"],
                          r["compound noun modifier"])[idx]
        assert gen.probe == probe
        # the generator's contract: outside words kept, the part alone in the span
        assert list(gen.tokens[:start]) == tokens[:start], where
        assert list(gen.tokens[start + len(part):]) == tokens[end:], where
        assert gen.span == (start, start + len(part)), where
        assert list(gen.tokens[gen.span[0]:gen.span[1]]) == part, where
        # the released sentence's own tag puts the same part at the same place
        released = r[sentence_col].split()
        rstart, rend = _span(r[sentence_col + "_tag"])
        assert (rstart, rend) == gen.span and released[rstart:rend] == part, where
        # the rule: identical exactly where the hand-written probe kept the outside words
        kept = released[:rstart] == tokens[:start] and released[rend:] == tokens[end:]
        expected_identical += kept
        if list(gen.tokens) == released:
            identical += 1
            continue
        # every difference: same length, only words before the span, an explained pair
        assert len(released) == len(gen.tokens), where
        diffs = [(i, g, w) for i, (g, w) in enumerate(zip(gen.tokens, released, strict=True))
                 if g != w]
        assert all(i < start for i, _, _ in diffs), f"{where}: {diffs}"
        assert all(_explained(lang, g, w) for _, g, w in diffs), f"{where}: {diffs}"
        explained += 1
    assert identical == expected_identical
    assert identical + explained == len(rows)
    assert identical > 0.8 * len(rows)


def test_en_head_differences_are_the_article_of_the_head(raw_dir: Path) -> None:
    """In the released English head-only probes, the only word before the span that ever
    changes is the article (a <-> an, to fit the head); the modifier-only probes keep the
    original's words before the span, as the modifier is the compound's first word."""
    changed = 0
    for r in _rows(raw_dir, "en"):
        tokens = r["neutral sentence"].split()
        start, _ = _span(r["original sentence_tag"])
        released = r["original head only"].split()
        if released[start - 1] != tokens[start - 1]:
            changed += 1
            assert {released[start - 1], tokens[start - 1]} == EN_ARTICLES, r["compound"]
        assert r["original modifier only"].split()[:start] == tokens[:start], r["compound"]
    assert changed > 0


@pytest.fixture(scope="module")
def en_originals(raw_dir: Path) -> list:
    import ncprobe

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ncprobe.SplicedStimuliWarning)
        stim = ncprobe.load_stimuli("en", contexts="neut", data_dir=raw_dir)
    originals = [s for s in stim if s.probe == "original"]
    # a handful, spread over the file
    return originals[::47]


def _words_by_nc(generated) -> dict[str, list[tuple[str, ...]]]:
    out: dict[str, list[tuple[str, ...]]] = {}
    for stim, _ in generated:
        out.setdefault(stim.nc, []).append(stim.tokens[stim.span[0]:stim.span[1]])
    return out


def test_rand_on_ncimp_english(en_originals: list) -> None:
    assert len(en_originals) >= 5
    generated = rand_stimuli(en_originals, k=5, seed=0, band=0.5)
    assert len(generated) == 5 * len(en_originals)
    by_nc = {o.nc: o for o in en_originals}
    for (stim, report), variant in zip(generated, [1, 2, 3, 4, 5] * len(en_originals),
                                       strict=True):
        orig = by_nc[stim.nc]
        start, end = orig.span
        nc_words = orig.tokens[start:end]
        assert (stim.probe, stim.variant, stim.context) == ("rand", variant, orig.context)
        new = stim.tokens[stim.span[0]:stim.span[1]]
        assert stim.span == (start, start + len(nc_words))
        assert stim.tokens[:start] == orig.tokens[:start]
        assert stim.tokens[stim.span[1]:] == orig.tokens[end:]
        sentence = {w.casefold() for w in orig.tokens}
        for word, source in zip(new, nc_words, strict=True):
            assert word.casefold() not in sentence
            z_new = wordfreq.zipf_frequency(word, "en")
            z_src = wordfreq.zipf_frequency(source, "en")
            assert abs(z_new - z_src) <= 0.5 + 1e-9, (stim.nc, word, source)
        assert tuple(report.words) == tuple(new)
    for nc, phrases in _words_by_nc(generated).items():
        words = [w.casefold() for ph in phrases for w in ph]
        assert len(words) == len(set(words)), nc  # no word twice among the 5 phrases
    # seeded: the same call gives the same stimuli; another seed other words
    again = rand_stimuli(en_originals, k=5, seed=0, band=0.5)
    assert [s for s, _ in again] == [s for s, _ in generated]
    other = rand_stimuli(en_originals, k=5, seed=1, band=0.5)
    assert _words_by_nc(other) != _words_by_nc(generated)


def test_rand_words_of_an_nc_do_not_depend_on_the_others(en_originals: list) -> None:
    full = _words_by_nc(rand_stimuli(en_originals, k=5, seed=0))
    part = _words_by_nc(rand_stimuli(en_originals[2:4], k=5, seed=0))
    backwards = _words_by_nc(rand_stimuli(en_originals[::-1], k=5, seed=0))
    assert set(part) == {o.nc for o in en_originals[2:4]}
    for nc, phrases in part.items():
        assert full[nc] == phrases
    assert backwards == full


def test_replace_rand_swaps_every_released_rand_probe_and_its_notes(raw_dir: Path) -> None:
    import ncprobe
    from ncprobe.data.generate import replace_rand

    stim = ncprobe.load_stimuli("en", contexts="neut", probes="original,rand", data_dir=raw_dir)
    released = {(s.nc, s.variant): s.target for s in stim if s.probe == "rand"}
    # the loader counts edits in the released rand sentences (a/an): 336 rows, SCHEMA 5
    assert any(": rand " in n for n in stim.notes)
    gen = replace_rand(stim, k=3, seed=0)
    rand = [s for s in gen if s.probe == "rand"]
    originals = [s for s in stim if s.probe == "original"]
    assert len(rand) == 3 * len(originals)
    assert all(s.source.startswith("generated:rand") and s.spliced for s in rand)
    assert sum((s.nc, s.variant) in released and released[(s.nc, s.variant)] == s.target
               for s in rand) == 0
    assert [s for s in gen if s.probe == "original"] == originals
    assert not any(": rand " in n for n in gen.notes)  # the released probes' notes are gone
    assert sum(n.startswith("P_Rand generated for") for n in gen.notes) == 1
