"""What a probe declares as its headline metric (:meth:`Probe.headline
<ncprobe.probes.base.Probe.headline>`): the one number per model that ``ncprobe board``
(:mod:`ncprobe.board`) compares across models, with the data to resample it.

A :class:`Headline` names the metric and its direction, the probe's own unit (what its
intervals resample: NCIMP's compounds, NCC's items, AStitch's expressions, IdioLink's
idioms), and gives, per model, the rows the metric is computed from (one column ``unit``
naming each row's unit; the other columns are the probe's) with the function that computes
it from such rows. The board draws units, never rows, so a unit's rows stay together (a
cluster bootstrap where a unit holds several rows). Nothing here knows a probe.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

if TYPE_CHECKING:
    import pandas as pd

#: The column of a headline's rows that names each row's unit.
UNIT = "unit"


@dataclass(frozen=True)
class Headline:
    """A probe's headline metric over the models of its results.

    Attributes:
        probe: the probe's name (``ncimp``).
        title: the probe in words, in table headers (``NCIMP``).
        metric: the metric in words (``rho(Sim P_Syn, Comp)``, ``accuracy``).
        higher_is_better: the direction: ``True`` when a larger value is better.
        unit: what the probe's intervals resample, plural (``compounds``).
        rows: per model (the board's row name), the rows the metric is computed from: a
            DataFrame with the column :data:`UNIT`, and those ``statistic`` reads.
        statistic: the metric of a model's rows (any subset of them, with rows repeated as
            a resample repeats their unit); NaN where it is undefined.
        cell: which of the probe's cells the metric is read from, in words (the level,
            context, setting ...), per model where they differ.
        notes: what the reader should know of this headline, one line each.
    """

    probe: str
    title: str
    metric: str
    higher_is_better: bool
    unit: str
    rows: Mapping[str, "pd.DataFrame"]
    statistic: Callable[["pd.DataFrame"], float]
    cell: Mapping[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for model, df in self.rows.items():
            if UNIT not in df.columns:
                raise ValueError(f"headline of {self.probe}: the rows of {model} have no "
                                 f"{UNIT!r} column")


def model_rows(df: "pd.DataFrame", *, model: str, unit: str, columns: Sequence[str],
               lang: str | None = None, view: str | None = None
               ) -> tuple[dict[str, "pd.DataFrame"], dict[str, str]]:
    """A headline's rows from a probe's table ``df`` (already cut to the headline's cell): per
    model (the column ``model``; with ``lang``, each model and language, named ``model`` in
    English and ``model (lang)`` otherwise), the columns ``columns`` with the column ``unit``
    as :data:`UNIT`, of its first layer view (the column ``view``, when given: the run's
    default view comes first). Returns the rows and, per model, the view read (empty without
    ``view``)."""
    keys = [model] if lang is None else [model, lang]
    rows, views = {}, {}
    for key, part in df.groupby(keys, sort=False, observed=True):
        key = key if isinstance(key, tuple) else (key,)
        name = str(key[0]) if len(key) == 1 or str(key[1]) == "en" else f"{key[0]} ({key[1]})"
        views[name] = "" if view is None else str(part[view].iloc[0])
        if view is not None:
            part = part[part[view].astype(str) == views[name]]
        rows[name] = part.assign(**{UNIT: part[unit].astype(str)})[
            [UNIT, *columns]].reset_index(drop=True)
    return rows, views


def mean_of(column: str) -> Callable[["pd.DataFrame"], float]:
    """The statistic "mean of ``column``" over a headline's rows (NaN for none)."""
    def mean(rows: "pd.DataFrame") -> float:
        return float(rows[column].mean()) if len(rows) else float("nan")
    return mean
