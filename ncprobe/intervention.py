"""What a probe measures of an intervention on the vectors: the rows every target gives.

Amnesic probing (:mod:`ncprobe.amnesic`) runs a target probe three times on one model's
vectors: as they are (``plain``), with a concept erased (``erased``) and with a control of the
same rank erased (``control``), each through the probe seam with a vector transform
(:mod:`ncprobe.transform`). A probe that can be a target (:attr:`Probe.offers_target`)
measures the three runs and their changes itself, over its own unit, and gives them back as
rows of :data:`TARGET_COLUMNS`; nothing outside the probe knows what its metric is.

Rows:

* ``condition`` ``plain``, ``erased``, ``control``: the metric of that run, ``value`` with
  its interval (``ci_low``, ``ci_high``) over the probe's unit, and ``n``;
* ``condition`` :data:`CHANGES` (``erased - plain``, ``control - plain``, ``erased -
  control``): the paired difference on the same units with its paired interval; the rows of
  ``erased - control`` carry the paired test (``p``, ``p_corrected``, ``significant``) and
  its ``family``: every test of that target in the run, fixed by the run's design (its views,
  levels and metrics), never by what else was run beside it.

Every row says whether its cell trains on rows the concept's erasers were fitted on
(``shares_concept_rows``, :meth:`ncprobe.concept.FittedOn.shared`): AStitch's linear probe in
the setting whose training split the AStitch concept is fitted on. There LEACE's guarantee alone
sends the trained classifier to chance, so its change answers no question of use; a metric
that trains nothing (a correlation, an AUROC) never shares.
"""

from __future__ import annotations

#: The runs of a target: the vectors as they are, the concept erased, the control erased.
TARGET_RUNS: tuple[str, ...] = ("plain", "erased", "control")
#: The changes each target measures, as ``a - b`` of two conditions on the same units.
CHANGES: tuple[str, ...] = ("erased - plain", "control - plain", "erased - control")
#: The change whose rows carry the paired test: does erasing the concept change the target
#: more than erasing any directions of its size?
TESTED = "erased - control"
#: The columns of a target's rows (``unit``: what the interval resamples, in words).
TARGET_COLUMNS: tuple[str, ...] = (
    "target", "metric", "layer", "level", "context", "condition", "value", "ci_low",
    "ci_high", "n", "unit", "p", "p_corrected", "significant", "family",
    "shares_concept_rows")


def correct_family(tests: list[dict], correction: str, family: str) -> None:
    """Correct the ``p`` of ``tests`` (the ``erased - control`` rows of one family: every
    cell of one test of the target) in place: ``p_corrected``, ``significant`` (at
    :data:`ncprobe.significance.ALPHA`) and ``family`` (``family`` with the number of tests).
    A NaN ``p`` (a test not defined) is no part of the family and stays untested."""
    import numpy as np

    from .significance import ALPHA
    from .stats import correct

    p = np.array([r["p"] for r in tests], dtype=np.float64)
    ok = np.isfinite(p)
    corrected = correct(p, correction)  # type: ignore[arg-type]  # NaN stays NaN
    for r, pc in zip(tests, corrected, strict=True):
        r.update(p_corrected=float(pc), significant=bool(pc <= ALPHA) if np.isfinite(pc)
                 else np.nan, family=f"{family} ({int(ok.sum())} tests)")
