"""``ncprobe data check``: validate every file of the data directory, reporting every problem."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..errors import DataError, DataErrors, ErrorSink, UsageError
from ..schema import PROBE_TASKS
from .coverage import check_coverage
from .ncimp import load_stimuli
from .ncimp.layout import NAT_FILE, NEUTRAL_FILE
from .reading import RESTORE, LoadContext
from .sources import UpstreamFile, file_status, resolve_data_dir, upstream_files

#: Tag columns known to be wrong upstream (SCHEMA section 7.7): the article was dropped
#: from the sentence but the tag kept its entry. Not read by ncprobe; reported, not failed.
KNOWN_BAD_TAGS = re.compile(r"^only head synonym alt\d+_tag$")


#: What each probe's command is, for the messages about its missing files.
_COMMAND_OF_PROBE = {"ncimp": "ncprobe compute", "idiolink": "ncprobe retrieve"}


def file_probe(f: UpstreamFile) -> str | None:
    """The probe (:data:`~ncprobe.schema.PROBE_TASKS`) that reads the pinned file ``f``, or
    ``None`` for a file no probe reads (pinned ``extra`` for completeness, or for a probe to
    come: SemanticQA's and AStitch's files).

    The NCIMP files (``required`` and ``optional``) are ``ncimp``'s; IdioLink's queries and
    documents of every split are ``idiolink``'s (its other files are read by nothing).
    """
    if f.need in ("required", "optional"):
        return "ncimp"
    from .idiolink import DOCUMENTS_FILE, QUERIES_FILE, SPLITS

    if f.local_path in {t.format(split=s) for s in SPLITS
                        for t in (QUERIES_FILE, DOCUMENTS_FILE)}:
        return "idiolink"
    return None


def check_probes(probes: str | Iterable[str]) -> tuple[str, ...]:
    """``probes`` (names, or a comma list) as probes of :data:`~ncprobe.schema.PROBE_TASKS`.

    Raises:
        UsageError: an unknown probe, or none.
    """
    names = [p.strip() for p in (probes.split(",") if isinstance(probes, str) else probes)]
    bad = [p for p in names if p not in PROBE_TASKS]
    if bad or not names:
        raise UsageError(f"unknown probe {', '.join(map(repr, bad or names))}; the probes are "
                         f"{', '.join(PROBE_TASKS)}")
    return tuple(p for p in PROBE_TASKS if p in names)


def file_problem(root: Path, f: UpstreamFile, status: str, *,
                 required: bool = False) -> str | None:
    """What is wrong with the pinned file ``f`` of status ``status``
    (:func:`~ncprobe.data.sources.file_status`) and what to do, or ``None`` when nothing is.

    A file that differs from its pin, cannot be read, is no regular file (a directory, a
    FIFO) or is a symbolic link to nothing (or a loop) is always a problem, whatever its
    ``need``; a missing one only when it is ``required`` (or ``required`` is given: the
    files of a probe asked for).
    """
    if status == "mismatch":
        return (f"content differs from the pinned upstream file (git blob {f.git_blob_sha1}); "
                + RESTORE)
    if status == "unreadable":
        return "cannot be read (no read permission?); make it readable, or " + RESTORE
    path = root / f.local_path
    if status == "not-file":
        kind = "a directory" if path.is_dir() else "a FIFO, a socket or a device"
        return (f"is {kind}, not the pinned file; move it out of the way (ncprobe never deletes "
                "it), then `ncprobe data download` fetches the file")
    if status == "bad-link":
        try:
            os.stat(path)
            why = "a symbolic link that leads to no file"
        except FileNotFoundError:
            why = f"a symbolic link to {_link_target(path)}, which does not exist"
        except OSError:
            why = "a symbolic-link loop"
        return (f"is {why}; remove the link, or run `ncprobe data download`, which fetches the "
                "file in its place")
    if status == "missing" and (required or f.need == "required"):
        probe = file_probe(f)
        needed = (f" ({probe} needs it: `{_COMMAND_OF_PROBE[probe]}`)"
                  if f.need != "required" and probe in _COMMAND_OF_PROBE else "")
        return f"missing{needed}; run `ncprobe data download`"
    return None


def _link_target(path: Path) -> str:
    """Where the first link of ``path`` leads (as written in the link), for messages."""
    try:
        return repr(os.readlink(path))
    except OSError:  # a folder of the path is the link
        return "its target"


def missing_extras(root: Path, statuses: dict[str, str]) -> list[str]:
    """One line per probe whose ``extra`` files are missing (a note of ``data check`` and
    ``data info``: not an error unless the probe is asked for), naming the files."""
    by_probe: dict[str | None, list[str]] = {}
    for f in upstream_files():
        if f.need == "extra" and statuses.get(f.local_path) == "missing":
            by_probe.setdefault(file_probe(f), []).append(f.local_path)
    lines = []
    for probe, paths in by_probe.items():
        if probe is None:
            who = "read by no probe yet"
        else:
            who = (f"the {probe} probe needs them (`{_COMMAND_OF_PROBE[probe]}`; `ncprobe data "
                   f"check --probe {probe}` fails without them)")
        lines.append(f"{len(paths)} extra file(s) missing in {root}, {who}; `ncprobe data "
                     f"download` fetches them: {', '.join(paths)}")
    return lines


@dataclass
class CheckReport:
    files: dict[str, str] = field(default_factory=dict)
    errors: list[DataError] = field(default_factory=list)
    tolerated: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def check(data_dir: str | Path | None = None,
          probes: str | Iterable[str] | None = None) -> CheckReport:
    """Verify every pinned file, parse every tag column, load every stimulus, check coverage.

    The scores xlsx, which ``compute`` does not read, is parsed and cross-checked against
    the NCTTI scores here (its disagreements are notes; a value that is no score is an error).

    Every problem is listed, not only the first: a file that differs from its pin is
    reported and still parsed (so its bad rows are named too), a file that cannot be
    read or parsed is reported and the other files are checked all the same. A pinned file
    that is present but no regular readable file (a directory, a link to nothing or a link
    loop) is an error whatever its ``need`` (:func:`file_problem`).

    Args:
        data_dir: the data directory (default: :func:`~ncprobe.data.sources.resolve_data_dir`).
        probes: ``None``: every pinned file; a missing ``extra`` file is a note naming the
            probe that needs it. Probes (:data:`~ncprobe.schema.PROBE_TASKS`, or a comma
            list): only the files those probes read (:func:`file_probe`), each of them
            required.

    Returns a report; ``report.errors`` lists each bad file, row and column.

    Raises:
        UsageError: an unknown probe.
    """
    root = resolve_data_dir(data_dir)
    wanted = check_probes(probes) if probes is not None else None
    report = CheckReport()
    for f in upstream_files():
        if wanted is not None and file_probe(f) not in wanted:
            continue
        status = file_status(root, f)
        report.files[f.local_path] = status
        why = file_problem(root, f, status, required=wanted is not None
                           and f.need != "optional")
        if why is not None:
            report.errors.append(DataError(why, file=f.local_path))
    if wanted is None:
        report.notes += missing_extras(root, report.files)
    reported = {e.file for e in report.errors}
    found = _parse_ncimp(root, report) if wanted is None or "ncimp" in wanted else []
    if wanted is None or "idiolink" in wanted:
        # IdioLink (retrieval probe): the files of every split present, parsed and validated
        from .idiolink import check_idiolink

        idiolink_errors, idiolink_notes = check_idiolink(root)
        found.extend(idiolink_errors)
        report.notes += idiolink_notes
    seen = {str(e) for e in report.errors}
    for problem in found:
        # a missing or unreadable file is already listed once, by its pin status
        again = _relative(problem.file, root) in reported and problem.reason.startswith(
            ("file not found", "cannot be read"))
        if not again and str(problem) not in seen:
            seen.add(str(problem))
            report.errors.append(problem)
    return report


def _parse_ncimp(root: Path, report: CheckReport) -> list[DataError]:
    """Parse every NCIMP file present (tags, stimuli of every context, NCS); the problems
    found (the loader's notes go to ``report``)."""
    # the pins are checked above; here every file is parsed whatever its content
    ctx = LoadContext(root, ErrorSink(collect=True), accept_modified=True)
    for lang in ("en", "pt"):
        rels = [NEUTRAL_FILE.format(LANG=lang.upper())] + [
            NAT_FILE.format(LANG=lang.upper(), k=k) for k in (1, 2, 3)]
        for rel in rels:
            if ctx.exists(rel):
                _check_tags(rel, ctx, report)
    found = list(ctx.sink.errors)
    try:
        stim = load_stimuli("all", contexts="all", probes="all", wordssyn="all", data_dir=root,
                            collect=True, accept_modified=True, cross_check=True)
        report.notes += [n for n in stim.notes if not n.startswith("MODIFIED DATA")]
        check_coverage(stim, contexts="all", probes="all")
    except DataErrors as errs:
        found.extend(errs.errors)
    except DataError as err:
        found.append(err)
    try:  # the NCS files (context ncs) as released: their P_Rand is generated, not read
        ncs = load_stimuli("all", contexts="ncs", probes="syn,comp,wordssyn", data_dir=root,
                           collect=True, accept_modified=True)
        report.notes += [n for n in ncs.notes if n not in report.notes
                         and not n.startswith("MODIFIED DATA")]
    except DataErrors as errs:
        found.extend(errs.errors)
    except DataError as err:
        found.append(err)
    return found


def _relative(file: str | None, root: Path) -> str | None:
    if file is None:
        return None
    try:
        return Path(file).relative_to(root).as_posix()
    except ValueError:
        return file


def _check_tags(rel: str, ctx: LoadContext, report: CheckReport) -> None:
    df = ctx.table(rel)
    if df is None:
        return
    for tag_col in [c for c in df.columns if c.endswith("_tag")]:
        sent_col = tag_col[:-4]
        if sent_col not in df.columns:
            continue  # e.g. the neutral original's tag is 'original sentence_tag'
        known = bool(KNOWN_BAD_TAGS.match(tag_col))
        sink = ErrorSink(collect=True) if known else ctx.sink
        probe = LoadContext(ctx.data_dir, sink)
        for i, r in enumerate(df.records(), start=1):
            probe.tag_span(r[sent_col], r[tag_col], file=rel, row=i, column=tag_col,
                           key=r.get("compound"))
        if known and sink.errors:
            report.tolerated.append(f"{rel}: column {tag_col!r}: {len(sink.errors)} rows with a "
                                    "tag length that does not match the sentence (known upstream "
                                    "anomaly; column not used)")
