"""The Results container: the tidy tables of one or more runs with what made them, joined
without pooling, and their rows selected (the tables are described in :mod:`ncprobe.results`).

Reading and writing a results directory is :mod:`.store`'s, the text summary :mod:`.summary`'s,
the filtering of rows :mod:`.query`'s; the methods here hand over to them.

Tables (pandas DataFrames, one row per observation):

* ``cosines`` — one row per probe stimulus, level and layer view: ``model, lang,
  space, layers, level, context, nc, cls, gold, probe, variant, target, length,
  cosine`` (``length``: words of the original sentence; ``gold``: the NC's gold score,
  :data:`~ncprobe.schema.GOLD`).
* ``sentences`` — per sentence measures: ``... context (S1..Npl), nc, measure, value``.
* ``measures`` — per NC measures: ``... context (nat, neut, neut-pl), nc, cls,
  gold, measure, value``.
* ``correlations`` — Spearman with the gold score: ``... context, analysis
  (nc | overlap-filtered | sentence), measure, n, rho, p, significant, ci_low, ci_high``.
* ``distributions`` — mean, sd and bootstrap interval of every measure, for
  all NCs and per class I / PC / C.
* ``lexical_overlap`` — Spearman between naturalistic sentence length and the
  sentence-level Sim of each probe (the name is older than what it holds; it is kept
  so that results directories written before stay readable).
* ``rogue`` — top dimensions' contribution to the expected cosine.
* ``standardisation`` — Spearman between P_Syn cosines before and after z-scoring.
* ``ncs`` — the NCs: gold scores (``comp_token``: Eq. 1, ``comp_type``: the type-level
  score, ``gold``: the gold of the run), class, head, modifier, and whether the gold
  synonym shares a word with the NC (``syn_overlap``).

Results format 4 names the gold score's column ``gold``. A directory of formats 1-3 (written by
a development version of ncprobe) is refused with a message that says to compute it again.

The names of the tables, their columns and the values they hold are those of
:mod:`ncprobe.schema` (:data:`~ncprobe.schema.RESULT_TABLES`,
:data:`~ncprobe.schema.RESULT_COLUMNS`).

:meth:`Results.select` gives the rows of one table that match filters (``measures`` by
default, ``correlations`` with ``analysis=``); :meth:`Results.wide` the per-NC measures
with one column per measure.

``meta`` holds, per run, the RunConfig, the encoder fingerprint, package
versions, the git blob ids of the data files read, and notes (counts of
everything undefined or tolerated); right after ``compute`` also how that computation
went (:data:`RUN_LOG_KEYS`), which is not written.

A results directory is written as one unit (:meth:`Results.to_parquet`): into a
fresh temporary directory beside the target, which is then renamed into place.
Its ``run.json`` and every table (parquet schema metadata ``ncprobe.run_id``)
carry the same run id, a hash of the content: of each table's rows (its digest, kept in
``run.json``) and of the runs' metadata. It depends only on what determines the numbers
(data, config, model fingerprint, package versions, results format), never on how the
run went (:data:`RUN_LOG_KEYS`: how many items were encoded now, cache shards discarded),
so the same computation gives the same id and byte-identical files, with a cold cache or
a warm one. :meth:`Results.load` checks every table's columns and value types,
recomputes the run id and the SHA-256 of every file, and refuses a directory that was
edited since ncprobe wrote it, naming what differs (unless ``accept_edited=True``: then
every run's ``meta["edited"]`` names it and :meth:`Results.summary` says so first).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from .runs import NCIMP_LAYOUT, SELECT_FILTERS, WIDE_KEYS, ResultsData
from .summary import summary as text_summary

if TYPE_CHECKING:
    from ..schema import Correction

__all__ = ["NCIMP_LAYOUT", "SELECT_FILTERS", "WIDE_KEYS", "Results"]


class Results(ResultsData):
    """Everything one or more ``compute`` runs produced (the tables: see the module doc).

    NCIMP's results: the one results interface of every probe
    (:class:`~ncprobe.probes.base.ProbeResults`): its tables as data
    (:class:`~ncprobe.ncimp.runs.ResultsData`), and what is drawn, tested and printed from
    them (:meth:`report`, :meth:`compare`, :meth:`summary`)."""

    def report(self, out_dir: str | Path, **options: Any) -> list[Path]:
        """Write every figure and table of the study into ``out_dir``:
        :func:`ncprobe.ncimp.report.write_report` (its keywords)."""
        from .report import write_report

        return write_report(self, out_dir, **options)

    def compare(self, other: "Results | None" = None, **options: Any) -> pd.DataFrame:
        """Rho differences between these results and ``other`` (or two selections of
        these): :func:`ncprobe.ncimp.comparison.compare` (its keywords)."""
        from .comparison import compare

        return compare(self, other, **options)

    def summary(self, space: str | None = None, analysis: str | None = None,
                correct: Correction = "holm") -> str:
        """A compact text summary: per space, level and context, mean ± sd of every measure
        and its Spearman rho with the run's gold score, with the rho's 95% bootstrap interval.

        Args:
            space: ``raw`` or ``standardised``; ``None``: every space the run has (the
                standardised one with ``--standardise``).
            analysis: ``nc`` (rho over the NCs), ``overlap-filtered`` or ``sentence``;
                ``None``: ``nc``, plus the per-sentence correlations when the run has them
                (``--per-sentence``).
            correct: the multiple-comparison correction (``holm``, ``fdr_bh``, ``none``)
                applied to the family of every correlation printed; ``*`` marks a corrected
                p <= 0.05, and the footer says which correction and how many tests.

        The ratio ``Sim_R|Syn/Sim_R|WordsSyn`` (heavy-tailed) also gets its median and
        inter-quartile range over the NCs, from the ``measures`` table. A run computed on
        data files that differ from their pin (``--accept-modified-data``) is announced on
        the first lines, one per file, after results read although edited since ncprobe
        wrote them (``load(accept_edited=True)``: ``meta["edited"]``), one per run.
        """
        return text_summary(self, space=space, analysis=analysis, correct=correct)


