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
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..intervention import CHANGES, TARGET_COLUMNS, TARGET_RUNS, TESTED

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
    out = pd.DataFrame(rows, columns=list(TARGET_COLUMNS))
    out["shares_concept_rows"] = False
    return out
