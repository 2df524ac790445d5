"""The text summary of a Results: what ``ncprobe compute`` prints and
:meth:`Results.summary <ncprobe.ncimp.results.Results.summary>` returns.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from ..schema import (
    ALL_CLASSES,
    CONTEXT_GROUPS,
    LEVELS,
    OWN_VIEW,
    OWN_VIEW_LABEL,
    RATIO,
    SPACES,
    Correction,
)
from ..significance import ALPHA, CORRECTION_NAMES, check_correction
from ..stats import correct as correct_p
from .inference import quartiles

if TYPE_CHECKING:
    from .runs import ResultsData as Results

__all__ = ["summary"]


def summary(res: Results, space: str | None = None, analysis: str | None = None,
            correct: Correction = "holm") -> str:
    """The text summary of ``res``: what :meth:`Results.summary
    <ncprobe.ncimp.results.Results.summary>` returns (its docstring says what it holds and what the
    arguments do)."""
    check_correction(correct)  # an unknown correction: refused before any work
    lines = []
    for m in res.meta:  # first, where it cannot be missed
        if m.get("edited"):
            lines.append(f"EDITED RESULTS ({m['config']['model']}/{m['config']['lang']}): "
                         f"{', '.join(m['edited'])} edited since ncprobe wrote it (read "
                         "with accept_edited): these numbers are not what ncprobe computed")
        for rel, blob in (m.get("modified_data") or {}).items():
            lines.append(f"MODIFIED DATA ({m['config']['model']}/{m['config']['lang']}): "
                         f"{rel} (git blob {blob['blob']}, pinned {blob['pinned']})")
    if lines:
        lines.append("")
    spaces = ([space] if space is not None else
              [s for s in SPACES if s in set(res.distributions["space"].astype(str))])
    analyses = ([analysis] if analysis is not None else
                ["nc"] + (["sentence"] if (res.correlations["analysis"] == "sentence").any()
                          else []))
    keys = ["model", "lang", "layers", "level", "context"]
    cor = res.correlations[res.correlations["analysis"].isin(analyses)
                            & res.correlations["space"].isin(spaces)]
    # the family: every correlation printed below
    cor = cor.assign(p_corrected=correct_p(cor["p"].to_numpy(dtype=float), correct))
    family = int(cor["p"].notna().sum())
    order = {**{lv: i for i, lv in enumerate(LEVELS)},
             **{g: i for i, g in enumerate(CONTEXT_GROUPS)},
             **{s: i for i, s in enumerate(SPACES)}}

    def ordered(df: pd.DataFrame) -> pd.DataFrame:
        return df.sort_values(["space", "model", "lang", "layers", "level", "context"],
                              key=lambda c: c.map(order).fillna(-1) if c.name in (
                                  "level", "context", "space") else c, kind="stable")

    ratios = res.measures[res.measures["measure"].astype(str) == RATIO]
    ratio_values = {k: g["value"].dropna().to_numpy(dtype=float) for k, g in
                    ratios.groupby(["space", *keys], observed=True, sort=False)}
    label = CORRECTION_NAMES[correct]
    pcol = {"holm": "p Holm", "fdr_bh": "p BH"}.get(correct, "")
    for an in analyses:
        if an == "sentence":
            block_rows = ordered(cor[cor["analysis"] == "sentence"])
            for key, block in block_rows.groupby(["space", *keys], sort=False,
                                                 observed=True):
                sp, model, lang, layers, level, context = key
                lines.append(f"{model} · {lang}{_view_text(layers)} · {level} level · per sentence "
                             f"({sp} space): each naturalistic sentence's value with its "
                             "token-level score")
                lines.append(f"  {'measure':<26}{'rho [95% CI]':>27}  {'p':>8}  "
                             f"{pcol:>8}  {'sentences':>9}")
                for _, r in block.iterrows():
                    lines.append(f"  {str(r['measure']):<26}{_rho_text(r):>27}  "
                                 f"{_p_text(r['p']):>8}  "
                                 f"{_p_text(r['p_corrected']) if pcol else '':>8}  "
                                 f"{_n_text(r['n']):>9}")
                lines.append("")
            continue
        dist = res.distributions[(res.distributions["cls"] == ALL_CLASSES)
                                  & res.distributions["space"].isin(spaces)]
        c = cor[cor["analysis"] == an]
        c = c.rename(columns={"n": "n_rho", "ci_low": "rho_low", "ci_high": "rho_high"})
        merged = dist.merge(c[["space", *keys, "measure", "rho", "p", "p_corrected",
                               "n_rho", "rho_low", "rho_high"]],
                            on=["space", *keys, "measure"], how="left")
        for key, block in ordered(merged).groupby(["space", *keys], sort=False,
                                                  observed=True):
            sp, model, lang, layers, level, context = key
            what = "" if an == "nc" else f" · {an}"
            lines.append(f"{model} · {lang}{_view_text(layers)} · {level} level · "
                         f"{context}{what} ({sp} space)")
            lines.append(f"  {'measure':<26}{'mean ± sd':>17}  {'rho [95% CI]':>27}  "
                         f"{'p':>8}  {pcol:>8}  {'NCs':>4}")
            for _, r in block.iterrows():
                lines.append(f"  {str(r['measure']):<26}{r['mean']:>8.3f} ± {r['sd']:<6.3f}  "
                             f"{_rho_text(r, 'rho_low', 'rho_high'):>27}  "
                             f"{_p_text(r['p']):>8}  "
                             f"{_p_text(r['p_corrected']) if pcol else '':>8}  "
                             f"{_n_text(r['n_rho']):>4}")
                v = ratio_values.get(key) if str(r["measure"]) == RATIO else None
                if v is not None and len(v):
                    q1, med, q3 = quartiles(v)
                    lines.append(f"  {'':<26}median {med:.3f}, IQR [{q1:.3f}, {q3:.3f}] "
                                 "(25th-75th percentile over the NCs)")
            lines.append("")
    mark = (f"{label} p <= {ALPHA} across all {family} correlations printed above"
            if correct != "none" else
            f"p <= {ALPHA}, not corrected for the {family} correlations printed above")
    lines.append(f"* {mark} (Spearman, two-sided; p: uncorrected"
                 + (f", {pcol}: {label})" if pcol else ")"))
    lines.append(f"rho: with the {_gold_name(res)} per NC; [95% CI]: "
                 f"{_interval_name(res)}")
    if "sentence" in analyses:
        lines.append("per sentence: rho of each naturalistic sentence's value with that "
                     "sentence's token-level score (whatever the gold)")
    lines.append("comp: P_Comp, the NC replaced by one of its own words; per sentence the "
                 "better of comp-head (the head alone) and comp-mod (the modifier alone)")
    for n in res.notes:
        lines.append(f"note: {n}")
    return "\n".join(lines)

def _gold_name(res: Results) -> str:
    """The gold score the runs correlated with, from their configs (``--gold``)."""
    names = {"comp": "gold compositionality score (Eq. 1: token-level scores averaged "
                     "over the 3 sentences)",
             "type": "type-level compositionality score (--gold type)"}
    # a run on a user's own stimuli (load_pairs) read no NCIMP file: its gold is theirs
    golds = {(m["config"].get("model"), m["config"].get("lang")):
             m["config"].get("gold", "comp") if m.get("data_sources", True) else "given"
             for m in res.meta if m.get("config")}
    names["given"] = "gold score given with the stimuli (the comp column of your pairs)"
    kinds = list(dict.fromkeys(golds.values()))
    if len(kinds) == 1:
        return names.get(kinds[0], f"gold {kinds[0]!r}")
    if not kinds:
        return "gold score (the runs' configs do not name it)"
    return "gold score of each run (" + ", ".join(
        f"{model}/{lang}: {g}" for (model, lang), g in golds.items()) + ")"

def _interval_name(res: Results) -> str:
    boots = list(dict.fromkeys(m["config"].get("n_boot") for m in res.meta
                               if m.get("config")))
    if boots == [0]:
        return "none (--n-boot 0)"
    shown = ", ".join(str(b) for b in boots if b is not None)
    return ("percentile bootstrap over the NCs"
            + (f" ({shown} resamples)" if shown else ""))

def _view_text(layers) -> str:
    """How a block names its layer view: nothing for a model without layers (``-``), the
    label of a sentence-transformers model's own sentence embedding (one block, not a
    layer), else ``layers 9+10+11+12``."""
    if layers == "-":
        return ""
    if layers == OWN_VIEW:
        return f" · {OWN_VIEW_LABEL} (not a layer)"
    return f" · layers {layers}"


def _rho_text(r, low: str = "ci_low", high: str = "ci_high") -> str:
    """``+0.593 [+0.501, +0.662]*``: rho, its interval where the run has one, ``*`` where the
    corrected p <= ALPHA."""
    if pd.isna(r["rho"]):
        return ""
    star = "*" if r["p_corrected"] <= ALPHA else " "
    if pd.isna(r[low]) or pd.isna(r[high]):
        return f"{r['rho']:+.3f}{star}"
    return f"{r['rho']:+.3f} [{r[low]:+.3f}, {r[high]:+.3f}]{star}"


def _p_text(p) -> str:
    return "" if pd.isna(p) else f"{p:.2g}"


def _n_text(n) -> str:
    return "" if pd.isna(n) else f"{int(n)}"
