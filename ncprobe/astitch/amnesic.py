"""AStitch as a target of amnesic probing: the paraphrase probe's AUROC and the linear probe's
macro-F1, as the vectors are, with a concept erased and with its control erased
(:mod:`ncprobe.intervention`).

The three runs are :func:`ncprobe.astitch.probe.run_astitch` of one model and language with the
same options, each with its vector transform (``None``: plain). Their rows, on the test split
(every use, subset ``all``):

* ``plain``, ``erased``, ``control``: ``auroc <score>`` (the paraphrase probe, per layer view,
  level and context) and ``macro-F1 <setting>`` (the linear probe's cells of the model, not its
  controls), each with the run's cluster-bootstrap interval over expressions;
* the changes ``erased - plain``, ``control - plain``, ``erased - control``: for the AUROC the
  difference on the same scored uses with its paired cluster-bootstrap interval
  (:func:`ncprobe.astitch.stats.paired_auroc_diff`: the expressions resampled jointly) and,
  for ``erased - control``, its bootstrap p; for the macro-F1 AStitch's paired tests of two
  cells (:func:`ncprobe.astitch.stats.paired_tests`: the paired interval, and the cluster swap
  permutation test). Each kind of ``erased - control`` test is corrected over every cell of
  the target in the run (its views, levels, contexts, scores or settings: the design).

A setting whose training split holds rows the concept's erasers were fitted on (the AStitch
concept's, few-shot by default) has its macro-F1 rows marked ``shares_concept_rows``: its
linear probe is trained on the erased training rows themselves, so LEACE's guarantee alone
sends it to chance, whatever the model uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..intervention import CHANGES, TARGET_COLUMNS, TARGET_RUNS, TESTED, correct_family

if TYPE_CHECKING:
    import pandas as pd

    from ..concept import FittedOn
    from ..transform import VectorTransform

#: What AStitch's intervals and tests resample.
UNIT = "expressions"
_CELL = ("layer", "level", "context")


#: The target's metrics in a run's tables: the table, the rows kept (column: value), the
#: metric's name (from a row's columns), and the columns of its value and interval.
_METRICS: dict[str, tuple[dict[str, str], str, tuple[str, str, str]]] = {
    "auroc": ({"split": "test", "subset": "all"}, "auroc {score}",
              ("auroc", "ci_low", "ci_high")),
    "linear": ({"probe_kind": "linear", "subset": "all"}, "macro-F1 {setting}",
               ("macro_f1", "f1_low", "f1_high")),
}


def _kept(table: pd.DataFrame, keep: Mapping[str, str]) -> pd.DataFrame:
    """The rows of ``table`` whose columns hold ``keep``'s values."""
    for col, value in keep.items():
        table = table[table[col].astype(str) == value]
    return table


def _condition_rows(condition: str, res: Any) -> list[dict]:
    """One run's rows of every metric (:data:`_METRICS`), each with its interval."""
    rows = []
    for table, (keep, metric, (value, low, high)) in _METRICS.items():
        for r in _kept(getattr(res, table), keep).to_dict("records"):
            rows.append({"metric": metric.format(**r), **{k: str(r[k]) for k in _CELL},
                         "condition": condition, "value": r[value], "ci_low": r[low],
                         "ci_high": r[high], "n": r["n"]})
    return rows


def _auroc_changes(change: str, a: Any, b: Any, n_boot: int, seed: int) -> list[dict]:
    from . import SCORES
    from .stats import paired_auroc_diff

    keys = ["lang", "split", *_CELL, "row"]
    sa, sb = (s.scores[s.scores["split"].astype(str) == "test"] for s in (a, b))
    both = sa.merge(sb[[*keys, *SCORES]], on=keys, suffixes=("_a", "_b"), validate="one_to_one")
    rows = []
    for cell, part in both.groupby(list(_CELL), sort=False, observed=True):
        for score in SCORES:
            va = part[f"{score}_a"].to_numpy(np.float64)
            vb = part[f"{score}_b"].to_numpy(np.float64)
            ok = np.isfinite(va) & np.isfinite(vb)
            got = paired_auroc_diff(va[ok], vb[ok], part["label"].to_numpy()[ok],
                                    part["expression"].to_numpy(object)[ok], n_boot=n_boot,
                                    seed=seed)
            rows.append({"metric": f"auroc {score}",
                         **{k: str(v) for k, v in zip(_CELL, cell, strict=True)},
                         "condition": change, "value": got["diff"], "ci_low": got["ci_low"],
                         "ci_high": got["ci_high"], "n": got["n"], "p": got["p"]})
    return rows


def _f1_changes(change: str, a: Any, b: Any, n_boot: int, seed: int, correction: str
                ) -> list[dict]:
    import pandas as pd

    from .linear import PRED_KEYS
    from .stats import paired_tests

    # the two runs' cells differ by their run only: name each side's model apart
    pa = a.predictions.assign(model=a.predictions["model"].astype(str) + " [a]")
    pb = b.predictions.assign(model=b.predictions["model"].astype(str) + " [b]")
    preds = pd.concat([pa, pb], ignore_index=True)
    lin = _kept(a.linear, _METRICS["linear"][0])
    pairs = []
    for r in lin.to_dict("records"):
        key = {k: str(r[k]) for k in PRED_KEYS}
        pairs.append(({**key, "model": key["model"] + " [a]"},
                      {**key, "model": key["model"] + " [b]"}))
    if not pairs:
        return []
    tests = paired_tests(preds, pairs, family=f"astitch amnesic: {change}", n_boot=n_boot,
                         seed=seed, correction=correction,
                         n_perm="auto" if change == TESTED else 0)
    rows = []
    for (key, _), t in zip(pairs, tests.to_dict("records"), strict=True):
        rows.append({"metric": f"macro-F1 {key['setting']}", **{k: key[k] for k in _CELL},
                     "condition": change, "value": t["diff"], "ci_low": t["diff_low"],
                     "ci_high": t["diff_high"], "n": t["n"], "p": t["p"],
                     "p_corrected": t["p_corrected"], "significant": t["significant"]})
    return rows


def target_rows(model: str, lang: str, transforms: Mapping[str, VectorTransform | None], *,
                layers: str | None = None, n_boot: int = 1000, seed: int = 0,
                correction: str = "holm", compare_n_boot: int,
                fitted_on: FittedOn | None = None, **run: Any) -> pd.DataFrame:
    """The rows of :data:`ncprobe.intervention.TARGET_COLUMNS` of ``model`` on ``lang``: one
    AStitch run per condition (``transforms``: ``plain``, ``erased``, ``control``), then the
    changes (the module says which rows).

    Args:
        layers: the transformer layer views (AStitchConfig's ``layers``).
        n_boot, seed: the runs' intervals; the seed of every resample.
        correction: of the ``erased - control`` tests (``holm``, ``fdr_bh``, ``none``).
        compare_n_boot: the resamples of the changes' paired intervals and tests (the
            amnesic run resolves its default, :data:`ncprobe.probes.options.COMPARE_N_BOOT`).
        fitted_on: the rows the concept's erasers were fitted on: the macro-F1 rows of a
            setting whose training split holds any of them are marked
            (``shares_concept_rows``: LEACE's guarantee alone sends that probe to chance).
        run: :func:`~ncprobe.astitch.probe.run_astitch`'s other keywords (its config's fields:
            ``settings``, ``contexts``, ...; ``data_dir``, ``cache``, ``cache_dir``,
            ``progress``).
    """
    import pandas as pd

    from .probe import run_astitch

    runs = {c: run_astitch(models=[model], langs=[lang], layers=layers, n_boot=n_boot,
                           seed=seed, correction=correction, transform=transforms[c], **run)
            for c in TARGET_RUNS}
    rows: list[dict] = []
    for condition, res in runs.items():
        rows += _condition_rows(condition, res)
    for change in CHANGES:
        a, b = (runs[side.strip()] for side in change.split(" - "))
        auroc = _auroc_changes(change, a, b, compare_n_boot, seed)
        if change == TESTED and auroc:  # one family: the AUROC tests of every cell
            correct_family(auroc, correction, "astitch AUROC: erased vs control, every cell")
        else:
            for r in auroc:
                r["p"] = np.nan
        f1 = _f1_changes(change, a, b, compare_n_boot, seed, correction)
        for r in f1:
            if change == TESTED:
                r["family"] = f"astitch macro-F1: erased vs control, every cell ({len(f1)} tests)"
            else:
                r.update(p=np.nan, p_corrected=np.nan, significant=np.nan)
        rows += auroc + f1
    out = pd.DataFrame(rows, columns=list(TARGET_COLUMNS))
    out["target"], out["unit"] = "astitch", UNIT
    settings = _kept(runs["plain"].linear, _METRICS["linear"][0])["setting"].astype(str)
    out["shares_concept_rows"] = out["metric"].isin(_sharing(
        fitted_on, lang, list(dict.fromkeys(settings)), run.get("data_dir"),
        bool(run.get("accept_modified_data", False))))
    return out


def _sharing(fitted_on: FittedOn | None, lang: str, settings: list[str], data_dir: Any,
             accept_modified: bool) -> set[str]:
    """The macro-F1 metrics of ``settings`` whose linear probe trains on rows the concept's
    erasers were fitted on (the setting's training splits, :data:`~ncprobe.astitch.SETTINGS`,
    hold one of ``fitted_on``'s rows)."""
    if fitted_on is None or not settings:
        return set()
    from ..data.astitch import load_astitch
    from . import SETTINGS
    from .concept import row_ids

    records = load_astitch(lang, data_dir, accept_modified=accept_modified).records
    ids = row_ids(records)
    split = np.array([r.split for r in records], dtype=object)
    return {f"macro-F1 {s}" for s in settings
            if fitted_on.shared("astitch", lang, ids[np.isin(split, SETTINGS[s])])}
