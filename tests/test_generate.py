"""Generated probes (ncprobe.data.generate): P_Comp, P_Rand, P_Syn.

The checks are written against the contract, not the code: the words outside the span
are compared one by one with the original sentence, and the frequency match is
recomputed here with ``wordfreq`` itself.
"""

from __future__ import annotations

import pytest

from ncprobe.data.generate import comp_probes, rand_probes, rand_words, syn_probes
from ncprobe.errors import UsageError

wordfreq = pytest.importorskip("wordfreq")

SENTENCES = [
    # (tokens, span, head, modifier, lang)
    ("This is an academy award".split(), (3, 5), "award", "academy", "en"),
    ("He shed crocodile tears at the funeral .".split(), (2, 4), "tears", "crocodile", "en"),
    ("police car".split(), (0, 2), "car", "police", "en"),
    ("Ela tem um olho gordo para tudo".split(), (3, 5), "olho", "gordo", "pt"),
]


def outside_kept(orig: list[str], span: tuple[int, int], new: tuple[str, ...],
                 new_span: tuple[int, int]) -> None:
    """Every word before and after the span is the same word, in the same order."""
    start, end = span
    nstart, nend = new_span
    assert nstart == start
    assert list(new[:nstart]) == orig[:start]
    assert list(new[nend:]) == orig[end:]
    assert len(new) - (nend - nstart) == len(orig) - (end - start)


@pytest.mark.parametrize("tokens,span,head,modifier,lang", SENTENCES)
def test_comp_keeps_context_and_points_at_component(tokens, span, head, modifier, lang):
    probes = comp_probes(tokens, span, head, modifier)
    assert [p.probe for p in probes] == ["comp-head", "comp-mod"]
    for p, part in zip(probes, (head, modifier), strict=True):
        outside_kept(tokens, span, p.tokens, p.span)
        assert list(p.tokens[p.span[0]:p.span[1]]) == part.split()
        assert p.substitute == part
    # the original sentence is not modified in place
    assert " ".join(tokens[span[0]:span[1]]).split() == tokens[span[0]:span[1]]


def test_comp_multiword_component_and_bad_span():
    toks = "a b c d".split()
    [head, mod] = comp_probes(toks, (1, 3), "new head", "m")
    assert head.tokens == ("a", "new", "head", "d") and head.span == (1, 3)
    assert mod.tokens == ("a", "m", "d") and mod.span == (1, 2)
    for bad in [(2, 2), (3, 5), (-1, 2)]:
        with pytest.raises(UsageError):
            comp_probes(toks, bad, "x", "y")
    with pytest.raises(UsageError):
        comp_probes(toks, (1, 3), "  ", "y")


@pytest.mark.parametrize("tokens,span,head,modifier,lang", SENTENCES)
def test_rand_probes_frequency_matched(tokens, span, head, modifier, lang):
    band = 0.5
    nc = tokens[span[0]:span[1]]
    probes = rand_probes(tokens, span, nc, lang, k=5, seed=7, band=band)
    assert len(probes) == 5
    assert [p.variant for p in probes] == [1, 2, 3, 4, 5]
    seen: set[str] = set()
    for p in probes:
        assert p.probe == "rand"
        outside_kept(tokens, span, p.tokens, p.span)
        chosen = p.tokens[p.span[0]:p.span[1]]
        assert len(chosen) == len(nc)  # same number of words as the compound
        assert p.substitute == " ".join(chosen)
        for new, old in zip(chosen, nc, strict=True):
            assert new.isalpha()
            assert new.casefold() not in {w.casefold() for w in nc}
            z_new = wordfreq.zipf_frequency(new, lang)
            z_old = wordfreq.zipf_frequency(old, lang)
            assert abs(z_new - z_old) <= band + 1e-9, (new, old, z_new, z_old)
        # the report agrees with wordfreq
        assert p.zipf is not None
        assert p.zipf.words == tuple(chosen)
        assert p.zipf.zipf == tuple(wordfreq.zipf_frequency(w, lang) for w in chosen)
        assert p.zipf.source_zipf == tuple(wordfreq.zipf_frequency(w, lang) for w in nc)
        for d, a, b in zip(p.zipf.diff, p.zipf.zipf, p.zipf.source_zipf, strict=True):
            assert d == pytest.approx(a - b, abs=0.006)
        seen.update(w.casefold() for w in chosen)
    assert len(seen) == 5 * len(nc)  # no word used twice across the k probes


def test_rand_seeded():
    a = rand_words("police car", "en", n=5, seed=1)
    b = rand_words(["police", "car"], "en", n=5, seed=1)
    c = rand_words("police car", "en", n=5, seed=2)
    assert [p.words for p in a] == [p.words for p in b]
    assert a == b
    assert [p.words for p in a] != [p.words for p in c]


def test_rand_narrow_band_and_exclude():
    band = 0.1
    out = rand_words("grey matter", "en", n=3, seed=0, band=band,
                     exclude=["Brain", "the"])
    for p in out:
        for new, old in zip(p.words, ("grey", "matter"), strict=True):
            assert abs(wordfreq.zipf_frequency(new, "en")
                       - wordfreq.zipf_frequency(old, "en")) <= band + 1e-9
            assert new.casefold() not in {"grey", "matter", "brain", "the"}


def test_rand_errors():
    with pytest.raises(UsageError, match="wordfreq has no frequency list"):
        rand_words("police car", "xx-unknown", n=1, seed=0)
    with pytest.raises(UsageError, match="wordfreq has no frequency list"):
        rand_probes("a police car".split(), (1, 3), "police car", "qq", k=1, seed=0)
    # a word wordfreq has never seen (Zipf 0): no candidate near it; the message says
    # how wide the band would need to be
    with pytest.raises(UsageError, match=r"band of ±\d+\.\d\d would give"):
        rand_words("qzxjvw car", "en", n=2, seed=0)
    for n, band in ((0, 0.5), (1, 0.0), (1, float("nan")), (1, -1.0)):
        with pytest.raises(UsageError):
            rand_words("police car", "en", n=n, seed=0, band=band)
    with pytest.raises(UsageError):
        rand_words("  ", "en", n=1, seed=0)


def test_syn_probes():
    toks = "use your grey matter now".split()
    out = syn_probes(toks, (2, 4), ["brain", "", "intelligence quotient"])
    assert [p.variant for p in out] == [1, 2]
    assert out[0].tokens == ("use", "your", "brain", "now") and out[0].span == (2, 3)
    assert out[1].tokens == ("use", "your", "intelligence", "quotient", "now")
    ws = syn_probes(toks, (2, 4), ["gray substance"], probe="wordssyn")
    assert ws[0].probe == "wordssyn"
    with pytest.raises(UsageError):
        syn_probes(toks, (2, 4), ["x"], probe="rand")
