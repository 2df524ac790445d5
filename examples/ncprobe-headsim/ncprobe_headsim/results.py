"""The probe's results: two tables stored through ncprobe's results store, its summary, JSON
rows, report (one figure, one table) and the comparison of two runs."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from ncprobe.probes.base import ProbeResults, refuse_pooling
from ncprobe.results.store import Layout

from .config import HeadSimConfig

#: The cosines compared with the gold score, by the word of the compound they take.
WORDS = {"head": "cos_head", "modifier": "cos_modifier"}

LAYOUT = Layout(
    "headsim", ("compounds", "correlations"),
    {"compounds": ("model", "lang", "nc", "head", "modifier", "gold", *WORDS.values()),
     "correlations": ("model", "lang", "word", "n", "rho", "p", "ci_low", "ci_high")},
    frozenset({"gold", *WORDS.values(), "n", "rho", "p", "ci_low", "ci_high"}),
    run_keys=("model", "lang"), report_label="head-similarity report", config=HeadSimConfig)


@dataclass
class HeadSimResults(ProbeResults):
    layout: ClassVar[Layout] = LAYOUT
    title: ClassVar[str] = "headsim"
    compounds: pd.DataFrame
    correlations: pd.DataFrame
    meta: list[dict] = field(default_factory=list)

    @staticmethod
    def correlate(compounds: pd.DataFrame, n_boot: int, seed: int) -> pd.DataFrame:
        """Spearman's rho of each word's cosine with the gold score, with its percentile
        bootstrap interval (compounds resampled), per model and language."""
        from ncprobe.stats import bootstrap_spearman, spearman

        rows = []
        for (model, lang), df in compounds.groupby(["model", "lang"], sort=False):
            for word, column in WORDS.items():
                c = spearman(df[column], df["gold"])
                lo, hi = bootstrap_spearman(df[column], df["gold"], n_boot=n_boot, seed=seed)
                rows.append({"model": model, "lang": lang, "word": word, "n": c.n,
                             "rho": c.rho, "p": c.p, "ci_low": lo, "ci_high": hi})
        return pd.DataFrame(rows)

    @classmethod
    def concat(cls, results, names=None) -> "HeadSimResults":
        results = list(results)
        refuse_pooling([[f"{m['config']['model']} ({m['config']['lang']})" for m in r.meta]
                        for r in results], names or [f"results {i + 1}" for i in
                                                     range(len(results))],
                       "leave one out (--exclude)")
        joined = {t: pd.concat([getattr(r, t) for r in results], ignore_index=True)
                  for t in LAYOUT.tables}
        return cls(compounds=joined["compounds"], correlations=joined["correlations"],
                   meta=[m for r in results for m in r.meta])

    def select(self, table: str = "correlations", **filters: Any) -> pd.DataFrame:
        return self.select_rows(table, filters)

    def wide(self, *args: Any, **kwargs: Any) -> pd.DataFrame:
        return self.compounds.pivot_table(index="nc", columns="model",
                                          values=list(WORDS.values()))

    def summary(self, *args: Any, **kwargs: Any) -> str:
        lines = [*self.edited_lines(), "rho of each cosine with the gold compositionality "
                 "score (95% bootstrap interval):"]
        for r in self.correlations.itertuples():
            lines.append(f"  {r.model} {r.lang} compound~{r.word:<8} rho={r.rho:+.3f} "
                         f"[{r.ci_low:+.3f}, {r.ci_high:+.3f}] p={r.p:.3g} n={r.n}")
        return "\n".join(lines + [f"note: {n}" for n in self.notes])

    def json_rows(self) -> list[dict]:
        return [{k: (None if isinstance(v, float) and math.isnan(v) else v)
                 for k, v in row.items()} for row in self.correlations.to_dict("records")]

    # --- what is drawn from them ------------------------------------------------------------

    def report(self, out_dir: Any, *, formats=("png", "pdf"), overwrite: bool = False,
               progress=None, dpi: int = 150, **options: Any) -> list[Path]:
        from ncprobe.report_files import write_probe_report
        from ncprobe.tables import to_latex, to_markdown

        table = self.correlations.round({"rho": 3, "ci_low": 3, "ci_high": 3}).assign(
            p=self.correlations["p"].map("{:.2g}".format)).set_index(["model", "lang", "word"])
        files = {"correlations.md": to_markdown(table).encode(),
                 "correlations.tex": to_latex(table, "rho with the gold score").encode()}
        return write_probe_report(
            out_dir, figures=[("fig_headsim", "cos_head")], draw=self._draw,
            tables=["correlations"], table_files=files,
            index=lambda drawn: "# Head similarity\n\n" + self.summary() + "\n",
            formats=formats, dpi=dpi, edited=self.edited_lines(), kind=LAYOUT.probe,
            label=LAYOUT.report_label, overwrite=overwrite, progress=progress)

    def _draw(self, column: str):
        from ncprobe.plots.theme import new_figure, style

        with style():
            fig = new_figure(figsize=(4, 3.2), layout="constrained")
            ax = fig.add_subplot()
            for model, df in self.compounds.groupby("model", sort=False):
                ax.scatter(df["gold"], df[column], s=8, label=model)
            ax.set(xlabel="gold compositionality", ylabel="cos(compound, head)")
            ax.legend()
        return fig

    # --- two runs ---------------------------------------------------------------------------

    def compare(self, other: Any = None, *, names: Any = None, n_boot: int | None = None,
                seed: int | None = None, correction: Any = None, **options: Any
                ) -> pd.DataFrame:
        """Per word: rho(A) - rho(B) on the compounds both hold (same gold), with a paired
        bootstrap interval and p-value (compounds resampled jointly), corrected across the
        words. ``n_boot``, ``seed``, ``correction``: default the runs' own."""
        from ncprobe.errors import UsageError
        from ncprobe.stats import correct as corrected
        from ncprobe.stats import paired_bootstrap_rho_diff

        other, names, n_boot, seed, correction = self.compare_defaults(
            other, names, n_boot, seed, correction)
        both = self.compounds.merge(other.compounds, on=["lang", "nc"], suffixes=("_a", "_b"))
        if both.empty:
            raise UsageError("the two sides share no compound (compare runs of one language)")
        rows = []
        for word, column in WORDS.items():
            d = paired_bootstrap_rho_diff(both[f"{column}_a"], both[f"{column}_b"],
                                          both["gold_a"], n_boot=n_boot, seed=seed)
            rows.append({"word": word, "model_a": ", ".join(self.models),
                         "model_b": ", ".join(other.models), "n": d.n, "rho_a": d.rho_a,
                         "rho_b": d.rho_b, "diff": d.diff, "ci_low": d.ci_low,
                         "ci_high": d.ci_high, "p": d.p})
        table = pd.DataFrame(rows)
        table["p_corrected"] = corrected(table["p"], correction)
        return table

    @staticmethod
    def markdown(table: pd.DataFrame) -> str:
        from ncprobe.tables import to_markdown

        return to_markdown(table.round(4).set_index("word"))

    @staticmethod
    def latex(table: pd.DataFrame, title: str) -> str:
        from ncprobe.tables import to_latex

        return to_latex(table.round(4).set_index("word"), title)
