"""The amnesic probe's results: the targets' rows (conditions and changes) and the guarantee,
stored through ncprobe's results store, with their summary, JSON rows and report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from ..intervention import TARGET_COLUMNS, TESTED
from ..probes.base import ProbeResults, refuse_pooling
from ..results.store import Layout
from .config import AmnesicConfig
from .fit import GUARANTEE_COLUMNS
from .run import RUN_COLUMNS, json_rows

#: The tables: ``changes`` (every target's rows), ``guarantee`` (the concept's own probe).
LAYOUT = Layout(
    "amnesic", ("changes", "guarantee"),
    {"changes": ("model", "lang", *RUN_COLUMNS, *TARGET_COLUMNS),
     "guarantee": ("model", "lang", *GUARANTEE_COLUMNS)},
    frozenset({"value", "ci_low", "ci_high", "n", "p", "p_corrected", "accuracy", "chance"}),
    run_keys=("model",), report_label="amnesic report", config=AmnesicConfig,
    # 2: the changes table's column shares_concept_rows
    version=2)


@dataclass
class AmnesicResults(ProbeResults):
    """What erasing a concept did to each target, against its control, and the guarantee.

    Attributes:
        changes: per target, metric, layer view, level and context: ``plain``, ``erased`` and
            ``control`` with their intervals, and the changes (``erased - plain``, ``control
            - plain``, ``erased - control``) with their paired intervals; ``erased -
            control`` carries the test, corrected within the target's cells.
        guarantee: the concept's own linear probe before and after each eraser, on its
            training and held-out rows, beside the chance line.
    """

    layout: ClassVar[Layout] = LAYOUT
    title: ClassVar[str] = "amnesic"
    changes: pd.DataFrame
    guarantee: pd.DataFrame
    meta: list[dict] = field(default_factory=list)

    @classmethod
    def concat(cls, results: Any, names: Any = None) -> AmnesicResults:
        results = list(results)
        refuse_pooling([[f"{m['config']['model']} ({m['config']['lang']})" for m in r.meta]
                        for r in results], names or [f"results {i + 1}" for i in
                                                     range(len(results))],
                       "leave one out (--exclude)")
        joined = {t: pd.concat([getattr(r, t) for r in results], ignore_index=True)
                  for t in LAYOUT.tables}
        return cls(changes=joined["changes"], guarantee=joined["guarantee"],
                   meta=[m for r in results for m in r.meta])

    def select(self, table: str = "changes", **filters: Any) -> pd.DataFrame:
        return self.select_rows(table, filters)

    def wide(self, *args: Any, **kwargs: Any) -> pd.DataFrame:
        """One row per target, metric, layer view, level and context; one column per condition
        and change (the values)."""
        return self.changes.pivot_table(index=["model", "target", "metric", "layer", "level",
                                               "context"], columns="condition", values="value",
                                        sort=False)

    def summary(self, *args: Any, **kwargs: Any) -> str:
        lines = [*self.edited_lines()]
        g = self.guarantee
        for m in self.meta:
            cfg = m["config"]
            lines.append(f"amnesic probing of {cfg['model']} ({cfg['lang']}): concept "
                         f"{m.get('concept', cfg['concept'])}, erased in the {cfg['where']}, "
                         f"targets {', '.join(cfg['targets'])}")
        lines.append("the concept's own linear probe on its training rows (LEACE's guarantee: "
                     "at chance after erasure):")
        train = g[(g["split"] == "train") & (g["probe"] == "erased")]
        for (view, level, condition), part in train.groupby(["view", "level", "condition"],
                                                             sort=False):
            acc, chance = part["accuracy"].mean(), part["chance"].mean()
            lines.append(f"  view {view} {level:<4} {condition:<7} accuracy {acc:.3f} "
                         f"(chance {chance:.3f})")
        tested = self.changes[self.changes["condition"] == TESTED]
        shares = tested["shares_concept_rows"].astype("boolean").fillna(False)
        for (target, family), part in tested.groupby(["target", "family"], sort=False):
            sig = part["significant"].astype("boolean").fillna(False)
            lines.append(f"{target}: {int(sig.sum())} of {len(part)} erased-vs-control tests "
                         f"significant after correction (family: {family})")
            part = part[~shares.loc[part.index]]  # the largest of those that answer
            top = part.reindex(part["value"].abs().sort_values(ascending=False).index).head(3)
            for r in top.itertuples():
                lines.append(f"  {r.metric} view {r.layer} {r.level} {r.context}: erased - "
                             f"control {r.value:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}] "
                             f"p_corrected={r.p_corrected:.3g} (n={r.n} rows, over {r.unit})")
        shared = [f"{t} {m}" for t, m in dict.fromkeys(zip(tested.loc[shares, "target"],
                                                            tested.loc[shares, "metric"],
                                                            strict=True))]
        notes = [*self.notes] + ([
            f"{', '.join(shared)}: trained on the rows the concept's erasers were fitted on "
            "(shares_concept_rows): LEACE's guarantee alone sends it to chance, so its change "
            "says nothing of what the model uses (left out of the largest changes above)"]
            if shared else [])
        return "\n".join(lines + [f"note: {n}" for n in notes])

    def json_rows(self) -> list[dict]:
        """The changes table's rows, then the guarantee's (``target: concept``)."""
        return json_rows(self.changes, self.guarantee)

    # --- what is drawn from them ------------------------------------------------------------

    def report(self, out_dir: Any, *, formats: Any = ("png", "pdf"), overwrite: bool = False,
               progress: Any = None, dpi: int = 150, **options: Any) -> list[Path]:
        from ..report_files import write_probe_report
        from ..tables import to_latex, to_markdown

        keys = ["model", "target", "metric", "layer", "level", "context", "condition"]
        changes = self.changes.set_index(keys)[["value", "ci_low", "ci_high", "n", "p",
                                                "p_corrected", "shares_concept_rows"]].round(4)
        guarantee = self.guarantee.set_index(["model", "view", "level", "condition", "fold",
                                              "split", "probe"])[["accuracy", "chance",
                                                                  "n"]].round(4)
        files = {"changes.md": to_markdown(changes).encode(),
                 "changes.tex": to_latex(changes, "what erasing the concept changed").encode(),
                 "guarantee.md": to_markdown(guarantee).encode(),
                 "guarantee.tex": to_latex(guarantee, "the concept's own linear probe before "
                                           "and after erasure").encode()}
        return write_probe_report(
            out_dir, figures=[("fig_amnesic_changes", "changes")], draw=self._draw,
            tables=["changes", "guarantee"], table_files=files,
            index=lambda drawn: "# Amnesic probing\n\n```\n" + self.summary() + "\n```\n",
            formats=formats, dpi=dpi, edited=self.edited_lines(), kind=LAYOUT.probe,
            label=LAYOUT.report_label, overwrite=overwrite, progress=progress)

    def _draw(self, _: str) -> Any:
        """The change against the layer view with the control's band, one panel per target
        (:func:`ncprobe.amnesic.figures.draw_changes`)."""
        from .figures import draw_changes

        return draw_changes(self.changes)

    #: What one run already compares: said when :meth:`compare` is given no other results.
    tested_within: ClassVar[str] = ("each run's erased-vs-control tests are in its changes "
                                    "table")

    def compare(self, other: Any = None, *, names: Any = None, correction: str | None = None,
                level: float = 0.95) -> pd.DataFrame:
        """This run's ``erased - control`` change against ``other``'s, cell by cell (target,
        metric, layer view, level, context both runs hold): two models, two concepts, or the
        vectors against the forward pass.

        ``diff`` is A's change minus B's. Its interval and test are a normal approximation
        from each run's own paired interval (the standard error its width over 2 x 1.96): a
        results directory keeps no resamples, so the two changes are taken as independent;
        where both runs resample the same units (two models on the same compounds, items or
        expressions) and their changes go together, the interval is conservative (wider than
        a paired one). Cells whose classifier trains on the concept's training rows
        (``shares_concept_rows`` on either side) are left out: their change answers no
        question of use. The tests are corrected over every row (one family).

        Args:
            other: the other run's results (one run).
            names: what the two sides are called (their directories).
            correction: ``holm`` (default), ``fdr_bh``, ``none``.
            level: of the intervals.

        Raises:
            UsageError: other results than an amnesic run's, a side of several runs, or no
                cell in both.
        """
        import numpy as np
        from scipy.stats import norm

        from ..errors import UsageError
        from ..significance import ALPHA
        from ..stats import correct

        other, sides, _, _, method = self.compare_defaults(other, names, None, None,
                                                           correction)
        for res, name in zip((self, other), sides, strict=True):
            if len(res.meta) != 1:
                raise UsageError(f"{name} holds {len(res.meta)} amnesic runs: compare one run "
                                 "with one (leave the others out with --exclude DIR)")
        keys = ["target", "metric", "layer", "level", "context"]

        def tested(res: AmnesicResults) -> pd.DataFrame:
            t = res.changes[res.changes["condition"] == TESTED]
            shares = t["shares_concept_rows"].astype("boolean").fillna(False).to_numpy(bool)
            return t[~shares][[*keys, "value", "ci_low", "ci_high", "n", "unit"]]

        both = tested(self).merge(tested(other), on=keys, suffixes=("_a", "_b"),
                                  validate="one_to_one")
        if both.empty:
            raise UsageError(f"{sides[0]} and {sides[1]} share no cell (target, metric, layer "
                             "view, level, context) whose change answers a question: nothing "
                             "to compare")
        z = float(norm.ppf(0.5 + level / 2))
        se = np.hypot(*((both[f"ci_high_{s}"] - both[f"ci_low_{s}"]).to_numpy(float)
                        / (2 * z) for s in "ab"))
        diff = (both["value_a"] - both["value_b"]).to_numpy(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            p = np.where(se > 0, 2 * norm.sf(np.abs(diff) / se), np.nan)
        corrected = correct(p, method)  # type: ignore[arg-type]
        label = [self._side_label(), other._side_label()]
        out = both[keys].assign(
            a=label[0], b=label[1], change_a=both["value_a"], change_b=both["value_b"],
            diff=diff, diff_low=diff - z * se, diff_high=diff + z * se, n_a=both["n_a"],
            n_b=both["n_b"], unit=both["unit_a"], p=p, p_corrected=corrected,
            significant=[bool(c <= ALPHA) if np.isfinite(c) else np.nan for c in corrected],
            family=f"amnesic compare: {sides[0]} vs {sides[1]}, every shared cell "
                   f"({int(np.isfinite(p).sum())} tests)")
        return out.reset_index(drop=True)

    def _side_label(self) -> str:
        """One run in words: model, language, concept, where (and which layer erased)."""
        cfg = self.meta[0]["config"]
        where = cfg.get("where", "vectors")
        layer = cfg.get("erase_layer")
        return (f"{cfg['model']} ({cfg['lang']}), concept {cfg['concept']}, {where}"
                + (f" layer {layer}" if layer is not None else ""))


def comparison_table(df: pd.DataFrame) -> tuple[str, str]:
    """:meth:`AmnesicResults.compare`'s rows as ``ncprobe compare`` prints them (Markdown) and
    writes them as LaTeX: one row per cell, each side's change, the difference with its
    interval, p and corrected p, and what the sides are and how the test was made."""
    from ..significance import p_text
    from ..tables import to_latex, to_markdown

    shown = df.set_index(["target", "metric", "layer", "level", "context"]).assign(**{
        "A: erased - control": df["change_a"].map("{:+.3f}".format).to_numpy(),
        "B: erased - control": df["change_b"].map("{:+.3f}".format).to_numpy(),
        "A - B [95%]": [f"{d:+.3f} [{lo:+.3f}, {hi:+.3f}]" for d, lo, hi in
                        zip(df["diff"], df["diff_low"], df["diff_high"], strict=True)],
        "p": df["p"].map(p_text).to_numpy(),
        "p corrected": df["p_corrected"].map(p_text).to_numpy()})[
        ["A: erased - control", "B: erased - control", "A - B [95%]", "p", "p corrected"]]
    about = (f"A: {df['a'].iloc[0]}; B: {df['b'].iloc[0]}. {df['family'].iloc[0]}. The "
             "interval and p are a normal approximation from each run's own paired interval "
             "(the runs keep no resamples), the two changes taken as independent: "
             "conservative where both runs resample the same units. Cells whose classifier "
             "trains on the concept's training rows are left out.")
    caption = "amnesic probing: erased - control, run A against run B"
    return to_markdown(shown) + "\n" + about + "\n", to_latex(shown, caption)
