"""NCIMP as a target of amnesic probing: Spearman's rho of each measure with the gold, as the
vectors are, with a concept erased and with its control erased (:mod:`ncprobe.intervention`).

The three runs are :func:`ncprobe.compute` of one model and language, the same options, each
with its vector transform (``None``: plain). Their rows:

* ``plain``, ``erased``, ``control``: the ``correlations`` table's rho (analysis ``nc``,
  space ``raw``: the vectors the eraser changed, not their standardisation), per measure,
  layer view, level and context, with the run's bootstrap interval over compounds;
* ``erased - plain``, ``control - plain``, ``erased - control``: the difference of rho on the
  compounds both runs hold, its paired bootstrap interval (compounds resampled jointly,
  :func:`ncprobe.ncimp.comparison.compare`), and for ``erased - control`` the bootstrap test,
  corrected over every cell of the target (measures x views x levels x contexts: the run's
  design).

Its class tests too: ``class separation <measure>`` is how far apart the compositionality
classes (I, PC, C) lie in that measure, the rank effect size of their Kruskal-Wallis test,
``eta2_H`` (:func:`ncprobe.stats.class_separation`; chance line 0, classes fully apart in rank
1), for each measure the class tests show (:data:`~ncprobe.schema.DISPLAY_MEASURES`), view,
level and context. Its rows are on the compounds with a class and a value in all three runs;
the conditions' intervals resample them (the runs' ``n_boot``), the changes resample them
jointly (``compare_n_boot``, the same draws for both runs) and ``erased - control`` is tested
as for rho, in a family of its own: every class-separation cell of the run (a second
question, does erasing the concept change how the classes differ, beside the first, does it
change how the measures follow the gold).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..intervention import CHANGES, TARGET_COLUMNS, TARGET_RUNS, TESTED, correct_family

if TYPE_CHECKING:
    import pandas as pd

    from ..concept import FittedOn
    from ..transform import VectorTransform

#: What NCIMP's intervals and tests resample.
UNIT = "compounds"
_RAW = {"space": "raw"}


def target_rows(model: str, lang: str, transforms: Mapping[str, VectorTransform | None], *,
                layers: str | None = None, n_boot: int = 1000, seed: int = 0,
                correction: str = "holm", compare_n_boot: int,
                fitted_on: FittedOn | None = None, **run: Any) -> pd.DataFrame:
    """The rows of :data:`ncprobe.intervention.TARGET_COLUMNS` of ``model`` on ``lang``: one
    :func:`ncprobe.compute` per condition (``transforms``: ``plain``, ``erased``,
    ``control``), then the changes (the module says which rows).

    Args:
        layers: the transformer layer views (RunConfig's ``layers``).
        n_boot, seed: the runs' intervals; the seed of every resample.
        correction: of the ``erased - control`` tests (``holm``, ``fdr_bh``, ``none``).
        compare_n_boot: the resamples of the changes' paired intervals and tests (the
            amnesic run resolves its default, :data:`ncprobe.probes.options.COMPARE_N_BOOT`).
        fitted_on: the concept's training rows; NCIMP trains nothing on its compounds, so no
            row shares them (``shares_concept_rows`` false).
        run: :func:`ncprobe.compute`'s other keywords (``data_dir``, ``cache``,
            ``cache_dir``, ``progress``).
    """
    import pandas as pd

    from .comparison import compare
    from .pipeline import compute

    runs = {c: compute(model=model, lang=lang, layers=layers, n_boot=n_boot, seed=seed,
                       transform=transforms[c], **run) for c in TARGET_RUNS}
    rows: list[dict] = []
    for condition, res in runs.items():
        c = res.correlations
        c = c[(c["analysis"].astype(str) == "nc") & (c["space"].astype(str) == "raw")]
        for r in c.itertuples(index=False):
            rows.append({"target": "ncimp", "metric": f"rho {r.measure}",
                         "layer": str(r.layers), "level": str(r.level),
                         "context": str(r.context), "condition": condition,
                         "value": float(r.rho), "ci_low": float(r.ci_low),
                         "ci_high": float(r.ci_high), "n": int(r.n), "unit": UNIT})
    for change in CHANGES:
        a, b = (runs[side.strip()] for side in change.split(" - "))
        tests = compare(a, b, select_a=_RAW, select_b=_RAW, n_boot=compare_n_boot, seed=seed,
                        correct=correction, same=True)  # type: ignore[arg-type]
        tested = change == TESTED
        for r in tests.itertuples(index=False):
            rows.append({"target": "ncimp", "metric": f"rho {r.measure}",
                         "layer": str(r.layers), "level": str(r.level),
                         "context": str(r.context), "condition": change,
                         "value": float(r.diff), "ci_low": float(r.ci_low),
                         "ci_high": float(r.ci_high), "n": int(r.n), "unit": UNIT,
                         **({"p": float(r.p_boot), "p_corrected": float(r.p_corrected),
                             "significant": bool(r.significant),
                             "family": f"ncimp: erased vs control, every cell "
                                       f"({len(tests)} tests)"} if tested else {})})
    rows += class_rows(runs, n_boot=n_boot, compare_n_boot=compare_n_boot, seed=seed,
                       correction=correction)
    out = pd.DataFrame(rows, columns=list(TARGET_COLUMNS))
    out["shares_concept_rows"] = False
    return out


#: The cells of a class-separation row, beside the compound.
_CELL = ["layers", "level", "context", "measure"]


def class_rows(runs: Mapping[str, Any], *, n_boot: int, compare_n_boot: int, seed: int,
               correction: str) -> list[dict]:
    """The ``class separation <measure>`` rows of the three runs (``runs``: condition ->
    Results) and their changes (the module says what they are)."""
    import numpy as np
    import pandas as pd

    from ..schema import DISPLAY_MEASURES
    from ..significance import check_correction, warn_resolution
    from ..stats import (
        bootstrap_p,
        class_separation,
        correct_bounded,
        percentile_interval,
        resamples_for,
    )

    sides = []
    for condition in TARGET_RUNS:
        m = runs[condition].measures
        m = m[(m["space"].astype(str) == "raw")
              & m["measure"].astype(str).isin(DISPLAY_MEASURES)]
        side = m[_CELL + ["nc", "cls", "value"]].astype({k: str for k in _CELL + ["nc"]})
        sides.append(side.rename(columns={"value": condition}).set_index(_CELL + ["nc"]))
    cls = sides[0]["cls"]
    joined = pd.concat([cls, *(s[c] for s, c in zip(sides, TARGET_RUNS, strict=True))],
                       axis=1, join="inner").dropna()
    rows: list[dict] = []
    tests: list[dict] = []
    bounds: list[bool] = []
    for cell, part in joined.groupby(level=list(range(len(_CELL))), sort=False):
        key = dict(zip(_CELL, cell, strict=True))
        base = {"target": "ncimp", "metric": f"class separation {key['measure']}",
                "layer": key["layers"], "level": key["level"], "context": key["context"],
                "n": len(part), "unit": UNIT}
        labels = part["cls"].astype(str).to_numpy()
        point, paired = {}, {}
        for c in TARGET_RUNS:
            v = part[c].to_numpy(dtype=np.float64)
            point[c], drawn = class_separation(v, labels, n_boot=n_boot, seed=seed)
            lo, hi = percentile_interval(drawn, 0.95)
            rows.append({**base, "condition": c, "value": point[c], "ci_low": lo,
                         "ci_high": hi})
            paired[c] = class_separation(v, labels, n_boot=compare_n_boot, seed=seed)[1]
        for change in CHANGES:
            a, b = (side.strip() for side in change.split(" - "))
            diffs = paired[a] - paired[b]
            lo, hi = percentile_interval(diffs, 0.95)
            row = {**base, "condition": change, "value": point[a] - point[b],
                   "ci_low": lo, "ci_high": hi}
            if change == TESTED:
                row["p"], floor = bootstrap_p(diffs)
                tests.append(row)
                bounds.append(floor)
            rows.append(row)
    if tests:
        correct_family(tests, correction, "ncimp class separation: erased vs control, "
                                          "every cell")
        # a p at the floor of the resamples, corrected: say when it limits a decision
        corrected, bound = correct_bounded([r["p"] for r in tests], bounds,
                                           check_correction(correction))
        warn_resolution(corrected, bound, rows="class separation tests",
                        resamples=f"{compare_n_boot:,} bootstrap resamples",
                        option="compare_n_boot (--compare-n-boot)",
                        needed=resamples_for(len(tests), correction, per=2))
    return rows
