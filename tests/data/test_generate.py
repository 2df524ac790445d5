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


# --------------------------------------------------------------------------------------------
# generate_pairs / `ncprobe pairs generate`: a reviewable pairs file from compounds in context

INPUT = (
    "nc,sentence,start,end,head,modifier,comp,class,syn,wordssyn\n"
    "grey matter,Use your grey matter now .,2,4,matter,grey,1.5,PC,brain;intellect,"
    "gray substance\n"
    "police car,A police car drove past .,1,3,car,police,4.9,C,,\n"
    "crocodile tears,He shed crocodile tears at the funeral .,2,4,tears,crocodile,0.5,I,"
    "false sorrow,\n")


def _rows(path) -> list[dict[str, str]]:
    import csv

    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _write(tmp_path, text: str, name: str = "in.csv"):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_generate_pairs_file_round_trips_through_load_pairs(tmp_path):
    from ncprobe.data.generate import generate_pairs
    from ncprobe.data.pairs import load_pairs

    src = _write(tmp_path, INPUT)
    rep = generate_pairs(src, tmp_path / "pairs.csv", "en", k=4, seed=3)
    rows = _rows(tmp_path / "pairs.csv")
    # per compound: original, comp-head, comp-mod, 4 rand, the synonyms given
    expected = {"grey matter": 1 + 2 + 4 + 2 + 1, "police car": 1 + 2 + 4,
                "crocodile tears": 1 + 2 + 4 + 1}
    assert {nc: sum(r["nc"] == nc for r in rows) for nc in expected} == expected
    assert rep.rows["rand"] == 12 and rep.rows["original"] == 3
    assert len(rep.zipf_diffs) == 12 * 2  # two words per compound, 4 phrases each
    sentences = {line.split(",")[0]: line.split(",")[1] for line in INPUT.splitlines()[1:]}
    spans = {"grey matter": (2, 4), "police car": (1, 3), "crocodile tears": (2, 4)}
    for r in rows:
        orig = sentences[r["nc"]].split()
        start, end = spans[r["nc"]]
        assert r["sentence"] == sentences[r["nc"]]
        assert (int(r["start"]), int(r["end"])) == (start, end)
        assert r["origin"] == ("generated" if r["probe"] in ("comp-head", "comp-mod", "rand")
                               else "given")
        if r["probe"] == "rand":
            words = r["substitute"].split()
            assert len(words) == 2
            zipf = [float(x) for x in r["zipf"].split()]
            source = [float(x) for x in r["source_zipf"].split()]
            assert zipf == [round(wordfreq.zipf_frequency(w, "en"), 2) for w in words]
            assert source == [round(wordfreq.zipf_frequency(w, "en"), 2)
                              for w in orig[start:end]]
            assert max(abs(a - b) for a, b in zip(zipf, source, strict=True)) <= 0.5 + 0.011
            assert float(r["max_abs_zipf_diff"]) == pytest.approx(
                max(abs(float(d)) for d in r["zipf_diff"].split()))
            # no word of the sentence, whatever its case
            assert not {w.casefold() for w in words} & {w.casefold() for w in orig}
    # load_pairs reads the file as written: every probe keeps every word outside the span
    stim = load_pairs(tmp_path / "pairs.csv")
    assert len(stim) == len(rows)
    for s in stim:
        orig = sentences[s.nc].split()
        start, end = spans[s.nc]
        assert list(s.tokens[:start]) == orig[:start]
        assert list(s.tokens[s.span[1]:]) == orig[end:]
    heads = {s.nc: s.target for s in stim if s.probe == "comp-head"}
    assert heads == {"grey matter": "matter", "police car": "car", "crocodile tears": "tears"}
    assert {s.target for s in stim if s.nc == "grey matter" and s.probe == "syn"} == {
        "brain", "intellect"}
    assert stim.ncs[("en", "grey matter")].comp == 1.5
    assert stim.ncs[("en", "crocodile tears")].cls == "I"
    assert "median" in rep.summary() and str(tmp_path / "pairs.csv") in rep.summary()


def test_generate_pairs_seeded_and_per_compound(tmp_path):
    from ncprobe.data.generate import generate_pairs

    src = _write(tmp_path, INPUT)
    generate_pairs(src, tmp_path / "a.csv", "en", seed=11)
    generate_pairs(src, tmp_path / "b.csv", "en", seed=11)
    generate_pairs(src, tmp_path / "c.csv", "en", seed=12)
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()
    assert (tmp_path / "a.csv").read_bytes() != (tmp_path / "c.csv").read_bytes()
    # one compound alone, listed last: its random words are the same as among the others
    lines = INPUT.splitlines()
    _write(tmp_path, "\n".join([lines[0], lines[2]]) + "\n", "one.csv")
    generate_pairs(tmp_path / "one.csv", tmp_path / "d.csv", "en", seed=11)

    def rand(path, nc):
        return [r["substitute"] for r in _rows(path) if r["nc"] == nc and r["probe"] == "rand"]
    assert rand(tmp_path / "d.csv", "police car") == rand(tmp_path / "a.csv", "police car")


def test_generate_pairs_finds_the_span_and_infers_heads(tmp_path):
    from ncprobe.data.generate import generate_pairs

    src = _write(tmp_path, "nc,sentence\nvin rouge,Il a bu du vin rouge .\n"
                 "eau-forte,Une eau-forte ancienne .\n")
    generate_pairs(src, tmp_path / "first.csv", "fr", head="first", k=1)
    rows = _rows(tmp_path / "first.csv")
    orig = {r["nc"]: (int(r["start"]), int(r["end"])) for r in rows if r["probe"] == "original"}
    assert orig == {"vin rouge": (4, 6), "eau-forte": (1, 2)}
    comp = {(r["nc"], r["probe"]): r["substitute"] for r in rows if r["probe"].startswith("comp")}
    assert comp == {("vin rouge", "comp-head"): "vin", ("vin rouge", "comp-mod"): "rouge",
                    ("eau-forte", "comp-head"): "eau", ("eau-forte", "comp-mod"): "forte"}
    asked = []

    def ask(nc, parts):
        asked.append((nc, parts))
        return parts[1]
    generate_pairs(src, tmp_path / "ask.csv", "fr", ask=ask, k=1)
    assert asked == [("vin rouge", ("vin", "rouge")), ("eau-forte", ("eau", "forte"))]
    comp = {(r["nc"], r["probe"]): r["substitute"] for r in _rows(tmp_path / "ask.csv")
            if r["probe"] == "comp-head"}
    assert comp == {("vin rouge", "comp-head"): "rouge", ("eau-forte", "comp-head"): "forte"}


def test_generate_pairs_reports_every_bad_row(tmp_path):
    from ncprobe.data.generate import generate_pairs
    from ncprobe.errors import DataErrors

    src = _write(tmp_path, (
        "nc,sentence,head,modifier,context\n"
        "police car,A police car here .,car,police,S1\n"       # fine
        "police car,Another police car .,car,police,S1\n"      # second sentence in S1
        "grey matter,grey matter and grey matter,matter,grey,\n"  # occurs twice, no span
        "fire truck,A fire truck .,,,\n"                       # no head, no rule
        "red tape,Too much red tape .,banana,red,\n"           # head not in the compound
        "acid test,The acid test .,test,acid,S9\n"))           # unknown context
    with pytest.raises(DataErrors) as info:
        generate_pairs(src, tmp_path / "out.csv", "en", k=1)
    got = [(e.row, e.column) for e in info.value.errors]
    assert got == [(2, "context"), (3, "sentence"), (4, "head"), (5, "head"), (6, "context")]
    assert not (tmp_path / "out.csv").exists()  # nothing written


def test_generate_pairs_refuses_bad_options(tmp_path):
    from ncprobe.data.generate import generate_pairs

    src = _write(tmp_path, INPUT)
    out = tmp_path / "out.csv"
    out.write_text("someone else's file\n")
    with pytest.raises(UsageError, match="exists"):
        generate_pairs(src, out, "en")
    assert out.read_text() == "someone else's file\n"  # untouched
    with pytest.raises(UsageError, match="replace the input"):
        generate_pairs(src, src, "en", overwrite=True)
    with pytest.raises(UsageError, match="wordfreq has no frequency list"):
        generate_pairs(src, tmp_path / "x.csv", "qq")
    with pytest.raises(UsageError, match="head must be"):
        generate_pairs(src, tmp_path / "x.csv", "en", head="middle")
    with pytest.raises(UsageError, match=".csv"):
        generate_pairs(src, tmp_path / "x.parquet", "en")
    generate_pairs(src, out, "en", overwrite=True)
    assert out.read_text().startswith("lang,nc,context,")


def test_cli_pairs_generate(tmp_path, monkeypatch, capsys):
    import io

    from ncprobe.cli import main

    src = _write(tmp_path, "nc,sentence\nfire truck,A red fire truck .\n")
    out = tmp_path / "p.csv"
    monkeypatch.setattr("sys.stdin", io.StringIO("engine\ntruck\n"))  # a wrong answer first
    assert main(["pairs", "generate", str(src), "--lang", "en", "--out", str(out),
                 "--head", "ask", "--k", "2", "--seed", "4"]) == 0
    captured = capsys.readouterr()
    assert "answer one of fire/truck" in captured.err
    assert "wrote 5 rows for 1 compound(s)" in captured.out
    heads = [r["substitute"] for r in _rows(out) if r["probe"] == "comp-head"]
    assert heads == ["truck"]
    # without an answer (input ended) or a rule: exit 2 and 3, with the reason
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    assert main(["pairs", "generate", str(src), "--lang", "en", "--out", str(tmp_path / "q.csv"),
                 "--head", "ask"]) == 2
    assert "input ended" in capsys.readouterr().err
    assert main(["pairs", "generate", str(src), "--lang", "en", "--out",
                 str(tmp_path / "q.csv")]) == 3
    assert "--head last" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:  # argparse refuses it before any work
        main(["pairs", "generate", str(src), "--out", str(tmp_path / "q.csv"), "--band", "0"])
    assert exit_info.value.code == 2
    assert "--band: '0' is not a number > 0" in capsys.readouterr().err


def test_rand_keeps_linking_words_and_draws_both_sides_of_the_band():
    out = rand_words("pomme de terre", "fr", n=5, seed=2, keep=[1])
    source = [wordfreq.zipf_frequency(w, "fr") for w in ("pomme", "de", "terre")]
    for p in out:
        assert p.words[1] == "de" and p.kept == (1,)
        for j in (0, 2):
            assert abs(wordfreq.zipf_frequency(p.words[j], "fr") - source[j]) <= 0.5 + 1e-9
        assert p.max_abs_diff == max(abs(p.diff[0]), abs(p.diff[2]))
    # every slot with enough candidates on both sides: the 5 draws alternate below/above
    for nc in ("police car", "grey matter", "academy award", "coffee table"):
        phrases = rand_words(nc, "en", n=5, seed=9)
        for j, word in enumerate(nc.split()):
            z = wordfreq.zipf_frequency(word, "en")
            below = sum(wordfreq.zipf_frequency(p.words[j], "en") < z for p in phrases)
            assert below in (2, 3), (nc, word, [p.words[j] for p in phrases])
    with pytest.raises(UsageError, match="nothing to draw"):
        rand_words("pomme de terre", "fr", n=1, seed=0, keep=[0, 1, 2])
    with pytest.raises(UsageError, match="positions"):
        rand_words("pomme de terre", "fr", n=1, seed=0, keep=[3])


def test_generate_pairs_draws_only_head_and_modifier(tmp_path):
    from ncprobe.data.generate import generate_pairs

    src = _write(tmp_path, "nc,sentence,head,modifier\n"
                 "chemin de fer,Le chemin de fer traverse la ville .,chemin,fer\n")
    rep = generate_pairs(src, tmp_path / "out.csv", "fr", k=5, seed=1)
    rand = [r for r in _rows(tmp_path / "out.csv") if r["probe"] == "rand"]
    assert len(rand) == 5
    for r in rand:
        first, de, last = r["substitute"].split()
        assert de == "de" and first not in ("chemin", "fer") and last not in ("chemin", "fer")
        assert r["zipf_diff"].split()[1] == "0.00"
    assert len(rep.zipf_diffs) == 10  # the two drawn words of each phrase, not "de"
