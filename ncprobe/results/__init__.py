"""Results: the tidy tables of one or more runs, with what made them; parquet round-trip.

The package, one job per module:

* :mod:`.core` — the :class:`Results` container: its tables and runs, :meth:`Results.concat`
  (never two runs of one cell), the run id, :meth:`Results.load_many`;
* :mod:`.store` — results directories: parquet and ``run.json`` written as one unit, read
  back verified, and the safety of the directories written to;
* :mod:`.summary` — the text summary (:meth:`Results.summary`).

Rows are selected by :mod:`ncprobe.query`, the one engine that filters rows by column values,
strict (:meth:`Results.select`, :func:`~ncprobe.comparison.compare`) or lenient
(:func:`ncprobe.selection.select`): a leaf module outside this package, so that
:mod:`ncprobe.selection` uses it without running this package's ``__init__``.

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

from .cells import CELL_KEYS, check_same_data, refuse_repeated_cells
from .core import SELECT_FILTERS, WIDE_KEYS, Results
from .store import (
    NOT_IDENTITY,
    RESULTS_FORMAT,
    RUN_ID_KEY,
    RUN_LOG_KEYS,
    TABLES,
    check_target,
    check_writable,
    drop_excluded,
    find_results,
    inspect_dir,
    run_identity,
)

__all__ = ["CELL_KEYS", "NOT_IDENTITY", "RESULTS_FORMAT", "RUN_ID_KEY", "RUN_LOG_KEYS",
           "SELECT_FILTERS", "TABLES", "WIDE_KEYS", "Results", "check_same_data", "check_target",
           "check_writable", "drop_excluded", "find_results", "inspect_dir",
           "refuse_repeated_cells", "run_identity"]
