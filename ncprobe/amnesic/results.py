"""The amnesic probe's results: the targets' rows (conditions and changes) and the guarantee,
stored through ncprobe's results store, with their summary, JSON rows and report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from ..intervention import CHANGES, TARGET_COLUMNS, TESTED
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
    run_keys=("model",), report_label="amnesic report", config=AmnesicConfig)


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
        for (target, family), part in tested.groupby(["target", "family"], sort=False):
            sig = part["significant"].astype("boolean").fillna(False)
            lines.append(f"{target}: {int(sig.sum())} of {len(part)} erased-vs-control tests "
                         f"significant after correction (family: {family})")
            top = part.reindex(part["value"].abs().sort_values(ascending=False).index).head(3)
            for r in top.itertuples():
                lines.append(f"  {r.metric} view {r.layer} {r.level} {r.context}: erased - "
                             f"control {r.value:+.3f} [{r.ci_low:+.3f}, {r.ci_high:+.3f}] "
                             f"p_corrected={r.p_corrected:.3g} (n={r.n} rows, over {r.unit})")
        return "\n".join(lines + [f"note: {n}" for n in self.notes])

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
                                                "p_corrected"]].round(4)
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
        """Per target (a panel), each metric's ``erased - plain`` change per layer view with
        its interval (dots), beside ``control - plain`` (grey): the change against the
        control's."""
        from ..plots.theme import new_figure, style

        ch = self.changes[self.changes["condition"].isin(CHANGES[:2])]
        targets = list(dict.fromkeys(ch["target"]))
        with style():
            fig = new_figure(figsize=(4.5 * max(1, len(targets)), 3.6), layout="constrained")
            for i, target in enumerate(targets):
                ax = fig.add_subplot(1, len(targets), i + 1)
                part = ch[ch["target"] == target]
                cells = list(dict.fromkeys(zip(part["metric"], part["level"], part["context"],
                                               part["layer"], strict=True)))
                for x, cell in enumerate(cells):
                    for condition, colour, dx in (("erased - plain", "C3", -0.15),
                                                  ("control - plain", "0.55", 0.15)):
                        r = part[(part["condition"] == condition)
                                 & (part["metric"] == cell[0]) & (part["level"] == cell[1])
                                 & (part["context"] == cell[2]) & (part["layer"] == cell[3])]
                        if r.empty:
                            continue
                        v, lo, hi = (float(r[c].iloc[0]) for c in ("value", "ci_low",
                                                                   "ci_high"))
                        ax.errorbar([x + dx], [v], yerr=[[v - lo], [hi - v]], fmt="o",
                                    ms=3, color=colour, lw=0.8,
                                    label=condition if x == 0 else None)
                ax.axhline(0, color="0.3", lw=0.6)
                ax.set_xticks(range(len(cells)))
                ax.set_xticklabels([f"{m} {lv} {c} {layer}" for m, lv, c, layer in cells],
                                   rotation=90, fontsize=5)
                ax.set_title(target)
                ax.set_ylabel("change (95% paired interval)")
                ax.legend(fontsize=6)
        return fig

    def compare(self, other: Any = None, *args: Any, **kwargs: Any) -> pd.DataFrame:
        from ..errors import UsageError

        raise UsageError("comparing two amnesic runs is not built yet: each run's "
                         "erased-vs-control tests are in its changes table")
