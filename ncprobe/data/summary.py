"""What a data directory holds: each file's status, the counts per language, and every
problem (``ncprobe data info``, as text or JSON)."""

from __future__ import annotations

import warnings
from pathlib import Path

from ..errors import DataError, DataErrors
from . import sources
from .coverage import check_coverage
from .ncimp import load_stimuli

#: What is wrong with a file of each status that is a problem, and what to do about it.
FILE_PROBLEMS = {
    "mismatch": "content differs from the pinned upstream file; run `ncprobe data download` "
                "to restore it",
    "missing": "required file missing; run `ncprobe data download`",
    "unreadable": "cannot be read (no read permission?); make it readable, or run `ncprobe "
                  "data download`",
}


def data_summary(root: Path) -> dict:
    """What ``data info`` shows of the data directory ``root``, as JSON-ready values.

    Keys: ``data_dir``; ``files``, each pinned file's ``need`` and ``status`` by its local
    path; ``languages``, :meth:`~ncprobe.data.stimuli.Stimuli.describe` of every stimulus
    there (the files as they are, modified ones included: their pins are in ``files``);
    ``notes`` of the loader; ``warnings`` it gave; ``idiolink``, the counts of each IdioLink
    split whose two files are present (:meth:`~ncprobe.data.idiolink.IdioLink.counts`);
    ``errors``, every problem: a file that differs from its pin, cannot be read or is
    required and missing, a bad row (IdioLink's records included), a condition the stimuli
    do not cover. Nothing is raised for a data problem: it is listed.
    """
    files = {f.local_path: {"need": f.need,
                            "status": sources.file_status(root, f)}
             for f in sources.upstream_files()}
    errors = [f"{path}: {FILE_PROBLEMS[f['status']]}" for path, f in files.items()
              if f["status"] in ("mismatch", "unreadable")
              or f["status"] == "missing" and f["need"] == "required"]
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
            "notes": [n for n in (stim.notes if stim is not None else [])
                      if not n.startswith("MODIFIED DATA")],
            "warnings": [str(w.message) for w in caught],
            "errors": list(dict.fromkeys(errors))}
