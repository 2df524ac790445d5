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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..intervention import CHANGES, TARGET_COLUMNS, TARGET_RUNS, TESTED
from ..significance import ALPHA
from ..stats import correct

if TYPE_CHECKING:
    import pandas as pd

    from ..transform import VectorTransform

#: What AStitch's intervals and tests resample.
UNIT = "expressions"
_CELL = ("layer", "level", "context")


def _condition_rows(condition: str, res: Any) -> list[dict]:
    rows = []
    auroc = res.auroc
    auroc = auroc[(auroc["split"].astype(str) == "test") & (auroc["subset"].astype(str) == "all")]
    for r in auroc.to_dict("records"):
        rows.append({"metric": f"auroc {r['score']}", **{k: str(r[k]) for k in _CELL},
                     "condition": condition, "value": r["auroc"], "ci_low": r["ci_low"],
                     "ci_high": r["ci_high"], "n": r["n"]})
    lin = res.linear
    lin = lin[(lin["probe_kind"].astype(str) == "linear") & (lin["subset"].astype(str) == "all")]
    for r in lin.to_dict("records"):
        rows.append({"metric": f"macro-F1 {r['setting']}", **{k: str(r[k]) for k in _CELL},
                     "condition": condition, "value": r["macro_f1"], "ci_low": r["f1_low"],
                     "ci_high": r["f1_high"], "n": r["n"]})
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
    lin = a.linear
    lin = lin[(lin["probe_kind"].astype(str) == "linear") & (lin["subset"].astype(str) == "all")]
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
                correction: str = "holm", compare_n_boot: int | None = None,
                **run: Any) -> pd.DataFrame:
    """The rows of :data:`ncprobe.intervention.TARGET_COLUMNS` of ``model`` on ``lang``: one
    AStitch run per condition (``transforms``: ``plain``, ``erased``, ``control``), then the
    changes (the module says which rows).

    Args:
        layers: the transformer layer views (AStitchConfig's ``layers``).
        n_boot, seed: the runs' intervals; the seed of every resample.
        correction: of the ``erased - control`` tests (``holm``, ``fdr_bh``, ``none``).
        compare_n_boot: the resamples of the changes (``None``:
            :data:`ncprobe.probes.options.COMPARE_N_BOOT`, as ``ncprobe compare``: enough for
            a family of tens of cells to reach significance after the correction).
        run: :func:`~ncprobe.astitch.probe.run_astitch`'s other keywords (its config's fields:
            ``settings``, ``contexts``, ...; ``data_dir``, ``cache``, ``cache_dir``,
            ``progress``).
    """
    import pandas as pd

    from ..probes.options import COMPARE_N_BOOT
    from .probe import run_astitch

    resamples = COMPARE_N_BOOT if compare_n_boot is None else compare_n_boot
    runs = {c: run_astitch(models=[model], langs=[lang], layers=layers, n_boot=n_boot,
                           seed=seed, correction=correction, transform=transforms[c], **run)
            for c in TARGET_RUNS}
    rows: list[dict] = []
    for condition, res in runs.items():
        rows += _condition_rows(condition, res)
    for change in CHANGES:
        a, b = (runs[side.strip()] for side in change.split(" - "))
        auroc = _auroc_changes(change, a, b, resamples, seed)
        if change == TESTED and auroc:  # one family: the AUROC tests of every cell
            p = np.array([r["p"] for r in auroc], dtype=np.float64)
            ok = np.isfinite(p)
            corrected = np.full(len(p), np.nan)
            corrected[ok] = correct(p[ok], correction)  # type: ignore[arg-type]
            for r, pc in zip(auroc, corrected, strict=True):
                r.update(p_corrected=float(pc), significant=bool(pc <= ALPHA),
                         family=f"astitch AUROC: erased vs control, every cell "
                                f"({int(ok.sum())} tests)")
        else:
            for r in auroc:
                r["p"] = np.nan
        f1 = _f1_changes(change, a, b, resamples, seed, correction)
        for r in f1:
            if change == TESTED:
                r["family"] = f"astitch macro-F1: erased vs control, every cell ({len(f1)} tests)"
            else:
                r.update(p=np.nan, p_corrected=np.nan, significant=np.nan)
        rows += auroc + f1
    out = pd.DataFrame(rows, columns=list(TARGET_COLUMNS))
    out["target"], out["unit"] = "astitch", UNIT
    return out
