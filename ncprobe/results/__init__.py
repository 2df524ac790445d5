"""Results directories of every probe: parquet tables and a verified ``run.json``, written
as one unit (:mod:`.store`). Each probe's results class (NCIMP's
:class:`~ncprobe.ncimp.results.Results`, ...) declares its :class:`~.store.Layout` and is
stored here; this package names no probe.
"""

from __future__ import annotations

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

__all__ = ["NOT_IDENTITY", "RESULTS_FORMAT", "RUN_ID_KEY", "RUN_LOG_KEYS", "TABLES",
           "check_target", "check_writable", "drop_excluded", "find_results", "inspect_dir",
           "run_identity"]
