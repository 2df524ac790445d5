"""A concept's erasers, view by view: the concept's, the control's, and LEACE's guarantee shown.

:func:`fit_concept` reads a :class:`~ncprobe.concept.Concept` one (view, level) at a time and
fits, on its training rows only:

* the **concept's eraser** (:class:`~ncprobe.amnesic.erase.EraserFitter`, LEACE);
* the **control's eraser** (Elazar et al. 2021): fitted on the concept's labels permuted at
  random (:func:`~ncprobe.amnesic.erase.control_labels`; among the groups where each group
  holds one label), so it erases as many directions as the concept's and none of them is the
  concept's but by chance.

A concept with held-out rows (AStitch: a training split and dev) gets one eraser per view and
level, fitted on all training rows; its guarantee is checked on the training and held-out
rows. A concept without (NCIMP: the compounds) gets **one eraser per fold of groups**
(:func:`~ncprobe.amnesic.erase.fold_erasers`): a compound is erased only by an eraser fitted on
other compounds, and the guarantee of each fold's eraser is checked on its training part and
its held-out fold. A row of a target whose group the concept never saw (a compound without a
class) is erased by the eraser of all the concept's rows, which was fitted without it either.

What comes back holds the two erasures as vector transforms
(:class:`~ncprobe.amnesic.erase.ErasingTransform`) that any probe's run takes
(``transform=``), and the guarantee table: the concept's own linear probe before and after
erasure, on training and held-out rows, beside the chance line.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .erase import (
    Eraser,
    EraserFitter,
    ErasingTransform,
    control_labels,
    fold_erasers,
    grouped_folds,
    guarantee,
    one_label_per_group,
)

if TYPE_CHECKING:
    import pandas as pd

    from ..concept import Concept, ConceptRows

#: The folds by group of a concept without held-out rows.
FOLDS = 5
#: The columns of :attr:`FittedConcept.guarantee`.
GUARANTEE_COLUMNS = ("concept", "view", "level", "condition", "fold", "split", "probe",
                     "accuracy", "chance", "n")


@dataclass(frozen=True)
class FittedConcept:
    """What :func:`fit_concept` fitted.

    Attributes:
        erased: the concept's erasers, as a vector transform.
        control: the control's erasers (the same rank, random labels), as a vector transform.
        guarantee: one row per view, level, condition (``concept``, ``control``), fold (``all``
            where the concept has held-out rows, else ``1`` ... ``k``), split (``train``,
            ``held``) and probe (``plain``, ``erased``): the concept's linear probe's
            ``accuracy``, the ``chance`` line (the training rows' majority class) and ``n``.
        notes: what was noticed (rows without a vector, left out).
    """

    erased: ErasingTransform
    control: ErasingTransform
    guarantee: pd.DataFrame
    notes: tuple[str, ...]


def _guarantee_rows(concept: str, rows: ConceptRows, condition: str, fold: str,
                    x_train: np.ndarray, y_train: np.ndarray, x_held: np.ndarray,
                    y_held: np.ndarray, eraser: Eraser) -> list[dict]:
    # the concept's labels, also for the control's eraser: does erasing random directions
    # of the same rank take the concept away? (it should not)
    table = guarantee(x_train, y_train, x_held, y_held, eraser).table()
    table = table.rename(columns={"condition": "probe"})
    return [{"concept": concept, "view": rows.view, "level": rows.level, "condition": condition,
             "fold": fold, **r} for r in table.to_dict("records")]


def fit_concept(concept: Concept, *, folds: int = FOLDS, seed: int = 0,
                device: str | None = None,
                on_view: Callable[[str, str, int, int], None] | None = None) -> FittedConcept:
    """The concept's and the control's erasers of every view and level of ``concept``, fitted
    on its training rows only, and their guarantee (the module says how).

    Args:
        folds: the folds by group of a concept without held-out rows.
        seed: the folds' and the control labels' seed.
        device: where the erasers are fitted (``EraserFitter``).
        on_view: told ``(view, level, i, n)`` before each view is fitted (progress).

    Raises:
        OneLabelError: training rows (or a fold's training part) of one label, naming them.
        EraserError: fewer groups than folds.
    """
    import pandas as pd

    classes = list(range(len(concept.classes)))
    erased: dict[tuple[str, str], Any] = {}
    control: dict[tuple[str, str], Any] = {}
    others: dict[tuple[str, str], Eraser] = {}
    others_control: dict[tuple[str, str], Eraser] = {}
    rows_out: list[dict] = []
    notes: list[str] = []
    for i, (view, level) in enumerate(concept.views):
        if on_view is not None:
            on_view(view, level, i, len(concept.views))
        rows = concept.rows(view, level)
        for side, dropped in (("training", rows.dropped_train), ("held-out", rows.dropped_held)):
            if dropped:
                notes.append(f"{concept.name}, view {view}, level {level}: {dropped} {side} "
                             "row(s) without a vector left out")
        x, y, g = rows.x_train, rows.y_train, rows.groups_train
        where = f"{concept.name}, view {view}, level {level}"
        key = (view, level)
        # the concept's first: training rows of one label are named here
        full = EraserFitter(x.shape[1], classes, where=f"{where}: the training rows",
                            device=device).update(x, y).eraser()
        by_group = one_label_per_group(y, g)
        y_control = control_labels(y, seed, groups=g if by_group else None)
        full_control = EraserFitter(x.shape[1], classes,
                                    where=f"{where}: the training rows (control labels)",
                                    device=device).update(x, y_control).eraser()
        if rows.has_held:
            assert rows.x_held is not None and rows.y_held is not None
            erased[key], control[key] = full, full_control
            for condition, eraser in (("concept", full), ("control", full_control)):
                rows_out += _guarantee_rows(concept.name, rows, condition, "all", x, y,
                                            rows.x_held, rows.y_held, eraser)
            continue
        # no held-out rows: one eraser per fold of groups; the erasers of all rows for groups
        # the concept does not hold
        erased[key] = fold_erasers(x, y, g, folds, seed, device=device)
        control[key] = fold_erasers(x, y, g, folds, seed, control=True, device=device)
        others[key], others_control[key] = full, full_control
        fold_of = grouped_folds(g, folds, seed, labels=y)
        for fold in range(folds):
            held = fold_of == fold
            first = g[held][0]
            for condition, fitted in (("concept", erased[key]), ("control", control[key])):
                rows_out += _guarantee_rows(concept.name, rows, condition, str(fold + 1),
                                            x[~held], y[~held], x[held], y[held],
                                            fitted[first])
        del x, rows
    table = pd.DataFrame(rows_out, columns=list(GUARANTEE_COLUMNS))
    return FittedConcept(
        ErasingTransform(erased, what=f"concept {concept.name}", others=others or None),
        ErasingTransform(control, what=f"control of {concept.name} (labels permuted, seed "
                         f"{seed})", others=others_control or None),
        table, tuple(notes))
