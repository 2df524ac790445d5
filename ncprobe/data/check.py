"""``ncprobe data check``: validate every file of the data directory, reporting every problem."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from ..errors import DataError
from ..probes import get_probe
from ..probes import probes as registered
from .reading import RESTORE
from .sources import UpstreamFile, file_status, not_a_file, resolve_data_dir, upstream_files


def file_probe(f: UpstreamFile) -> str | None:
    """The probe (:data:`ncprobe.probes.PROBES`) that reads the pinned file ``f``, or
    ``None`` for a file no probe reads (pinned ``extra`` for completeness, or for a probe to
    come): the first probe whose :meth:`~ncprobe.probes.base.Probe.reads` says so."""
    return next((p.name for p in registered() if p.reads(f)), None)


def check_probes(names: str | Iterable[str]) -> tuple[str, ...]:
    """``names`` (names, or a comma list) as probes of :data:`ncprobe.probes.PROBES`, in
    its order.

    Raises:
        UsageError: an unknown probe, or none.
    """
    return tuple(p.name for p in registered(names))


def _command(probe: str) -> str:
    """The command that runs ``probe``, for the messages about its missing files."""
    shorthand = get_probe(probe).shorthand
    return f"ncprobe {shorthand}" if shorthand else f"ncprobe run {probe}"


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
    if status in ("not-file", "bad-link"):
        return not_a_file(root / f.local_path) or f"is no regular file ({status}); " + RESTORE
    if status == "missing" and (required or f.need == "required"):
        probe = file_probe(f)
        needed = (f" ({probe} needs it: `{_command(probe)}`)"
                  if f.need != "required" and probe is not None else "")
        return f"missing{needed}; run `ncprobe data download`"
    return None


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
            who = (f"the {probe} probe needs them (`{_command(probe)}`; `ncprobe data "
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
            probe that needs it. Probes (:data:`ncprobe.probes.PROBES`, or a comma
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
    found: list[DataError] = []
    for probe in registered(wanted):
        # each probe parses and validates its files present (NCIMP: tags, stimuli of every
        # context, NCS; IdioLink: the records of every split)
        errors, notes, tolerated = probe.check_data(root)
        found.extend(errors)
        report.notes += notes
        report.tolerated += tolerated
    seen = {str(e) for e in report.errors}
    missing = {path for path, status in report.files.items() if status == "missing"}
    for problem in found:
        # a missing or unreadable file is already listed once, by its pin status; a missing
        # one its pin status does not require (an extra file of a probe not asked for) is a
        # note of missing_extras, not an error of the probe that would read it
        where = _relative(problem.file, root)
        again = (where in reported or where in missing) and (problem.reason.startswith(
            ("file not found", "cannot be read")) or (
                where is not None and problem.reason == not_a_file(root / where)))
        if not again and str(problem) not in seen:
            seen.add(str(problem))
            report.errors.append(problem)
    return report


def _relative(file: str | None, root: Path) -> str | None:
    if file is None:
        return None
    try:
        return Path(file).relative_to(root).as_posix()
    except ValueError:
        return file
