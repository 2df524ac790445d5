"""What a data directory holds: each file's status, the counts per language, and every
problem (``ncprobe data info``, as text or JSON)."""

from __future__ import annotations

import warnings
from pathlib import Path

from ..probes import probes
from . import sources
from .check import file_probe, file_problem, missing_extras


def data_summary(root: Path) -> dict:
    """What ``data info`` shows of the data directory ``root``, as JSON-ready values.

    Keys: ``data_dir``; ``files``, each pinned file's ``need``, ``status``
    (:func:`~ncprobe.data.sources.file_status`) and ``probe`` (the probe that reads it, or
    ``None``: :func:`~ncprobe.data.check.file_probe`) by its local path; then each probe's
    keys (:meth:`~ncprobe.probes.base.Probe.data_info`, the files as they are, modified ones
    included: their pins are in ``files``): ``languages`` of NCIMP
    (:meth:`~ncprobe.data.stimuli.Stimuli.describe` of every stimulus), ``idiolink``, the
    counts of each IdioLink split whose two files are present);
    ``notes`` of the loaders, and one per probe whose ``extra`` files are missing;
    ``warnings`` they gave;
    ``errors``, every problem: a file that differs from its pin, cannot be read, is no
    regular file (a directory, a link to nothing or a link loop) or is required and missing,
    a bad row (IdioLink's records included), a condition the stimuli do not cover. Nothing
    is raised for a data problem: it is listed.
    """
    pinned = sources.upstream_files()
    status = {f.local_path: sources.file_status(root, f) for f in pinned}
    files = {f.local_path: {"need": f.need, "status": status[f.local_path],
                            "probe": file_probe(f)}
             for f in pinned}
    errors = [f"{f.local_path}: {problem}" for f in pinned
              if (problem := file_problem(root, f, status[f.local_path])) is not None]
    extras = missing_extras(root, status)
    info: dict = {"data_dir": str(root), "files": files}
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for probe in probes():  # each probe's counts (NCIMP: "languages"; IdioLink: its splits)
            keys, found_notes, problems = probe.data_info(root)
            info.update(keys)
            notes += found_notes
            errors += problems
    return {**info, "notes": extras + notes, "warnings": [str(w.message) for w in caught],
            "errors": list(dict.fromkeys(errors))}
