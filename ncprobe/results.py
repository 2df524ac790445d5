"""Results: the tidy tables of one or more runs, with what made them; parquet round-trip.

Tables (pandas DataFrames, one row per observation):

* ``cosines`` — one row per probe stimulus, level and layer view: ``model, lang,
  space, layers, level, context, nc, cls, comp, probe, variant, target, length,
  cosine`` (``length``: words of the original sentence; ``comp``: the gold score).
* ``sentences`` — per sentence measures: ``... context (S1..Npl), nc, measure, value``.
* ``measures`` — per NC measures: ``... context (nat, neut, neut-pl), nc, cls,
  comp, measure, value``.
* ``correlations`` — Spearman with the gold score: ``... context, analysis
  (nc | overlap-filtered | sentence), measure, n, rho, p, significant, ci_low, ci_high``.
* ``distributions`` — mean, sd and bootstrap interval of every measure, for
  all NCs and per class I / PC / C.
* ``lexical_overlap`` — Spearman between naturalistic sentence length and the
  sentence-level Sim of each probe.
* ``rogue`` — top dimensions' contribution to the expected cosine.
* ``standardisation`` — Spearman between P_Syn cosines before and after z-scoring.
* ``ncs`` — the NCs: gold scores, class, head, modifier, and whether the gold
  synonym shares a word with the NC (``syn_overlap``).

``meta`` holds, per run, the RunConfig, the encoder fingerprint, package
versions, the git blob ids of the data files read, and notes (counts of
everything undefined or tolerated).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path

import pandas as pd

from .stats import ALPHA

TABLES = ("cosines", "sentences", "measures", "correlations", "distributions",
          "lexical_overlap", "rogue", "standardisation", "ncs")
RESULTS_FORMAT = 1


@dataclass
class Results:
    """Everything one or more ``compute`` runs produced (see the module doc for the tables)."""

    cosines: pd.DataFrame
    sentences: pd.DataFrame
    measures: pd.DataFrame
    correlations: pd.DataFrame
    distributions: pd.DataFrame
    lexical_overlap: pd.DataFrame
    rogue: pd.DataFrame
    standardisation: pd.DataFrame
    ncs: pd.DataFrame
    meta: list[dict] = field(default_factory=list)

    def __repr__(self) -> str:
        runs = ", ".join(f"{m['config']['model']}/{m['config']['lang']}" for m in self.meta)
        return f"Results({runs}; {len(self.cosines)} cosines, {len(self.measures)} NC measures)"

    @property
    def notes(self) -> list[str]:
        return [f"{m['config']['model']}/{m['config']['lang']}: {n}" for m in self.meta
                for n in m.get("notes", [])]

    def to_parquet(self, path: str | Path) -> Path:
        """Write every table as ``<table>.parquet`` and the metadata as ``run.json`` into ``path``.

        Files are written under temporary names and renamed, so an interrupted
        write never leaves a half-written table under its final name.
        """
        out = Path(path)
        out.mkdir(parents=True, exist_ok=True)
        for name in TABLES:
            tmp = out / f".{name}.parquet.tmp"
            getattr(self, name).to_parquet(tmp, index=False)
            tmp.replace(out / f"{name}.parquet")
        tmp = out / ".run.json.tmp"
        tmp.write_text(json.dumps({"format": RESULTS_FORMAT, "runs": self.meta}, indent=2,
                                  ensure_ascii=False, default=str) + "\n", encoding="utf-8")
        tmp.replace(out / "run.json")
        return out

    @classmethod
    def from_parquet(cls, path: str | Path) -> "Results":
        """Read what :meth:`to_parquet` wrote."""
        from .errors import NcprobeError

        src = Path(path)
        meta_file = src / "run.json"
        if not meta_file.is_file():
            raise NcprobeError(f"{src}: not a results directory (no run.json); write one with "
                               "`ncprobe compute --out DIR` or Results.to_parquet(DIR)")
        meta = json.loads(meta_file.read_text(encoding="utf-8"))
        if meta.get("format") != RESULTS_FORMAT:
            raise NcprobeError(f"{meta_file}: results format {meta.get('format')}, this ncprobe "
                               f"reads format {RESULTS_FORMAT}; recompute with this version")
        tables = {}
        for name in TABLES:
            f = src / f"{name}.parquet"
            if not f.is_file():
                raise NcprobeError(f"{f} is missing: the results directory is incomplete")
            tables[name] = pd.read_parquet(f)
        return cls(**tables, meta=meta["runs"])

    @classmethod
    def concat(cls, results: list["Results"]) -> "Results":
        """Several runs (models, languages) as one Results."""
        if not results:
            raise ValueError("nothing to concatenate")
        tables = {f.name: pd.concat([getattr(r, f.name) for r in results], ignore_index=True)
                  for f in fields(cls) if f.name != "meta"}
        tables["ncs"] = tables["ncs"].drop_duplicates(["lang", "nc"], ignore_index=True)
        return cls(**tables, meta=[m for r in results for m in r.meta])

    def summary(self, space: str = "raw", analysis: str = "nc") -> str:
        """A compact text summary: per level and context, mean ± sd of every measure and rho.

        ``*`` marks p <= 0.05.
        """
        lines = []
        dist = self.distributions[(self.distributions["cls"] == "all")
                                  & (self.distributions["space"] == space)]
        cor = self.correlations[(self.correlations["analysis"] == analysis)
                                & (self.correlations["space"] == space)]
        keys = ["model", "lang", "layers", "level", "context"]
        merged = dist.merge(cor[keys + ["measure", "rho", "p", "n"]], on=keys + ["measure"],
                            how="left", suffixes=("", "_rho"))
        order = {"sent": 0, "nc": 1, "nat": 0, "neut": 1, "neut-pl": 2}
        merged = merged.sort_values(["model", "lang", "layers", "level", "context"],
                                    key=lambda c: c.map(order).fillna(-1) if c.name in (
                                        "level", "context") else c, kind="stable")
        for key, block in merged.groupby(keys, sort=False, observed=True):
            model, lang, layers, level, context = key
            shown = "" if layers == "-" else f" · layers {layers}"
            lines.append(f"{model} · {lang}{shown} · {level} level · {context} ({space} space)")
            lines.append(f"  {'measure':<26}{'mean ± sd':>17}  {'rho with gold':>13}  "
                         f"{'p':>8}  {'NCs':>4}")
            for _, r in block.iterrows():
                rho = "" if pd.isna(r["rho"]) else (
                    f"{r['rho']:+.3f}{'*' if r['p'] <= ALPHA else ' '}")
                p = "" if pd.isna(r["p"]) else f"{r['p']:.2g}"
                n = "" if pd.isna(r["n_rho"]) else f"{int(r['n_rho'])}"
                lines.append(f"  {r['measure']:<26}{r['mean']:>8.3f} ± {r['sd']:<6.3f}  "
                             f"{rho:>13}  {p:>8}  {n:>4}")
            lines.append("")
        lines.append("* p <= 0.05 (Spearman, two-sided); rho with the gold compositionality "
                     "score per NC")
        for n in self.notes:
            lines.append(f"note: {n}")
        return "\n".join(lines)
