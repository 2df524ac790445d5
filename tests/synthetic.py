"""A small synthetic Results built directly from seeded numpy, for the figure and table tests.

Two models (``model-a`` static, layer view ``-``; ``model-b`` with two layer views, the
default ``9+10+11+12`` first), English and Portuguese, naturalistic and neutral contexts,
sentence and NC level, raw and standardised space. English has 12 scored NCs (4 per
class: the study's ``grey matter`` and ``Dutch courage`` among them) and one NC
without a gold score or class; Portuguese has 12 scored NCs. NC-level measures
follow the gold score (significant correlations); sentence-level ones are mostly noise.

The tables have the columns of the real ones (see :mod:`ncprobe.results`); the
statistics are computed here with scipy, independently of ncprobe.
"""

from __future__ import annotations

import copy
import functools
import hashlib
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import scipy.stats as ss

from ncprobe.data import Stimuli, load_pairs
from ncprobe.embed import Embeddings
from ncprobe.encoders.base import Encoded
from ncprobe.ncimp.analysis import analyse
from ncprobe.ncimp.config import RunConfig
from ncprobe.ncimp.measures import MEASURES
from ncprobe.ncimp.results import Results

MODELS = {"model-a": ["-"], "model-b": ["9+10+11+12", "12"]}
LANGS = ("en", "pt")
CONTEXTS = ("nat", "neut")
LEVELS = ("sent", "nc")
SPACES = ("raw", "standardised")
CLASSES = ("I", "PC", "C")
EN_NAMES = ["grey matter", "acid test", "agony aunt", "wet blanket",
            "Dutch courage", "ancient history", "bad apple", "big fish",
            "economic aid", "research lab", "brick wall", "car park"]
#: NCs whose gold synonym shares a word with the NC (left out by the overlap filter).
OVERLAP = {("en", "ancient history"), ("en", "car park"), ("pt", "pt nc 3")}


def ncs_table() -> pd.DataFrame:
    rows = []
    for lang in LANGS:
        names = EN_NAMES if lang == "en" else [f"pt nc {i}" for i in range(12)]
        for i, nc in enumerate(names):
            cls = CLASSES[i // 4]
            gold = {"I": 0.4, "PC": 2.2, "C": 3.9}[cls] + 0.15 * (i % 4)
            rows.append({"lang": lang, "nc": nc, "cls": cls, "comp_token": gold,
                         "comp_type": gold - 0.1, "gold": gold, "s1": gold, "s2": gold,
                         "s3": gold, "head": nc.split()[-1], "modifier": nc.split()[0],
                         "syn_overlap": (lang, nc) in OVERLAP})
        if lang == "en":
            rows.append({"lang": "en", "nc": "dust storm", "cls": None, "comp_token": np.nan,
                         "comp_type": np.nan, "gold": np.nan, "s1": np.nan, "s2": np.nan,
                         "s3": np.nan, "head": "storm", "modifier": "dust",
                         "syn_overlap": True})
    df = pd.DataFrame(rows)
    for c in ("lang", "nc", "cls", "head", "modifier"):
        df[c] = df[c].astype("string")
    return df


def _measure_rows(rng, ncs: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for model, views in MODELS.items():
        for layers in views:
            for space in SPACES:
                for level in LEVELS:
                    for lang in LANGS:
                        sub = ncs[ncs["lang"] == lang]
                        gold = sub["gold"].fillna(2.0).to_numpy()
                        for context in CONTEXTS:
                            noise = 0.03 if level == "nc" else 0.3
                            shift = 0.1 if space == "standardised" else 0.0
                            shift += 0.05 if layers == "12" else 0.0
                            n = len(sub)
                            e = lambda s=noise, n=n: rng.normal(0, s, n)  # noqa: E731
                            syn = 0.6 + shift + e()
                            head = 0.3 + 0.08 * gold + e()
                            mod = 0.25 + 0.08 * gold + e()
                            words = 0.15 + 0.1 * gold + e()
                            rand = 0.1 + shift + e(0.05)
                            simr_syn = (syn - rand) / (1 - rand)
                            simr_ws = (words - rand) / (1 - rand)
                            values = {
                                "syn": syn, "comp-head": head, "comp-mod": mod,
                                "comp": np.maximum(head, mod), "wordssyn": words, "rand": rand,
                                "A_Syn|WordsSyn": syn - words, "A_Syn|Rand": syn - rand,
                                "Sim_R|Syn": simr_syn, "Sim_R|WordsSyn": simr_ws,
                                "Sim_R|Syn/Sim_R|WordsSyn": simr_syn / simr_ws}
                            for measure in MEASURES:
                                rows.append(pd.DataFrame({
                                    "model": model, "lang": lang, "space": space,
                                    "layers": layers, "level": level, "context": context,
                                    "nc": sub["nc"].to_numpy(), "measure": measure,
                                    "value": values[measure], "cls": sub["cls"].to_numpy(),
                                    "gold": sub["gold"].to_numpy()}))
    df = pd.concat(rows, ignore_index=True)
    for c in ("model", "lang", "space", "layers", "level", "context", "nc", "cls"):
        df[c] = df[c].astype("string")
    df["measure"] = pd.Categorical(df["measure"], categories=list(MEASURES), ordered=True)
    return df


def _spearman(x, y) -> tuple[float, float, int]:
    x, y = np.asarray(x, float), np.asarray(y, float)
    ok = ~(np.isnan(x) | np.isnan(y))
    r = ss.spearmanr(x[ok], y[ok])
    return float(r.statistic), float(r.pvalue), int(ok.sum())


def _p_of(rho: float, n: int) -> float:
    t = rho * np.sqrt((n - 2) / (1 - rho * rho))
    return float(2 * ss.t.sf(abs(t), n - 2))


def build() -> Results:
    """The synthetic Results (see the module doc), a fresh deep copy at each call.

    The tables are computed once per process (their statistics take seconds) and copied
    from then on, so a test that edits a table in place changes no other test's Results.
    """
    return copy.deepcopy(_built())


@functools.cache
def _built() -> Results:
    rng = np.random.default_rng(2025)
    ncs = ncs_table()
    measures = _measure_rows(rng, ncs)
    keys = ["model", "lang", "space", "layers", "level", "context", "measure"]
    overlap = set(OVERLAP)
    cor, dist = [], []
    for key, g in measures.groupby(keys, observed=True, sort=False):
        base = dict(zip(keys, key, strict=True))
        for analysis in ("nc", "overlap-filtered"):
            h = g if analysis == "nc" else g[[(lg, nc) not in overlap
                                              for lg, nc in zip(g["lang"], g["nc"], strict=True)]]
            rho, p, n = _spearman(h["value"], h["gold"])
            cor.append({**base, "analysis": analysis, "n": n, "rho": rho, "p": p,
                        "significant": p <= 0.05, "ci_low": np.nan, "ci_high": np.nan})
        for cls in ("all",) + CLASSES:
            v = g["value"] if cls == "all" else g.loc[g["cls"] == cls, "value"]
            v = v.dropna().to_numpy()
            dist.append({**base, "cls": cls, "n": len(v), "mean": float(v.mean()),
                         "sd": float(v.std(ddof=1)), "ci_low": np.nan, "ci_high": np.nan})
    lex, std = [], []
    for model, views in MODELS.items():
        for layers in views:
            for lang in LANGS:
                for space in SPACES:
                    for m in ("syn", "comp-head", "comp-mod", "comp", "wordssyn", "rand"):
                        rho = float(rng.uniform(-0.6, 0.6))
                        p = _p_of(rho, 36)
                        lex.append({"model": model, "lang": lang, "space": space,
                                    "layers": layers, "measure": m, "n": 36, "rho": rho,
                                    "p": p, "significant": p <= 0.05})
                for level in LEVELS:
                    for context in CONTEXTS:
                        rho = float(rng.uniform(0.0, 0.9))
                        std.append({"model": model, "layers": layers, "level": level,
                                    "lang": lang, "context": context, "n": 20, "rho": rho,
                                    "p": _p_of(rho, 20)})
    correlations = pd.DataFrame(cor)
    correlations["measure"] = correlations["measure"].astype(str)
    distributions = pd.DataFrame(dist)
    distributions["measure"] = distributions["measure"].astype(str)
    cosines = pd.DataFrame(columns=["model", "lang", "space", "layers", "level", "context", "nc",
                                    "cls", "gold", "probe", "variant", "target", "length",
                                    "cosine"])
    sentences = pd.DataFrame(columns=["model", "lang", "space", "layers", "level", "context",
                                      "nc", "measure", "value"])
    rogue = pd.DataFrame(columns=["model", "lang", "space", "layers", "level", "context", "rank",
                                  "dim", "contribution", "share", "expected_cosine"])
    meta = [{"config": {"model": m, "lang": lg, "contexts": "nat,neut", "layers": None,
                        "gold": "comp"}, "notes": []} for m in MODELS for lg in LANGS]
    return Results(cosines=cosines, sentences=sentences, measures=measures,
                   correlations=correlations, distributions=distributions,
                   lexical_overlap=pd.DataFrame(lex), rogue=rogue,
                   standardisation=pd.DataFrame(std), ncs=ncs, meta=meta)


def subset(results: Results, keep) -> Results:
    """A copy keeping, in every table, the rows for which ``keep(df)`` (a boolean mask) holds."""
    import dataclasses

    tables = {}
    for f in dataclasses.fields(results):
        if f.name == "meta":
            continue
        df = getattr(results, f.name)
        tables[f.name] = df[keep(df)].reset_index(drop=True) if len(df) else df
    return Results(**tables, meta=results.meta)


def one_run(full: Results, model: str = "model-a", lang: str = "en", *,
            layers: str | None = None, **options) -> Results:
    """One run of the synthetic tables (a model and language, or one layer view of it) with
    metadata as ``compute`` writes it (``options``: RunConfig fields)."""
    res = subset(full, lambda df: (
        ((df["lang"] == lang) if "lang" in df.columns else True)
        & ((df["model"] == model) if "model" in df.columns else True)
        & ((df["layers"] == layers) if layers is not None and "layers" in df.columns
           else True)))
    cfg = RunConfig(model=model, lang=lang, **options)
    res.meta = [{"config": cfg.to_dict(), "fingerprint": {"name": model, "format": 1},
                 "data_sources": {"scores.csv": "abc"}, "notes": []}]
    return res


def relabel(results: Results, model: str) -> Results:
    """A copy with every row's model renamed (to make more models)."""
    import dataclasses

    tables = {}
    for f in dataclasses.fields(results):
        if f.name == "meta":
            continue
        df = getattr(results, f.name).copy()
        if "model" in df.columns:
            df["model"] = model
        tables[f.name] = df
    return Results(**tables, meta=results.meta)


def write_pairs(path: Path, long_substitute: str | None = None, *, n_nc: int = 3,
                classes: Sequence[str] = ("I", "C"), comp_step: float = 2) -> Path:
    """A pairs CSV: ``n_nc`` English NCs, contexts S1-S3 and N, every probe family; NC i
    has class ``classes[i % len(classes)]`` and gold ``i * comp_step``.

    With ``long_substitute``, the second ``rand`` probe of NC ``w1 x1`` in context S2 uses
    it (data row 36 of the file: 6 rows per context, 4 contexts per NC, 1-based)."""
    lines = ["nc,sentence,start,end,probe,substitute,comp,class,context"]
    for i in range(n_nc):
        nc = f"w{i} x{i}"
        for ctx in ("S1", "S2", "S3", "N"):
            sent = f"one {nc} is here" if ctx != "N" else f"this is a {nc}"
            start = 1 if ctx != "N" else 3
            subs = [("syn", f"s{i}"), ("comp-head", f"x{i}"), ("comp-mod", f"w{i}"),
                    ("wordssyn", f"a{i} b{i}"), ("rand", f"r{i} q"), ("rand", f"t{i} u")]
            for j, (probe, sub) in enumerate(subs):
                if long_substitute and (i, ctx, j) == (1, "S2", 5):
                    sub = long_substitute
                lines.append(f"{nc},{sent},{start},{start + 2},{probe},{sub},{i * comp_step},"
                             f"{classes[i % len(classes)]},{ctx}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def build_layerwise(layers: Sequence[int] = (0, 1, 2, 3, 4), base: Results | None = None
                    ) -> Results:
    """:func:`build` with model-b's single-layer view ``12`` replaced, in every table, by one
    view per layer of ``layers`` (its default view ``9+10+11+12`` kept first): a layer-wise
    run. The k-th layer's correlations are those of view ``12`` with rho scaled by
    ``0.5 + 0.5 k / (len(layers) - 1)``, p recomputed from it (t distribution, n NCs) and a made-up
    interval ``[rho - 0.1 - 0.01 l, rho + 0.05]`` (clipped to [-1, 1]); the interval of layer
    1 is left out (NaN) in the NC-level raw neutral rows of ``syn``, to show a gap. ``base``:
    the result of :func:`build`, when the caller has it already."""
    import dataclasses

    base = build() if base is None else base
    tables = {}
    for f in dataclasses.fields(base):
        if f.name == "meta":
            continue
        df = getattr(base, f.name)
        if "layers" not in df.columns or df.empty:
            tables[f.name] = df
            continue
        twelve = (df["model"] == "model-b") & (df["layers"] == "12")
        copies = []
        for k, layer in enumerate(layers):
            part = df[twelve].copy()
            part["layers"] = str(layer)
            if f.name == "correlations":
                scale = 0.5 + 0.5 * k / max(len(layers) - 1, 1)
                part["rho"] = part["rho"] * scale
                part["p"] = [_p_of(r, n) if n > 2 else np.nan
                             for r, n in zip(part["rho"], part["n"], strict=True)]
                part["significant"] = part["p"] <= 0.05
                part["ci_low"] = (part["rho"] - 0.1 - 0.01 * layer).clip(-1, 1)
                part["ci_high"] = (part["rho"] + 0.05).clip(-1, 1)
                if layer == 1:
                    gap = ((part["level"] == "nc") & (part["space"] == "raw")
                           & (part["context"] == "neut") & (part["measure"] == "syn"))
                    part.loc[gap, ["ci_low", "ci_high"]] = np.nan
            copies.append(part)
        out = pd.concat([df[~twelve]] + copies, ignore_index=True)
        for c in df.columns:
            if isinstance(df[c].dtype, pd.CategoricalDtype) or df[c].dtype == "string":
                out[c] = out[c].astype(df[c].dtype)
        tables[f.name] = out
    return Results(**tables, meta=base.meta)


def pairs_stimuli(path: Path, *, n_nc: int = 9, classes: Sequence[str] = ("I", "PC", "C"),
                  comp_step: float = 0.5) -> Stimuli:
    """The pairs file of :func:`write_pairs`, written to ``path`` and loaded (English)."""
    return load_pairs(write_pairs(path, n_nc=n_nc, classes=classes, comp_step=comp_step),
                      lang="en")


def analysed_random(stim: Stimuli, model: str, seed: int) -> Results:
    """Results made by the pipeline itself (``analyse``) from ``stim`` and seeded random
    vectors: layer views ``6`` and ``12``, sentence and NC level, raw and standardised space,
    10 bootstrap resamples."""
    rng = np.random.default_rng(seed)
    n = len(stim)
    sent = rng.normal(size=(n, 2, 8)).astype(np.float32)
    span = rng.normal(size=(n, 2, 8)).astype(np.float32)
    emb = Embeddings(sent, span, np.zeros(n, np.int32), np.zeros(n, np.int32), n, n)
    cfg = RunConfig(model=model, lang="en", n_boot=10, standardise=True)
    return analyse(stim, emb, cfg, model=model, view_names=["6", "12"], levels=("sent", "nc"),
                   meta={"config": cfg.to_dict()})


class SeededEncoder:
    """An encoder of ``views`` x ``dim`` random vectors, the same for an item every time
    (seeded by the item's words and span): normal values times ``scale``, the sentence
    vectors shifted by ``shift``; it counts the items it encodes (``calls``)."""

    levels = ("sent", "nc")

    def __init__(self, dim: int = 6, views: int = 3, name: str = "synthetic", *,
                 scale: float = 1.0, shift: float = 0.0) -> None:
        self.dim, self.name, self.calls = dim, name, 0
        self.scale, self.shift = scale, shift
        self.views = tuple((i,) for i in range(views))

    def fingerprint(self) -> dict:
        return {"family": "test", "name": self.name, "dim": self.dim, "scale": self.scale,
                "shift": self.shift, "views": [list(v) for v in self.views]}

    def vectors(self, tokens, span) -> tuple[np.ndarray, np.ndarray]:
        seed = int.from_bytes(hashlib.sha1(repr((tuple(tokens), tuple(span))).encode())
                              .digest()[:8], "little")
        rng = np.random.default_rng(seed)
        shape = (len(self.views), self.dim)
        return ((rng.normal(size=shape) * self.scale + self.shift).astype(np.float32),
                (rng.normal(size=shape) * self.scale).astype(np.float32))

    def encode(self, sentences, spans) -> Encoded:
        self.calls += len(sentences)
        got = [self.vectors(s, sp) for s, sp in zip(sentences, spans, strict=True)]
        n = len(got)
        return Encoded(np.stack([g[0] for g in got]), np.stack([g[1] for g in got]),
                       np.zeros(n, np.int32), np.zeros(n, np.int32))


def only(res: Results, **wanted: str) -> Results:
    """A copy of ``res`` keeping, in every table with those columns, the rows that match."""
    def keep(df: pd.DataFrame) -> pd.Series:
        mask = pd.Series(True, index=df.index)
        for col, value in wanted.items():
            if col in df.columns:
                mask &= df[col].astype(str) == value
        return mask

    return subset(res, keep)


def random_sentences(n: int, seed: int, longest: int, words: Sequence[str]
                     ) -> tuple[list[list[str]], list[tuple[int, int]]]:
    """``n`` seeded random sentences of 1..longest of ``words``, with a random word span each
    (for the batching and collation tests)."""
    rng = np.random.default_rng(seed)
    sents, spans = [], []
    for _ in range(n):
        k = int(rng.integers(1, longest + 1))
        sents.append([words[j] for j in rng.integers(0, len(words), k)])
        s = int(rng.integers(0, k))
        spans.append((s, int(rng.integers(s + 1, k + 1))))
    return sents, spans


def retrieval_report(rep: Path) -> bytes:
    """A directory ``rep`` holding what an IdioLink report leaves: its index and a manifest
    (kind ``idiolink``) that records the index's SHA-256; returns the index's bytes."""
    import json

    from ncprobe import owned

    index = b"# ncprobe retrieval report\n"
    rep.mkdir()
    (rep / "README.md").write_bytes(index)
    (rep / owned.MANIFEST).write_text(json.dumps(
        {"format": 2, "ncprobe": "0.1.0", "report": "idiolink",
         "files": {"README.md": hashlib.sha256(index).hexdigest()}}))
    return index


#: Two of the study's figures, in the study's order: the quickest to draw (figure 8, the
#: ratio's medians, and figure 9, the ratio by class). A report of these alone takes the same
#: path as one of all ten, and numbers what it draws (fig01_ratio, fig02_ratio_by_class): the
#: stand-in where a test's subject is the report's logic, not its figures.
QUICK_FIGURES = ("ratio", "ratio_by_class")


def quick_figures() -> dict:
    """The entries of ``ncprobe.ncimp.figures.FIGURES`` named in :data:`QUICK_FIGURES` (a
    test puts them in its place with ``monkeypatch.setattr``)."""
    from ncprobe.ncimp import figures

    return {name: draw for name, draw in figures.FIGURES.items() if name in QUICK_FIGURES}
