"""What a data directory holds: each file's status, the counts per language, and every
problem (``ncprobe data info``, as text or JSON)."""

from __future__ import annotations

import warnings
from pathlib import Path

from ..errors import DataError, DataErrors
from . import sources
from .check import file_probe, file_problem, missing_extras
from .coverage import check_coverage
from .ncimp import load_stimuli


def data_summary(root: Path) -> dict:
    """What ``data info`` shows of the data directory ``root``, as JSON-ready values.

    Keys: ``data_dir``; ``files``, each pinned file's ``need``, ``status``
    (:func:`~ncprobe.data.sources.file_status`) and ``probe`` (the probe that reads it, or
    ``None``: :func:`~ncprobe.data.check.file_probe`) by its local path; ``languages``,
    :meth:`~ncprobe.data.stimuli.Stimuli.describe` of every stimulus
    there (the files as they are, modified ones included: their pins are in ``files``);
    ``notes`` of the loader, and one per probe whose ``extra`` files are missing;
    ``warnings`` it gave; ``idiolink``, the counts of each IdioLink
    split whose two files are present (:meth:`~ncprobe.data.idiolink.IdioLink.counts`);
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
    stim = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            # the pins are reported above: count what is there, modified or not
            stim = load_stimuli("all", contexts="nat,neut", data_dir=root, collect=True,
                                accept_modified=True, cross_check=True)
            check_coverage(stim, contexts="nat,neut", probes="all")
        except DataErrors as e:
            errors += [str(x) for x in e.errors]
        except DataError as e:
            errors.append(str(e))
    from .idiolink import idiolink_counts  # the retrieval probe's data, when present

    idiolink, idiolink_errors = idiolink_counts(root)
    errors += [str(e) for e in idiolink_errors]
    return {"data_dir": str(root), "files": files,
            "languages": stim.describe() if stim is not None else {},
            "idiolink": idiolink,
            "notes": extras + [n for n in (stim.notes if stim is not None else [])
                               if not n.startswith("MODIFIED DATA")],
            "warnings": [str(w.message) for w in caught],
            "errors": list(dict.fromkeys(errors))}
