"""What a cell of NCIMP's results is, and the two checks that keep runs apart: never one NC
of a cell twice (:func:`refuse_repeated_cells`), never two runs of different data together
(:func:`check_same_data`). Shared by :class:`~ncprobe.ncimp.results.Results` and
:mod:`ncprobe.ncimp.comparison`, neither of which the other needs to import for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from ..errors import UsageError
from ..results.store import data_read

if TYPE_CHECKING:
    from ..probes.base import ProbeResults

__all__ = ["CELL_KEYS", "check_same_data", "refuse_repeated_cells"]

#: A cell: the columns that say which statistic a row belongs to (besides the NC). Two runs
#: that hold rows of one cell are never joined (:meth:`Results.concat`).
CELL_KEYS: tuple[str, ...] = ("model", "lang", "space", "layers", "level", "context",
                              "measure")


def refuse_repeated_cells(measures: pd.DataFrame, what: str, advice: str) -> None:
    """Refuse per-NC measures that hold one NC of one cell more than once: the one check (and
    message) of :meth:`Results.check_one_run_per_cell`, :meth:`Results.wide` and the sides of
    :func:`~ncprobe.ncimp.comparison.compare`.

    Args:
        measures: rows of a ``measures`` table (the keys :data:`CELL_KEYS` it has, and ``nc``).
        what: what holds them, the subject of the message (``"these results"``).
        advice: what to do, the end of the message.

    Raises:
        UsageError: naming the first such NC and cell and how many rows repeat.
    """
    keys = [k for k in (*CELL_KEYS, "nc") if k in measures.columns]
    if measures.empty or "nc" not in keys:
        return
    twice = measures.duplicated(keys, keep=False)
    if not twice.any():
        return
    r = measures[twice].iloc[0]
    cell = ", ".join(f"{k} {r[k]}" for k in keys)
    raise UsageError(
        f"{what} hold the per-NC measures of one cell more than once ({cell}; "
        f"{int(twice.sum())} rows in all): two runs pooled as one, which would count these "
        f"NCs twice. {advice}")


def check_same_data(results: Sequence[ProbeResults], names: Sequence[str]) -> None:
    """Refuse NCIMP results computed from different data to be joined or compared: a data
    file that two of them read (``run.json``'s ``data_sources``: file -> git blob id) with
    different blob ids. Files that only one read (another language's) are no conflict.

    Args:
        results: the results to be shown or tested together.
        names: what each is called in the message (its results directory).

    Raises:
        UsageError: naming both results, each file whose blob ids differ (and which side's
            file differs from its pin, ``modified_data``), and what to do.
    """
    seen = [data_read(r.meta) for r in results]
    for j in range(len(results)):
        for i in range(j):
            (da, ma), (db, mb) = seen[i], seen[j]
            differ = [rel for rel in sorted(set(da) & set(db)) if da[rel] != db[rel]]
            if not differ:
                continue

            def side(rel: str, blob: str, modified: set[str]) -> str:
                return f"git blob {blob}" + (" (modified: differs from its pin)"
                                             if rel in modified else "")
            shown = "; ".join(f"{rel}: {side(rel, da[rel], ma)} in {names[i]}, "
                              f"{side(rel, db[rel], mb)} in {names[j]}" for rel in differ[:4])
            more = f" and {len(differ) - 4} more file(s)" if len(differ) > 4 else ""
            raise UsageError(
                f"{names[i]} and {names[j]} were computed from different data ({shown}{more}): "
                "their NCs may differ in gold score, contexts or probes, so ncprobe never "
                "puts them in one report or test. Compute both from the same files (the "
                "pinned data: without --accept-modified-data), report or compare them "
                "separately, or leave one out with --exclude DIR (Python: "
                "ncprobe.Results.load_many(..., exclude=[DIR]))")
