"""The NCIMP importer on the real files: the acceptance numbers, spans, scores and classes.

Expected values come from the issue and the paper (counts, class means, lengths)
or from files the importer does not read for that purpose (the reference table
REF, a third party's independent derivation; the bare-phrase columns).
"""

from __future__ import annotations

import csv
import json
import math
import unicodedata
import warnings
from pathlib import Path

import pandas as pd
import pytest

import ncprobe
from ncprobe.data.ncimp import NEUTRAL_FILE, REF_FILE

PAPER_CLASS_MEANS = {"en": (0.95, 2.34, 4.14), "pt": (1.52, 2.46, 3.62)}

# SCHEMA section 2: the 30 PT NCs whose naturalistic head-only probe holds the first word.
PT_SWAPPED = """alta temporada, alta-costura, alto mar, alto-falante, curto-circuito, livre-docente,
longa data, longa-metragem, mau contato, mau-humor, mau-olhado, má-fé, novo mundo, novo-rico,
primeira infância, primeira mão, primeira necessidade, primeira-dama, primeiro ministro,
primeiro plano, pronto-socorro, puro-sangue, quinta categoria, segundas intenções,
segundo plano, sexto sentido, sétima arte, terceira idade, terceira pessoa, viva voz"""


def test_acceptance_counts(stimuli_all) -> None:
    d = stimuli_all.describe()
    en, pt = d["en"], d["pt"]
    assert (en["ncs"], en["scored"], en["unscored"]) == (281, 280, ["dust storm"])
    assert en["classes"] == {"I": 103, "PC": 89, "C": 88}
    assert (en["contexts"]["naturalistic"], en["contexts"]["neutral"]) == (843, 281)
    assert (pt["ncs"], pt["scored"], pt["classes"]) == (180, 180, {"I": 60, "PC": 60, "C": 60})
    assert (pt["contexts"]["naturalistic"], pt["contexts"]["neutral"]) == (540, 180)
    assert round(en["mean_naturalistic_length"], 1) == 23.4
    assert round(pt["mean_naturalistic_length"], 1) == 13.0
    for lang in ("en", "pt"):
        for c, want in zip(("I", "PC", "C"), PAPER_CLASS_MEANS[lang], strict=True):
            assert abs(d[lang]["class_mean_gold"][c] - want) <= 0.01


@pytest.mark.parametrize("lang", ["en", "pt"])
def test_probes_per_context(stimuli_all, lang: str) -> None:
    stim = stimuli_all.filter(lang=lang, context=("S1", "S2", "S3", "N"))
    per: dict = {}
    for s in stim:
        per.setdefault((s.nc, s.context), []).append(s.probe)
    for probes in per.values():
        assert probes.count("original") == 1
        assert probes.count("syn") == 1
        assert probes.count("comp-head") == probes.count("comp-mod") == 1
        assert probes.count("wordssyn") >= 1
        assert probes.count("rand") == 5


def test_default_is_one_wordssyn_variant(raw_dir: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ncprobe.SplicedStimuliWarning)
        stim = ncprobe.load_stimuli("en", probes="wordssyn", data_dir=raw_dir)
    assert {s.variant for s in stim if s.probe == "wordssyn"} == {1}
    assert {s.probe for s in stim} == {"original", "wordssyn"}


def _fold(w: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", w.lower())
                   if not unicodedata.combining(c))


def _ref_phrases(raw_dir: Path) -> dict:
    """(lang, nc, context) -> {probe: [phrases]} from the reference table."""
    ref = pd.read_csv(raw_dir / REF_FILE, dtype=str, keep_default_na=False)
    out = {}
    for r in ref.to_dict("records"):
        ctx = {"N1": "N", "N2": "Npl"}.get(r["slot"], r["slot"])
        comp = [p.strip() for p in r["p_comp"].split("||")]
        out[(r["language"].lower(), r["canonical_form"], ctx)] = {
            "original": [" ".join(r["target_surface"].split())],
            "syn": [r["p_syn"].strip()], "comp": comp,
            "wordssyn": [" ".join(p.split()) for p in r["p_words_syn"].split("||")],
            "rand": [p.strip() for p in r["p_rand"].split("||")]}
    return out


def test_every_span_holds_what_it_claims(stimuli_all, raw_dir: Path) -> None:
    """Over the whole data set: span text == the NC or substitute, checked against REF."""
    ref = _ref_phrases(raw_dir)
    checked = 0
    for s in stimuli_all:
        assert " ".join(s.tokens[s.span[0]:s.span[1]]) == s.target
        text = s.text
        cs, ce = s.char_span
        assert text[cs:ce] == s.target
        if s.context == "Npl":
            continue  # REF's plural slot mixes singular and plural probes (SCHEMA section 5)
        want = ref[(s.lang, s.nc, s.context)]
        if s.probe == "original":
            assert s.target.lower() == want["original"][0].lower()
        elif s.probe in ("comp-head", "comp-mod"):
            assert s.target in want["comp"]  # order checked in test_pt_head_modifier
        else:
            assert s.target == want[s.probe][s.variant - 1], (s.source, s.target)
        checked += 1
    # EN: (843 + 281) contexts x (1 original + 1 syn + 2 comp + 5 wordssyn + 5 rand);
    # PT: (540 + 180) contexts x (1 + 1 + 2 + 1 + 5)
    assert checked == 1124 * 14 + 720 * 10


def test_probe_sentences_differ_from_original_only_in_span(stimuli_all) -> None:
    """Spliced probes keep every word outside the span."""
    originals = {(s.lang, s.nc, s.context): s for s in stimuli_all.originals()}
    spliced = [s for s in stimuli_all if s.spliced]
    assert len(spliced) > 7000
    for s in spliced:
        o = originals[(s.lang, s.nc, s.context)]
        assert s.tokens[:s.span[0]] == o.tokens[:o.span[0]]
        assert s.tokens[s.span[1]:] == o.tokens[o.span[1]:]


def test_pt_head_modifier(stimuli_all, raw_dir: Path) -> None:
    """comp-head holds the semantic head (the neutral file's `compound noun head`) everywhere."""
    neu = pd.read_csv(raw_dir / NEUTRAL_FILE.format(LANG="PT"), dtype=str, keep_default_na=False)
    heads = dict(zip(neu["compound"], neu["compound noun head"], strict=True))
    mods = dict(zip(neu["compound"], neu["compound noun modifier"], strict=True))
    swapped = {x.strip() for x in PT_SWAPPED.replace("\n", " ").split(",")}
    assert len(swapped) == 30
    for s in stimuli_all.filter(lang="pt", context=("S1", "S2", "S3", "N"),
                                probe=("comp-head", "comp-mod")):
        lemma = (heads if s.probe == "comp-head" else mods)[s.nc]
        n = min(3, len(_fold(lemma)))
        assert _fold(s.target)[:2] == _fold(lemma)[:2] and _fold(s.target)[:n - 1] == _fold(
            lemma)[:n - 1], (s.nc, s.context, s.probe, s.target)
    # the 30 listed NCs: the official head-only sentence holds the first word, we relabelled it
    for s in stimuli_all.filter(lang="pt", context="S1", probe="comp-head", nc=swapped):
        assert s.source.endswith(":original modifier only")
    alta = [s for s in stimuli_all.filter(lang="pt", nc="alta temporada", probe="comp-head")
            if s.context.startswith("S")]
    assert {s.target.lower() for s in alta} <= {"temporada", "temporadas"}


def test_scores_and_classes(stimuli_all, raw_dir: Path) -> None:
    nctti = pd.read_csv(raw_dir / "marcospln+nctti/data/data_en.tsv", sep="\t", dtype=str,
                        keep_default_na=False).set_index("compound")
    assert nctti.index.is_unique
    row = nctti.loc["dutch courage"]
    nc = stimuli_all.ncs[("en", "Dutch courage")]  # canonical key keeps its case
    assert nc.cls == {"NC": "I", "PC": "PC", "C": "C"}[row["CompScale"]]
    want = sum(float(row[c]) for c in ("MeanS1", "MeanS2", "MeanS3")) / 3
    assert nc.comp == pytest.approx(want) and nc.gold == nc.comp
    # NCTTI lacks "dust storm" and leaves the type score of "small fry" empty: both take it
    # from the sense-ids file, read here with csv (decimal commas)
    assert "dust storm" not in nctti.index and nctti.loc["small fry", "CompType"] == ""
    with open(raw_dir / "marcospln+noun_compound_senses/input/sentids_en.csv", newline="",
              encoding="utf-8") as fh:
        sense_type = {r["compound"]: float(r["compositionality"].replace(",", "."))
                      for r in csv.DictReader(fh)}
    dust = stimuli_all.ncs[("en", "dust storm")]
    assert math.isnan(dust.comp) and dust.cls is None
    assert dust.comp_type == pytest.approx(sense_type["dust storm"])
    assert stimuli_all.ncs[("en", "small fry")].comp_type == pytest.approx(sense_type["small fry"])
    assert any("dust storm" in n and "without a gold" in n for n in stimuli_all.notes)


def test_type_level_gold(raw_dir: Path) -> None:
    stim = ncprobe.load_stimuli("pt", contexts="neut", gold="type", data_dir=raw_dir)
    xlsx = pd.read_excel(raw_dir / "risehnhew+Finding-Idiomaticity-in-Word-Representations/"
                         "dataset/human_compositionality scores.xlsx")
    want = xlsx[(xlsx.language == "pt")].groupby("compound")["CompositionalityType"].first()
    got = {nc: n.gold for (_, nc), n in stim.ncs.items()}
    assert len(got) == 180
    for nc, v in want.items():
        assert got[nc] == pytest.approx(v, abs=1e-6)


def test_to_frame(raw_dir: Path) -> None:
    stim = ncprobe.load_stimuli("pt", contexts="neut", probes="syn,rand", data_dir=raw_dir)
    df = stim.to_frame()
    assert len(df) == 180 * 7
    assert set(df["probe"].unique()) == {"original", "syn", "rand"}
    for r in df.sample(50, random_state=0).itertuples():
        assert r.sentence[r.char_start:r.char_end] == r.target
    nc = df[df.nc == "vinho branco"]
    assert nc["cls"].nunique() == 1 and nc["comp"].nunique() == 1
    assert len(stim.ncs_frame()) == 180


def test_english_naturalistic_warns_once_and_names_the_cost(raw_dir: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        ncprobe.load_stimuli("en", contexts="nat", probes="syn", data_dir=raw_dir)
    msgs = [w for w in caught if issubclass(w.category, ncprobe.SplicedStimuliWarning)]
    assert len(msgs) == 1 and "article" in str(msgs[0].message)
    with pytest.raises(ncprobe.DataError, match="naturalistics_examplesent1.csv"):
        ncprobe.load_stimuli("en", contexts="nat", data_dir=raw_dir, en_naturalistic="official")


def test_official_english_naturalistic_files_are_read(data_copy: Path) -> None:
    """Write EN naturalistic files in the official (PT) layout and check they are used."""
    ref = pd.read_csv(data_copy / REF_FILE, dtype=str, keep_default_na=False)
    ref = ref[(ref.language == "EN") & ref.slot.isin(["S1", "S2", "S3"])]
    for k in (1, 2, 3):
        rows = []
        for r in ref[ref.slot == f"S{k}"].to_dict("records"):
            words = r["original_sentence"].split()
            a, b = json.loads(r["span"])

            def probe(phrase, a=a, b=b, words=words):
                ph = phrase.split()
                sent = words[:a] + ph + words[b:]
                tag = [a <= i < a + len(ph) for i in range(len(sent))]
                return " ".join(sent), str(tag)
            row = {"compound": r["canonical_form"], "compound noun": r["target_surface"]}
            row["original sentence"], row["original sentence_tag"] = probe(r["target_surface"])
            comp = [p.strip() for p in r["p_comp"].split("||")]
            cols = {"synonym for compound": r["p_syn"], "original head only": comp[0],
                    "original modifier only": comp[1],
                    "synonym both": "official " + r["p_words_syn"].split("||")[0].strip()}
            for j, p in enumerate(r["p_rand"].split("||"), start=1):
                cols[f"nc rand freq sentence{j}"] = p.strip()
            for c, phrase in cols.items():
                row[c], row[c + "_tag"] = probe(phrase)
            rows.append(row)
        out = data_copy / ("risehnhew+Finding-Idiomaticity-in-Word-Representations/dataset/EN/"
                           f"naturalistics_examplesent{k}.csv")
        pd.DataFrame(rows).to_csv(out, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ncprobe.SplicedStimuliWarning)
        # files written here are not the pinned upstream copies: accepted explicitly
        stim = ncprobe.load_stimuli("en", contexts="nat", data_dir=data_copy,
                                    accept_modified=True)
    assert sorted(stim.modified) == [
        "risehnhew+Finding-Idiomaticity-in-Word-Representations/dataset/EN/"
        f"naturalistics_examplesent{k}.csv" for k in (1, 2, 3)]
    assert len(stim.originals()) == 843
    assert not any(s.spliced for s in stim)
    assert all(s.target.startswith("official ") for s in stim if s.probe == "wordssyn")
