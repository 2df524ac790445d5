"""Issue 28, 1.1: a sentence-transformers model's layer views are its own, never copies.

The sentence level of each layer view is the method's mean of the sentence's word vectors
over that view's layers (a word: the mean of its sub-tokens); the model's own sentence
embedding (its pooling and Dense modules, after the last layer) is reported once, as the view
``own``, at the sentence level only. Expected vectors come from plain ``transformers`` (the
hidden states of the model's transformer module, pooled here by hand) and from
``SentenceTransformer.encode``, never from ncprobe's encoders; expected counts from the
model's shape and the stimuli.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

import ncprobe
from ncprobe.encoders import load_encoder
from ncprobe.errors import UsageError

#: Sentences of words the tiny models' vocabulary splits into several sub-tokens.
SENTS = [["the", "grey", "matter", "of", "a", "brain"],
         ["vinho", "branco", "e", "lua", "cheia"],
         ["one", "police", "car", "is", "here"]]
SPANS = [(1, 3), (0, 2), (1, 3)]

#: Words of the tiny models' training corpus (tests/tiny_models.py): no [UNK] among them.
MODS = ["grey", "eager", "police", "research", "economic", "vinho", "lua", "beaver", "brain"]
HEADS = ["matter", "beaver", "car", "lab", "aid", "branco", "cheia", "ação", "coração"]
SYNS = ["brain", "rápida", "lab", "aid", "car", "lua", "grey", "vinho", "matter"]


def _hf_sentence_vectors(st_dir: Path, sents, layers: tuple[int, ...]) -> np.ndarray:
    """Per sentence: the mean over its words of the mean of each word's sub-token states,
    the states averaged over ``layers`` of ``output_hidden_states`` (0 = embeddings), from
    the transformer module loaded with plain transformers (one padded batch: BERT's
    attention mask keeps a sentence's states from its padding)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(st_dir))
    model = AutoModel.from_pretrained(str(st_dir)).eval()
    enc = tok([list(w) for w in sents], is_split_into_words=True, padding=True,
              return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc, output_hidden_states=True).hidden_states
    states = torch.stack([hidden[i] for i in layers]).mean(0).numpy()
    out, most = [], 0
    for row, words in enumerate(sents):
        ids = enc.word_ids(row)
        pieces = [[t for t, w in enumerate(ids) if w == k] for k in range(len(words))]
        most = max(most, max(map(len, pieces)))
        out.append(np.mean([states[row, p].mean(0) for p in pieces], axis=0))
    assert most > 1  # multi-piece words: the sub-token mean matters
    return np.array(out)


def _st_encode(st_dir: Path, texts: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(st_dir), device="cpu").encode(texts, convert_to_numpy=True)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


# --- the encoder -----------------------------------------------------------------------------

def test_each_layer_views_sentence_is_its_own_mean_of_words(st_dir) -> None:
    enc = load_encoder(str(st_dir), layers="all", device="cpu")
    assert enc.views == ((0,), (1,), (2,), (3,))  # tiny BERT: embeddings + 3 layers
    out = enc.encode(SENTS, SPANS)
    assert out.sent.shape == (3, 4, 32)  # the transformer's size, not the Dense layer's 16
    for layer in (1, 3):
        want = _hf_sentence_vectors(st_dir, SENTS, (layer,))
        np.testing.assert_allclose(out.sent[:, layer], want, rtol=0, atol=1e-5)
    # layers differ: no view's sentence vector is another's
    for a in range(4):
        for b in range(a + 1, 4):
            assert not np.allclose(out.sent[:, a], out.sent[:, b], atol=1e-3), (a, b)
    # the default view (the last four: 0..3 of this model) is the same rule over its layers
    default = load_encoder(str(st_dir), device="cpu").encode(SENTS, SPANS)
    np.testing.assert_allclose(default.sent[:, 0],
                               _hf_sentence_vectors(st_dir, SENTS, (0, 1, 2, 3)),
                               rtol=0, atol=1e-5)


def test_the_own_embedding_is_sentence_transformers_encode_once(st_dir, monkeypatch) -> None:
    enc = load_encoder(str(st_dir), layers="all", device="cpu")
    enc.load()
    model = enc.tokens.model
    calls = []
    forward = model.forward
    monkeypatch.setattr(model, "forward", lambda *a, **k: calls.append(1) or forward(*a, **k))
    out = enc.encode(SENTS, SPANS)
    assert len(calls) == 1  # one forward pass gives the four views and the own embedding
    want = _st_encode(st_dir, [" ".join(w) for w in SENTS])
    assert want.shape == (3, 16)  # the Dense layer maps 32 -> 16
    assert out.own is not None and out.own.shape == (3, 16)  # one vector, not one per view
    np.testing.assert_allclose(out.own, want, rtol=0, atol=1e-5)
    assert enc.view_names == ("0", "1", "2", "3", "own")
    assert enc.view_levels[-1] == ("sent",) and all(
        set(lv) == {"sent", "nc"} for lv in enc.view_levels[:-1])


# --- a run -----------------------------------------------------------------------------------

def _pairs(path: Path) -> Path:
    """Nine NCs of the tiny vocabulary, contexts S1-S3 and N, every probe family, classes
    I / PC / C in turn and gold 0, 0.5, ... 4."""
    lines = ["nc,sentence,start,end,probe,substitute,comp,class,context"]
    n = len(MODS)
    for i in range(n):
        nc = f"{MODS[i]} {HEADS[i]}"
        for ctx in ("S1", "S2", "S3", "N"):
            sent, start = ((f"one {nc} is here", 1) if ctx != "N" else (f"this is a {nc}", 3))
            subs = [("syn", SYNS[i]), ("comp-head", HEADS[i]), ("comp-mod", MODS[i]),
                    ("wordssyn", f"{HEADS[(i + 1) % n]} {MODS[(i + 2) % n]}"),
                    ("rand", f"{MODS[(i + 4) % n]} {HEADS[(i + 5) % n]}"),
                    ("rand", f"{HEADS[(i + 3) % n]} {MODS[(i + 6) % n]}")]
            for probe, sub in subs:
                lines.append(f"{nc},{sent},{start},{start + 2},{probe},{sub},{i * 0.5},"
                             f"{('I', 'PC', 'C')[i % 3]},{ctx}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def run(tiny_st_dir, tmp_path_factory):
    """``--layers all`` of the tiny sentence-transformers model on :func:`_pairs`, cold, with
    the cache; then again warm, and without the cache."""
    tmp = tmp_path_factory.mktemp("sbert-views")
    stim = ncprobe.load_pairs(_pairs(tmp / "pairs.csv"), lang="en")
    kw = dict(stimuli=stim, model=str(tiny_st_dir), layers="all", device="cpu", n_boot=0,
              progress=False)
    cold = ncprobe.compute(cache_dir=tmp / "cache", **kw)
    warm = ncprobe.compute(cache_dir=tmp / "cache", **kw)
    bare = ncprobe.compute(cache=False, **kw)
    return stim, cold, warm, bare, tmp / "cache"


LAYER_VIEWS = ["0", "1", "2", "3"]


def test_every_table_holds_each_vector_once(run) -> None:
    _, res, _, _, _ = run
    # (view, level) of every table with both columns: each layer view at both levels, the
    # model's own embedding at the sentence level only
    want = {(v, lv) for v in LAYER_VIEWS for lv in ("sent", "nc")} | {("own", "sent")}
    for name in ("cosines", "sentences", "measures", "correlations", "distributions",
                 "rogue", "standardisation"):
        df = getattr(res, name)
        got = set(zip(df["layers"].astype(str), df["level"].astype(str), strict=True))
        assert got == want, name
    # lexical overlap (sentence level only): every view once, own included
    assert sorted(set(res.lexical_overlap["layers"].astype(str))) == LAYER_VIEWS + ["own"]
    # one row per cell: nothing repeated across views
    cor = res.correlations
    assert not cor.duplicated(["space", "layers", "level", "context", "measure",
                               "analysis"]).any()


def test_no_two_views_have_the_same_sentence_cosines(run) -> None:
    _, res, _, _, _ = run
    c = res.cosines[(res.cosines["space"] == "raw") & (res.cosines["level"] == "sent")]
    by_view = {v: g.sort_values(["context", "nc", "probe", "variant"])["cosine"].to_numpy()
               for v, g in c.groupby(c["layers"].astype(str))}
    views = list(by_view)
    assert len(views) >= len(LAYER_VIEWS)
    for i, a in enumerate(views):
        for b in views[i + 1:]:
            assert not np.allclose(by_view[a], by_view[b], atol=1e-6), (a, b)
    assert sorted(by_view) == LAYER_VIEWS + ["own"]  # the model's own embedding, once


def test_sentence_cosines_are_those_of_independent_vectors(run, tiny_st_dir) -> None:
    """The own view's cosines are those of SentenceTransformer.encode; layer 2's those of the
    hand-pooled hidden states of layer 2: each view is read from its own vectors."""
    stim, res, _, _, _ = run
    texts = {s.text: s.tokens for s in stim}
    order = list(texts)
    own = dict(zip(order, _st_encode(tiny_st_dir, order), strict=True))
    layer2 = dict(zip(order, _hf_sentence_vectors(tiny_st_dir, [list(texts[t]) for t in order],
                                                  (2,)), strict=True))
    original = {(s.nc, s.context): s.text for s in stim if s.probe == "original"}
    probes = [s for s in stim if s.probe != "original"]
    c = res.cosines[(res.cosines["space"] == "raw") & (res.cosines["level"] == "sent")]
    for view, vecs in (("own", own), ("2", layer2)):
        rows = c[c["layers"].astype(str) == view]
        assert len(rows) == len(probes)
        got = {(r.nc, r.context, r.probe, r.target, r.variant): r.cosine
               for r in rows.itertuples()}
        for s in probes:
            want = _cos(vecs[s.text], vecs[original[(s.nc, s.context)]])
            assert got[(s.nc, s.context, s.probe, s.target, s.variant)] == pytest.approx(
                want, abs=1e-5), (view, s.text)


def test_one_forward_pass_two_entries_and_runs_without_a_cache_agree(run) -> None:
    import json

    stim, cold, warm, bare, cache = run
    unique = len({(tuple(s.tokens), tuple(s.span)) for s in stim})
    assert cold.meta[0]["encoded"] == unique and warm.meta[0]["encoded"] == 0
    for name in ("cosines", "correlations", "rogue"):
        pd.testing.assert_frame_equal(getattr(warm, name), getattr(cold, name), obj=name)
        pd.testing.assert_frame_equal(getattr(bare, name), getattr(cold, name), obj=name)
    # two entries: the layer views, and the model's own embedding (one view of the Dense size)
    shapes = sorted(
        (json.loads((d / "fingerprint.json").read_text())["vector_shape"]["views"],
         json.loads((d / "fingerprint.json").read_text())["vector_shape"]["sent_dim"])
        for d in cache.iterdir() if d.is_dir())
    assert shapes == [(1, 16), (4, 32)]


def test_the_layer_views_entry_is_new_and_own_is_shared_by_every_layer_choice(st_dir) -> None:
    all_layers = load_encoder(str(st_dir), layers="all", device="cpu")
    last = load_encoder(str(st_dir), layers="-1", device="cpu")
    # the old meaning (the own embedding copied into every view) had this pooling: never read
    assert all_layers.fingerprint()["pooling"] != "st-sentence/subtoken-mean-span"
    assert all_layers.fingerprint() != last.fingerprint()
    assert all_layers.own_fingerprint() == last.own_fingerprint()
    assert all_layers.own_fingerprint() != all_layers.fingerprint()


# --- the summary -----------------------------------------------------------------------------

_HEADER = re.compile(r"^(?P<model>\S.*?) · (?P<lang>\w+)(?: · (?P<view>.+?))? · "
                     r"(?P<level>sent|nc) level · (?P<context>[\w-]+) \((?P<space>\w+) space\)$")


def test_the_summary_prints_own_once_and_counts_each_cell_once(run) -> None:
    _, res, _, _, _ = run
    text = res.summary()
    blocks: dict[tuple, dict[str, str]] = {}
    key = None
    for line in text.splitlines():
        m = _HEADER.match(line)
        if m:
            view = m["view"] or "-"
            view = view.removeprefix("layers ")
            key = (m["space"], view, m["level"], m["context"])
            assert key not in blocks, f"block printed twice: {line}"
            blocks[key] = {}
            continue
        if key is not None and line.startswith("  ") and not line.startswith("   "):
            cells = re.split(r"\s{2,}", line.strip())
            if cells[0] != "measure":
                blocks[key][cells[0]] = line
        elif not line.strip():
            key = None
    own = [k for k in blocks if "own" in k[1]]
    contexts = sorted(set(res.correlations["context"].astype(str)))
    spaces = sorted(set(res.distributions["space"].astype(str)))
    # one block per context and space for the model's own embedding, sentence level only
    assert sorted((k[0], k[3]) for k in own) == sorted((s, c) for s in spaces for c in contexts)
    assert {k[2] for k in own} == {"sent"} and all("not a layer" in k[1] for k in own)
    assert not [k for k in blocks if k[1] == "own"]  # never labelled as "layers own"
    # the Holm family: each cell of the table once, built here from the run's shape (each
    # layer view at both levels, the own embedding at the sentence level, per space, context
    # and measure); the Holm p of each printed row is statsmodels' over that family
    cor = res.correlations[res.correlations["analysis"] == "nc"]
    p_of = {(r.space, str(r.layers), r.level, r.context, str(r.measure)): r.p
            for r in cor.itertuples()}
    measures = sorted(set(cor["measure"].astype(str)))
    views = [(v, lv) for v in LAYER_VIEWS for lv in ("sent", "nc")] + [("own", "sent")]
    family = [(sp, v, lv, ctx, m) for sp in spaces for v, lv in views for ctx in contexts
              for m in measures]
    assert len(family) == len(spaces) * len(contexts) * len(measures) * (len(LAYER_VIEWS) * 2
                                                                           + 1)
    family = [k for k in family if not np.isnan(p_of[k])]  # a NaN p is no test
    holm = dict(zip(family, multipletests([p_of[k] for k in family], method="holm")[1],
                    strict=True))
    assert len(holm) > 0
    for (sp, v, lv, ctx, m), h in holm.items():
        [bkey] = [k for k in blocks if k[0] == sp and k[2] == lv and k[3] == ctx
                  and (k[1] == v or (v == "own" and "own" in k[1]))]
        line = blocks[bkey][m]
        assert f"{p_of[(sp, v, lv, ctx, m)]:.2g}  " in line and f"  {h:.2g}" in line, (line, h)
    # every printed row is one of the family's (none printed twice, none left out)
    assert sum(len(rows) for rows in blocks.values()) == len(spaces) * len(contexts) * len(
        measures) * (len(LAYER_VIEWS) * 2 + 1)


# --- the store: two entries from one pass ------------------------------------------------------

class WithOwn:
    """An encoder of seeded random vectors with a sentence embedding of its own (of another
    size), as a sentence-transformers model gives: ``views`` x 6-d views and a 4-d own
    embedding, the same for an item every time; counts the items it encodes."""

    levels = ("sent", "nc")
    dim = 6

    def __init__(self, views: int = 3) -> None:
        self.name, self.calls = "with-own", 0
        self.views = tuple((i,) for i in range(views))

    def fingerprint(self) -> dict:
        return {"family": "test", "name": self.name, "views": [list(v) for v in self.views]}

    def own_fingerprint(self) -> dict:
        return {"family": "test", "name": self.name, "views": [["own"]], "pooling": "own"}

    @staticmethod
    def vectors(tokens, span, views: int):
        import hashlib

        seed = int.from_bytes(hashlib.sha1(repr((tuple(tokens), tuple(span))).encode())
                              .digest()[:8], "little")
        rng = np.random.default_rng(seed)
        return (rng.normal(size=(views, 6)).astype(np.float32),
                rng.normal(size=(views, 6)).astype(np.float32),
                rng.normal(size=4).astype(np.float32))

    def encode(self, sentences, spans):
        from ncprobe.encoders.base import Encoded

        self.calls += len(sentences)
        got = [self.vectors(s, sp, len(self.views)) for s, sp in zip(sentences, spans,
                                                                     strict=True)]
        n = len(got)
        return Encoded(np.stack([g[0] for g in got]), np.stack([g[1] for g in got]),
                       np.zeros(n, np.int32), np.zeros(n, np.int32),
                       own=np.stack([g[2] for g in got]))


def _shards(entry: Path) -> list[str]:
    return sorted(p.name for p in entry.glob("shard-*.npz"))


def test_each_entry_is_given_only_the_items_it_lacks(tmp_path) -> None:
    import shutil

    from ncprobe.cache.store import EmbeddingStore
    from ncprobe.embed import embed, own_store

    items = [(["w", str(i), "x"], (1, 2)) for i in range(40)]

    class Item:
        def __init__(self, tokens, span):
            self.tokens, self.span = tokens, span

    stim = [Item(t, s) for t, s in items]
    enc = WithOwn()
    store = EmbeddingStore(enc.fingerprint(), root=tmp_path)
    own = own_store(store, enc)
    got = embed(stim, enc, store=store, progress=False, flush_every=16)
    assert enc.calls == 40 and got.has_own
    want = [WithOwn.vectors(t, s, 3) for t, s in items]
    np.testing.assert_array_equal(got.own, np.stack([w[2] for w in want]))
    np.testing.assert_array_equal(got.part("sent", 2), np.stack([w[0][2] for w in want]))
    got.close()
    main_shards, own_shards = _shards(store.dir), _shards(own.dir)
    assert main_shards and own_shards and store.dir != own.dir
    # the own entry removed: every item is encoded again (one pass gives both), but only the
    # own entry is written
    shutil.rmtree(own.dir)
    enc2 = WithOwn()
    again = embed(stim, enc2, store=EmbeddingStore(enc.fingerprint(), root=tmp_path),
                  progress=False, flush_every=16)
    assert enc2.calls == 40 and _shards(store.dir) == main_shards
    assert len(_shards(own.dir)) == len(own_shards)
    np.testing.assert_array_equal(again.own, np.stack([w[2] for w in want]))
    again.close()
    # another choice of views shares the own entry: its items are not stored there twice
    two = WithOwn(views=2)
    other = embed(stim, two, store=EmbeddingStore(two.fingerprint(), root=tmp_path),
                  progress=False, flush_every=16)
    assert two.calls == 40 and len(_shards(own.dir)) == len(own_shards)
    np.testing.assert_array_equal(other.own, np.stack([w[2] for w in want]))
    other.close()
    # warm: nothing encoded, the same vectors; without a store: the same again
    warm_enc = WithOwn()
    with embed(stim, warm_enc, store=EmbeddingStore(enc.fingerprint(), root=tmp_path),
               progress=False) as warm:
        assert warm_enc.calls == 0
        np.testing.assert_array_equal(warm.own, np.stack([w[2] for w in want]))
    bare = embed(stim, WithOwn(), progress=False)
    np.testing.assert_array_equal(bare.own, np.stack([w[2] for w in want]))
    np.testing.assert_array_equal(bare.part("span", 1), np.stack([w[1][1] for w in want]))


def test_the_own_entry_keeps_the_store_dtype(tmp_path) -> None:
    from ncprobe.cache.store import EmbeddingStore
    from ncprobe.embed import embed

    class Item:
        def __init__(self, i):
            self.tokens, self.span = ["w", str(i)], (0, 1)

    stim = [Item(i) for i in range(5)]
    enc = WithOwn()
    with embed(stim, enc, store=EmbeddingStore(enc.fingerprint(), root=tmp_path,
                                               dtype="float16"), progress=False) as got:
        want = np.stack([WithOwn.vectors(s.tokens, s.span, 3)[2] for s in stim])
        # float16 rounding of each value, as numpy rounds it
        np.testing.assert_array_equal(got.own, want.astype(np.float16).astype(np.float32))
        assert not np.array_equal(got.own, want)


def test_the_analysis_reads_the_own_embedding_once_at_the_sentence_level() -> None:
    import tempfile

    from ncprobe.embed import Embeddings
    from ncprobe.ncimp.analysis import analyse
    from ncprobe.ncimp.config import RunConfig

    from ..synthetic import pairs_stimuli

    with tempfile.TemporaryDirectory() as d:
        stim = pairs_stimuli(Path(d) / "pairs.csv", n_nc=9)
    n = len(stim)
    rng = np.random.default_rng(3)
    sent = rng.normal(size=(n, 2, 5)).astype(np.float32) + 1
    span = rng.normal(size=(n, 2, 5)).astype(np.float32)
    own = rng.normal(size=(n, 3)).astype(np.float32) + 1

    class Counting:
        has_own = True
        views = 2

        def __init__(self):
            self.n, self.asked = n, []

        def read(self, part, view):
            self.asked.append((part, view))
            if part == "own":
                assert view == 0
                return own
            return {"sent": sent, "span": span}[part][:, view]

    src = Counting()
    emb = Embeddings.from_source(src, np.zeros(n, np.int32), np.zeros(n, np.int32), n, n)
    cfg = RunConfig(model="m", n_boot=0)
    res = analyse(stim, emb, cfg, model="m", view_names=["0", "1", "own"],
                  levels=("sent", "nc"),
                  view_levels=[("sent", "nc"), ("sent", "nc"), ("sent",)])
    assert src.asked == [("sent", 0), ("sent", 1), ("own", 0), ("span", 0), ("span", 1)]
    # the own view's cosines are those of its own vectors, the cosine by hand
    rows = res.cosines[(res.cosines["layers"] == "own") & (res.cosines["space"] == "raw")]
    assert set(rows["level"]) == {"sent"}
    index = {(s.nc, s.context, s.probe, s.target): i for i, s in enumerate(stim)}
    orig = {(s.nc, s.context): i for i, s in enumerate(stim) if s.probe == "original"}
    for r in rows.head(40).itertuples():
        a, b = own[index[(r.nc, r.context, r.probe, r.target)]], own[orig[(r.nc, r.context)]]
        assert r.cosine == pytest.approx(_cos(a.astype(np.float64), b.astype(np.float64)),
                                         abs=1e-12)


def test_a_default_and_a_layerwise_run_join_with_the_own_embedding_once(run, tiny_st_dir
                                                                        ) -> None:
    """Two runs of one model that differ only in their layer views hold the same ``own`` rows
    (one computation): joined, they are kept once; ``own`` rows of another computation
    (another seed of the intervals) are still refused as one cell twice."""
    stim, layerwise, _, _, cache = run
    kw = dict(stimuli=stim, model=str(tiny_st_dir), device="cpu", progress=False,
              cache_dir=cache)
    default = ncprobe.compute(n_boot=0, **kw)
    joined = ncprobe.Results.concat([default, layerwise], sources=["default", "layer-wise"])
    for table in ("measures", "correlations", "cosines"):
        df = getattr(joined, table)
        own = df[df["layers"].astype(str) == "own"]
        # as many own rows as one run has, and the layer views of both runs
        want = getattr(default, table)
        assert len(own) == int((want["layers"].astype(str) == "own").sum()) > 0
        assert set(df["layers"].astype(str)) == {"own", *LAYER_VIEWS,
                                                 *set(want["layers"].astype(str))}
    other = ncprobe.compute(n_boot=20, **kw)
    with pytest.raises(UsageError, match="same cell"):
        ncprobe.Results.concat([other, layerwise], sources=["other", "layer-wise"])
