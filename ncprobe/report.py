"""Write every figure and table of the study for a Results into one directory.

``write_report(results, out)`` saves figures 1-10 as ``figNN_<name>.png`` and
``.pdf`` and the tables as ``table_<name>.md`` and ``.tex``, plus a
``README.md`` index saying which models and languages made them. A figure or
table with nothing to show for these results (e.g. NC-level figures of a
sentence-level-only model) is left out and named in the index, never drawn empty.

Every figure and table is a :class:`~ncprobe.view.Spec` (:data:`ncprobe.plots.FIGURE_SPECS`,
:data:`ncprobe.tables.TABLE_SPECS`), built alike from one :class:`~ncprobe.view.View` of the
report's options: a new figure or table is a spec in one of those lists, not a branch here.

The output directory may hold other files: they are never deleted or overwritten.
Every file is written atomically, and its name and the SHA-256 of its content are
recorded in ``.ncprobe-report.json`` as it is written (before the file itself, so
an interrupted report leaves a manifest naming everything it wrote). A later report
into the same directory replaces or removes only files whose content is still what
ncprobe wrote: it refuses (before writing anything) when a file it would write
exists and is not ncprobe's, or was changed since; a changed file it no longer
writes is kept and named (a warning), never removed. The same command after an
interruption resumes: the files the first run wrote are recognised as ncprobe's.

That file-ownership part is shared with the other probes' reports (IdioLink's,
:mod:`ncprobe.retrieval.report`): :func:`check_report_dir` refuses a directory before any work,
:func:`write_owned` writes a report's files as ncprobe's own, and :func:`figure_bytes` saves a
figure in every format as every report does.
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import logging
import os
import re
import stat
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, NamedTuple, Sequence

from ._io import (
    UNWRITABLE_ERRNOS,
    atomic_write_bytes,
    check_can_write,
    dir_lock,
    file_sha256,
    output_error,
)
from ._version import VERSION as __version__
from .errors import NcprobeError, OutputError, UsageError
from .significance import CORRECTION_NAMES, check_correction
from .view import Spec, View

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import ProcessPoolExecutor

    from .results import Results
    from .schema import Correction

log = logging.getLogger(__name__)

#: Names of the files written into a report directory, kept for the next report.
MANIFEST = ".ncprobe-report.json"
# what a report of ncprobe <= 0.1 (no manifest) wrote, recognised by its README heading
_OLD_REPORT_RE = re.compile(r"^(fig\d\d_\w+\.\w+|table_\w+\.(md|tex)|README\.md)$")
#: The kinds of report, by the probe whose results they show (the manifest records it, key
#: ``report``): a report never replaces another kind's files without ``overwrite``.
REPORT_KINDS = {"ncimp": "NCIMP report", "idiolink": "retrieval report (IdioLink)"}
# the first line of each kind's index: the kind of a report whose manifest predates the key
_INDEX_HEADINGS = {"# ncprobe report\n": "ncimp", "# ncprobe retrieval report\n": "idiolink"}


def write_report(results: Results, out_dir, *, formats: Sequence[str] = ("png", "pdf"),
                 examples: Sequence[str] | None = None, dpi: int = 200,
                 jobs: int | FigureWorkers = 1, provenance: str | None = None,
                 space: str | None = None, level: str | None = None,
                 correct: Correction = "holm", intervals: bool = True,
                 progress: Callable[[str], None] | None = None,
                 overwrite: bool = False) -> list[Path]:
    """Save every figure and table of method §4 for ``results`` into ``out_dir``.

    When the results hold two or more single-layer views of some model (``--layers all``),
    the layer-wise figure (``fig11_layers``, :func:`ncprobe.plots.fig_layers`) and table
    (``table_layers``, :func:`ncprobe.tables.layers`) are written too: ncprobe's additions,
    not the study's.

    Args:
        correct: the multiple-comparison correction (``holm``, default; ``fdr_bh``; ``none``,
            the study's uncorrected marks) applied to the family of p-values each correlation
            table, and the correlogram (figure 10), shows: their "-" and blank cells follow
            the corrected p. Each table's caption and the index say which, over how many.
        intervals: correlation cells read ``rho [95% bootstrap interval]``; ``False``: rho
            alone (the compact form, ``--compact-tables``).
        space: the vector space of the figures (``raw`` or ``standardised``; ``None``: each
            figure's default, raw) and of the layer-wise figure and table.
        level: the level of figures 3-10 (``sent`` or ``nc``; ``None``: each figure's
            default, NC level) and of the layer-wise figure and table.
        jobs: processes that draw figures (this one included), or :class:`FigureWorkers`
            started earlier; workers are fresh processes (``spawn``) given this process's
            matplotlib settings, so the files are the same whatever ``jobs`` is. Never more
            processes than figures to draw or CPUs this process may use.
        provenance: a Markdown section that ends the index ``README.md``, after a blank
            line: how the files were made (``ncprobe reproduce`` gives
            :func:`reproduce_provenance`). It is part of the index, written with the rest
            while the directory is locked.
        progress: called with one line as each figure and table is written (``figure
            3/10: fig03_ratio``, ``table 2/9: table_means``; the CLI prints them on
            stderr); ``None``: nothing is said.
        overwrite: replace a report of another probe (a retrieval report) that ``out_dir``
            holds: its files are removed, and named in a logged warning.

    Returns:
        The files written, in order (the index ``README.md`` last).

    Raises:
        UsageError: a format that is not one of :data:`FORMATS`; ``out_dir`` is, or is inside,
            a results directory; it holds files that ncprobe did not write, or changed since,
            under names the report would write, or (without ``overwrite``) another probe's
            report (nothing is written); ``results`` hold one
            NC of one cell twice (two runs pooled: :meth:`~ncprobe.results.Results.concat`
            never joins them).
        OutputError: ``out_dir`` cannot be written (a read-only file system, a full disk, no
            permission); the message names the file.

    Files of an earlier report that this one no longer writes are removed when their content
    is still what ncprobe wrote, and otherwise kept and named in a logged warning.

    The figures are drawn without pyplot and with Agg: the caller's backend and pyplot's
    figures are left as they are (in Jupyter, nothing is shown).
    """
    # two runs of one cell pooled (tables joined by hand: Results.concat refuses them) would
    # count their NCs twice in every test and figure: refused before anything is written
    results.check_one_run_per_cell("the results to report")
    # a space or level the results lack, an unknown correction: refused before any work
    view = _view(results, space, level, correct=correct, intervals=intervals, ncs=examples)
    if not isinstance(jobs, FigureWorkers):
        check_out(Path(out_dir), formats, overwrite=overwrite)  # before any worker starts
        # never more processes than figures to draw
        with FigureWorkers(jobs, figures=len(_specs(view.layerwise)[0])) as workers:
            return write_report(results, out_dir, formats=formats, examples=examples,
                                dpi=dpi, jobs=workers, provenance=provenance, space=space,
                                level=level, correct=correct, intervals=intervals,
                                progress=progress, overwrite=overwrite)
    out = Path(out_dir)
    check_out(out, formats, overwrite=overwrite)
    workers = jobs
    return write_owned(
        out, _planned(formats, layerwise=view.layerwise),
        lambda put: _write(results, out, formats, dpi, workers, view, provenance=provenance,
                           put=put, progress=progress),
        possible=_planned(FORMATS, layerwise=True), kind="ncimp", overwrite=overwrite)


#: What :func:`write_owned` hands its writer: writes files (path -> content), each recorded
#: in the manifest before it is written.
Put = Callable[[dict[Path, bytes]], None]


def write_owned(out_dir, planned: Sequence[str], write: Callable[[Put], list[Path]], *,
                possible: Sequence[str] | None = None, kind: str = "ncimp",
                overwrite: bool = False) -> list[Path]:
    """Write a report's files into ``out_dir`` as ncprobe's own: the file-ownership part of
    every report (:func:`write_report`, and the other probes' reports).

    Creates ``out_dir``, locks it (two reports into one directory run one after the other),
    and refuses, before anything is written, a file under a ``planned`` name that ncprobe did
    not write or that was changed since (:data:`MANIFEST`). Temporary files that an
    interrupted report left are removed. ``write`` is then called with the function that
    writes files (atomically, each recorded with its SHA-256 in the manifest before it is
    written) and returns the files it wrote, in order. Last, the files of an earlier report
    that this one did not write are removed where their content is still ncprobe's, and kept
    and named in a logged warning where it was changed.

    A directory holding a report of another kind (another probe's: the manifest records
    each report's ``kind``) is refused unless ``overwrite``: this report would remove that
    one's files. With ``overwrite`` it is replaced, and a logged warning names the files
    removed.

    Args:
        out_dir: the report directory (checked beforehand with :func:`check_report_dir`).
        planned: every name the report may write here (figures left undrawn included).
        write: draws and writes the files through the function it is given.
        possible: every name a report of this kind may ever write (any format), whose
            temporary files are removed; ``None``: ``planned``.
        kind: the kind of report (:data:`REPORT_KINDS`: the probe whose results it shows).
        overwrite: replace a report of another kind.

    Returns:
        What ``write`` returned.

    Raises:
        UsageError: a file that ncprobe did not write, or that was changed since, under a
            planned name, or (without ``overwrite``) a report of another kind there
            (nothing is written); a file changed while the report ran.
        OutputError: the directory or a file cannot be written; the message names it.
    """
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _unwritable(e, out, "report directory") from None
    with dir_lock(out.resolve()):  # two reports into one directory: one after the other
        owned = _own_files(out)
        _refuse_other_report(out, owned, kind, overwrite)
        _refuse_foreign(out, list(planned), owned)
        _remove_leftovers(out, list(planned if possible is None else possible) + [MANIFEST])
        # written before every file
        journal = _Journal(out, owned.files, owned.listed, kind=kind)
        written = write(journal.put)
        kept = journal.finish({p.name for p in written}) + (owned.changed if owned.listed
                                                            else [])
    replaced = owned.kind if owned.kind not in (None, kind) and owned.files else None
    if replaced is not None:  # only with overwrite (_refuse_other_report)
        gone = journal.removed
        log.warning("%s: replaced the %s that was there (overwrite): %s", out,
                    REPORT_KINDS.get(replaced, f"{replaced} report"),
                    f"removed {len(gone)} of its file(s): {', '.join(gone)}" if gone else
                    "its files were all replaced by this report's")
    if kept:
        log.warning("%s: kept %d file(s) that an earlier report wrote and that were changed "
                    "since (%s): ncprobe neither replaces nor removes them, and no longer "
                    "counts them as its own; remove them by hand if they are not needed",
                    out, len(kept), ", ".join(sorted(kept)))
    return written


def reproduce_provenance(models: Sequence[str], langs: Sequence[str],
                         skipped: Sequence[tuple[str, str, str]] = (),
                         missing: Sequence[str] = ()) -> str:
    """The index section of a report that ``ncprobe reproduce`` wrote (for
    ``write_report(provenance=...)``).

    Args:
        models: the models that ran, in order (the command given names them).
        langs: the languages asked for.
        skipped: ``(model, lang, why)`` of each run that could not run here.
        missing: the study's models that are not in the files.
    """
    text = ("## How these files were made\n\n"
            f"`ncprobe reproduce --models {','.join(models)} --langs {','.join(langs)}` "
            f"(ncprobe {__version__}).\n")
    if skipped:
        text += "\nSkipped here:\n\n" + "".join(f"- {model} ({lang}): {why}\n"
                                               for model, lang, why in skipped)
    if missing:
        text += (f"\nThe study's own models ({', '.join(missing)}) are not in these files: they "
                 "need their weights (downloads, a GPU for llama2, an API key for openai; see "
                 "`ncprobe models`). Run `ncprobe reproduce` where they are available to add "
                 "their panels.\n")
    return text


#: The figure formats a report writes (``--format``): matplotlib's, less ``pgf`` (it needs a
#: LaTeX installation) and ``raw``/``rgba`` (pixels without a header: no viewer opens them).
FORMATS = ("png", "pdf", "svg", "svgz", "eps", "ps", "jpg", "jpeg", "tif", "tiff", "webp")


def check_formats(formats: Sequence[str] | str) -> tuple[str, ...]:
    """The figure formats of ``formats`` (a sequence, or a comma list as ``--format`` takes),
    checked before any drawing.

    Raises:
        UsageError: no format, an empty one, one given twice, or one that is not in
            :data:`FORMATS` (a path such as ``../x`` included); the message names ``--format``
            and the formats allowed.
    """
    given = tuple(formats.split(",")) if isinstance(formats, str) else tuple(formats)
    allowed = f"give a comma list of {', '.join(FORMATS)} (default: png,pdf)"
    if not given:
        raise UsageError(f"--format: no figure format given; {allowed}")
    for fmt in given:
        if not isinstance(fmt, str) or fmt not in FORMATS:
            what = "an empty format" if fmt == "" else f"{fmt!r} is not a figure format"
            raise UsageError(f"--format {','.join(map(str, given))}: {what}; {allowed}")
    twice = sorted({fmt for fmt in given if given.count(fmt) > 1})
    if twice:
        raise UsageError(f"--format {','.join(given)}: {', '.join(twice)} given twice; "
                         "give each format once")
    return given


def check_out(out_dir, formats: Sequence[str] = ("png", "pdf"), *,
              overwrite: bool = False) -> None:
    """Refuse, before any work, an output directory that :func:`write_report` would refuse
    (``overwrite``: as its own).

    Raises:
        UsageError: a format that is not one (:func:`check_formats`); ``out_dir`` is a file,
            is or is inside a results directory (one holding ``run.json``: a report there
            would stop ``ncprobe compute`` from writing it again), or holds files that
            ncprobe did not write (or that were changed since) under names the report
            would write, or (without ``overwrite``) another probe's report.
        OutputError: ``out_dir``, or the directory it would be made in, cannot be written
            (a read-only file system, no permission).
    """
    check_formats(formats)
    check_report_dir(out_dir, lambda: _planned(formats), kind="ncimp", overwrite=overwrite)


def check_report_dir(out_dir, planned: Callable[[], Sequence[str]], *, kind: str = "ncimp",
                     overwrite: bool = False) -> None:
    """Refuse, before any work, a report directory that :func:`write_owned` would refuse: the
    checks of :func:`check_out` that every report shares.

    Args:
        out_dir: the report directory (it need not exist).
        planned: returns every name the report may write (called only when ``out_dir`` is
            a directory already).
        kind, overwrite: as :func:`write_owned`'s.

    Raises:
        UsageError: ``out_dir`` is a file, is or is inside a results directory (one holding
            ``run.json``), holds files that ncprobe did not write (or that were changed
            since) under planned names, or (without ``overwrite``) a report of another
            kind.
        OutputError: ``out_dir``, or the directory it would be made in, cannot be written.
    """
    from .results.store import enclosing_results

    out = Path(out_dir)
    if os.path.lexists(out) and not out.is_dir():
        raise UsageError(f"{out} exists and is not a directory: choose another --out")
    try:
        real = out.resolve()
    except (RuntimeError, OSError):  # a link loop on the way (Python < 3.13: RuntimeError)
        raise output_error(OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(out)), out,
                           what="report directory") from None
    above = enclosing_results(real, itself=True)
    if above is not None:
        where = "is" if above == real else f"is inside {above},"
        raise UsageError(f"--out {out} {where} a results directory (it holds run.json): a "
                         "report there would stop `ncprobe compute` from writing it again, "
                         "and nothing was written; choose an --out outside every results "
                         "directory")
    # a report directory that cannot be written: refused before any figure is drawn
    check_can_write(out, what="report directory")
    if out.is_dir():
        owned = _own_files(out)
        _refuse_other_report(out, owned, kind, overwrite)
        _refuse_foreign(out, list(planned()), owned)


def _unwritable(err: OSError, path: Path, what: str) -> OSError | OutputError:
    """The error to raise for ``err``, met while writing ``path``: an :class:`OutputError`
    naming it for a read-only or full disk or no permission; any other ``err`` as it is."""
    return output_error(err, path, what=what) if err.errno in UNWRITABLE_ERRNOS else err


def _specs(layerwise: bool) -> tuple[list[Spec], list[Spec]]:
    """The figures and the tables a report writes, in order, with the options each takes
    (:data:`ncprobe.plots.FIGURE_SPECS`, :data:`ncprobe.tables.TABLE_SPECS`): the layer-wise
    ones only when ``layerwise``.

    Which figures and tables, and the function that builds each, are those of
    :data:`ncprobe.plots.FIGURES` and :data:`~ncprobe.plots.ADDED_FIGURES`, and of
    :data:`ncprobe.tables.TABLES` and the added tables' specs: a caller (a test) that
    narrows or wraps those dicts narrows or wraps the report.
    """
    from . import plots, tables

    view = View(layerwise=layerwise)
    drawn = {**plots.FIGURES, **plots.ADDED_FIGURES}
    built = {**{s.name: s.build for s in tables.TABLE_SPECS if s.added}, **tables.TABLES}
    return ([replace(s, build=drawn[s.name]) for s in plots.FIGURE_SPECS
             if s.name in drawn and s.shown(view)],
            [replace(s, build=built[s.name]) for s in tables.TABLE_SPECS
             if s.name in built and s.shown(view)])


def _planned(formats: Sequence[str], *, layerwise: bool = False) -> list[str]:
    """Every name a report may write (figures left undrawn included); the layer-wise figure
    and table only when ``layerwise`` (the results have them, see :func:`_view`)."""
    figures, tables = _specs(layerwise)
    names = [f"fig{i:02d}_{spec.name}.{fmt}" for i, spec in enumerate(figures, start=1)
             for fmt in formats]
    names += [f"table_{spec.name}{suffix}" for spec in tables for suffix in (".md", ".tex")]
    return names + ["README.md"]


def _view(results: Results, space: str | None, level: str | None, *,
          correct: Correction = "holm", intervals: bool = True,
          ncs: Sequence[str] | None = None) -> View:
    """The view of a report for ``space`` and ``level`` (``None``: the figures' defaults,
    raw and NC level), the correction, the cell format and the example NCs; whether the
    results hold layer-wise views.

    Raises:
        UsageError: a space or level that is not one, or that the results do not hold; an
            unknown correction.
    """
    from .schema import LEVEL_LABELS, LEVELS, SPACES
    from .selection import layerwise_views

    for name, value, known in (("space", space, SPACES), ("level", level, LEVELS)):
        if value is None:
            continue
        if value not in known:
            raise UsageError(f"--{name} {value}: choose from {', '.join(known)}")
        held = set(results.measures[name].astype(str)) | set(
            results.correlations[name].astype(str))
        if value not in held:
            shown = {"space": lambda v: f"{v}-space values",
                     "level": lambda v: f"{LEVEL_LABELS.get(v, v)}-level values"}[name]
            raise UsageError(f"--{name} {value}: these results hold no {shown(value)} (they "
                             f"hold {', '.join(shown(v) for v in sorted(held)) or 'none'})"
                             + ("; compute with --standardise" if value == "standardised"
                                else ""))
    check_correction(correct)
    space, level = space or "raw", level or "nc"
    layerwise = bool(layerwise_views(results.correlations, space=space, level=level))
    return View(space=space, level=level, correct=correct, intervals=intervals,
                ncs=None if ncs is None else tuple(ncs), layerwise=layerwise)


class _Owned(NamedTuple):
    """What an earlier report left in a directory (see :func:`_own_files`)."""

    #: name -> SHA-256 of the files whose content is still what ncprobe wrote
    files: dict[str, str]
    #: files an earlier report wrote that were changed since (they are no longer ncprobe's)
    changed: list[str]
    #: whether a manifest names the files (a report older than the manifest has none: its
    #: files that this report does not write are left in place)
    listed: bool
    #: the kind of the report there (:data:`REPORT_KINDS`), when it says or its index shows
    kind: str | None = None


def _sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _regular(path: Path) -> os.stat_result | None:
    """``lstat`` of ``path`` when it is a regular file (not a link), else ``None``."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return st if stat.S_ISREG(st.st_mode) else None


def _own_files(out: Path) -> _Owned:
    """The files of ``out`` that an earlier ncprobe report wrote, as it wrote them (those
    may be replaced or removed).

    The manifest gives each file's SHA-256 (format 2): a file is ncprobe's while its content
    has that hash (or the hash of the content being written when a report was interrupted).
    A manifest of format 1 (an earlier ncprobe) gives names only, and was written after every
    file: a file changed after it (a later mtime) is not ncprobe's. A report older than the
    manifest is recognised by its index, and its files by their names, likewise by time.
    """
    path = out / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        when = os.stat(path).st_mtime_ns
        listed = manifest["files"]
        digests: dict[str, set[str] | None]
        if isinstance(listed, dict):  # format 2: name -> sha256
            digests = {n: {d} for n, d in listed.items()}
            for name, d in (manifest.get("writing") or {}).items():
                digests[name] = (digests.get(name) or set()) | {d}
        elif isinstance(listed, list):  # format 1: names, the manifest written last
            digests = {n: None for n in listed}
        else:
            raise TypeError(f"files is a {type(listed).__name__}")
    except FileNotFoundError:
        pass
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
        raise UsageError(f"{path} cannot be read ({e}): it says which files of {out} "
                         "ncprobe wrote; remove the directory by hand or choose another --out"
                         ) from None
    else:
        kind = manifest.get("report")
        if not isinstance(kind, str):  # a manifest of an earlier ncprobe: the index says
            kind = _index_kind(out) if "README.md" in digests else None
        return _verify(out, digests, when, listed=True)._replace(kind=kind)
    try:  # a report older than the manifest: recognised by its index, written last
        with open(out / "README.md", encoding="utf-8") as fh:
            head = fh.read(64)
        when = os.stat(out / "README.md").st_mtime_ns
    except (OSError, UnicodeDecodeError):
        return _Owned({}, [], False)
    if not head.startswith("# ncprobe report\n"):
        return _Owned({}, [], False)
    return _verify(out, {n: None for n in os.listdir(out) if _OLD_REPORT_RE.match(n)}, when,
                   listed=False)._replace(kind="ncimp")


def _index_kind(out: Path) -> str | None:
    """The kind of report whose index ``out/README.md`` is, by its first line; ``None``
    when it is none of ncprobe's."""
    try:
        with open(out / "README.md", encoding="utf-8") as fh:
            head = fh.readline()
    except (OSError, UnicodeDecodeError):
        return None
    return _INDEX_HEADINGS.get(head)


def _refuse_other_report(out: Path, owned: _Owned, kind: str, overwrite: bool) -> None:
    """Refuse (unless ``overwrite``) a directory holding a report of another kind than
    ``kind`` whose files are still ncprobe's: this report would remove them."""
    if overwrite or owned.kind in (None, kind) or not owned.files:
        return
    names = sorted(owned.files)
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    raise UsageError(
        f"{out} holds {_a(owned.kind)} ({len(names)} file(s) ncprobe wrote: {shown}); "
        f"{_a(kind)} written there would replace or remove them. Nothing was written: "
        "choose another --out, or pass --overwrite (Python: overwrite=True) to replace "
        "that report")


def _a(kind: str) -> str:
    """``an NCIMP report``, ``a retrieval report (IdioLink)``: a kind of report in words."""
    name = REPORT_KINDS.get(kind, f"{kind} report")
    return ("an " if name.startswith(("NCIMP", "a", "e", "i", "o", "u")) else "a ") + name


def _verify(out: Path, digests: dict, written_by: int, *, listed: bool) -> _Owned:
    """:class:`_Owned` of the files named in ``digests`` (name -> the hashes ncprobe wrote,
    or ``None``: files of an older report, ncprobe's when not modified after ``written_by``,
    the time in ns that report ended)."""
    files: dict[str, str] = {}
    changed = []
    for name, known in digests.items():
        if not isinstance(name, str) or "/" in name or os.sep in name or name in ("", ".",
                                                                                  ".."):
            continue
        st = _regular(out / name)
        if st is None:
            if os.path.lexists(out / name):
                changed.append(name)  # a directory or a link now: not ncprobe's
            continue
        digest = file_sha256(out / name)
        if (st.st_mtime_ns <= written_by) if known is None else (digest in known):
            files[name] = digest
        else:
            changed.append(name)
    return _Owned(files, sorted(changed), listed)


def _refuse_foreign(out: Path, planned: list[str], owned: _Owned) -> None:
    clash = [n for n in planned if os.path.lexists(out / n) and n not in owned.files]
    if clash:
        shown = ", ".join(n + (" (changed since ncprobe wrote it)" if n in owned.changed else "")
                          for n in clash[:6])
        shown += f" and {len(clash) - 6} more" if len(clash) > 6 else ""
        raise UsageError(f"{out} holds files that ncprobe did not write, or that were changed "
                         f"since, and a report would replace ({shown}); nothing was written: "
                         "choose another --out, or move those files")


def _remove_leftovers(out: Path, names: list[str]) -> None:
    """Remove the temporary files that an interrupted write of ``names`` left in ``out``
    (``.<name>.<8 characters>.tmp``, see :func:`ncprobe._io.atomic_open`): the directory is
    locked, so no other report is writing them."""
    patterns = [re.compile(rf"^\.{re.escape(name)}\.[a-z0-9_]{{8}}\.tmp$") for name in names]
    for entry in os.scandir(out):
        if entry.name.endswith(".tmp") and any(p.match(entry.name) for p in patterns) \
                and entry.is_file(follow_symlinks=False):
            try:
                os.unlink(entry.path)
            except FileNotFoundError:
                continue
            except OSError as e:
                raise _unwritable(e, Path(entry.path), "report directory") from None
            log.info("removed %s, left by an interrupted report", entry.path)


class _Journal:
    """The manifest of the report being written, kept on disk as it goes.

    Every file is recorded (name and SHA-256 of its content) before it is written, so a
    report interrupted at any point leaves a manifest naming every file it wrote, and the
    same command resumes instead of taking them for the user's.
    """

    def __init__(self, out: Path, files: dict[str, str], listed: bool = True, *,
                 kind: str = "ncimp") -> None:
        self.out = out
        self.files = dict(files)  # name -> sha256 of what is there
        self.writing: dict[str, str] = {}  # name -> sha256 of the content being written
        self.listed = listed
        self.kind = kind
        self.removed: list[str] = []  # files of earlier reports removed by finish()
        self._save()  # the directory is ncprobe's report from now on

    def _save(self) -> None:
        manifest: dict = {"format": 2, "ncprobe": __version__, "report": self.kind,
                          "files": dict(sorted(self.files.items()))}
        if self.writing:
            manifest["writing"] = dict(sorted(self.writing.items()))
        path = self.out / MANIFEST
        try:
            atomic_write_bytes(path, (json.dumps(manifest, indent=1) + "\n").encode("utf-8"))
        except OSError as e:
            raise _unwritable(e, path, "report manifest") from None

    def put(self, blobs: dict[Path, bytes]) -> None:
        """Write each file of ``blobs`` (path -> content), after recording them."""
        for path in blobs:  # changed while this report ran: never replaced
            if os.path.lexists(path) and (_regular(path) is None or file_sha256(path) not in (
                    self.files.get(path.name), self.writing.get(path.name))):
                raise UsageError(f"{path} was changed while the report was written; it was "
                                 "kept, and the report stopped: move it and run the command "
                                 "again")
        self.files.update(self.writing)
        self.writing = {path.name: _sha256_of(data) for path, data in blobs.items()}
        self._save()
        for path, data in blobs.items():
            try:
                atomic_write_bytes(path, data)
            except OSError as e:
                raise _unwritable(e, path, "report file") from None

    def finish(self, written: set[str]) -> list[str]:
        """Record the report as complete; remove the files of earlier reports that this one
        did not write and whose content is still ncprobe's (named in :attr:`removed`).
        Returns the names of those changed since (kept)."""
        self.files.update(self.writing)
        self.writing = {}
        kept = []
        for name in sorted(set(self.files) - written):
            digest = self.files.pop(name)
            path = self.out / name
            if not self.listed:  # a report older than the manifest: its other files stay
                continue
            if _regular(path) is None:
                if os.path.lexists(path):
                    kept.append(name)
                continue
            if file_sha256(path) != digest:
                kept.append(name)
                continue
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            except OSError as e:
                raise _unwritable(e, path, "report directory") from None
            self.removed.append(name)
        self._save()
        return kept


def _render(name: str, results: Results, formats: Sequence[str], dpi: int, rc: dict | None = None,
            options: dict | None = None) -> tuple[dict[str, bytes] | None, list[str]]:
    """Draw one figure and save it in every format: ``({format: bytes}, notes)``, or
    ``(None, [why])`` when the results hold nothing it shows.

    In the caller's process (``rc`` None) no matplotlib state is changed: the figure is
    not pyplot's (nothing to close), and is dropped when done.
    """
    if rc is not None:  # a worker process (ncprobe's own): the settings of the one that asked
        import matplotlib

        matplotlib.use("Agg")
        matplotlib.rcParams.update(rc)
    from . import plots

    try:
        draw = plots.FIGURES.get(name) or plots.ADDED_FIGURES[name]
        fig, notes = draw(results, return_notes=True, **(options or {}))
    except plots.NoData as e:
        return None, [str(e)]
    return figure_bytes(fig, formats, dpi), notes


def figure_bytes(fig, formats: Sequence[str], dpi: int) -> dict[str, bytes]:
    """``fig`` saved in every format of ``formats``: ``{format: bytes}``, as every report
    saves its figures (a tight bounding box; PDFs without a creation date, so that the same
    input gives the same files).

    The figure is laid out once, at ``dpi``, and that layout is kept for every format (its
    layout engine is removed): the figure is meant to be dropped afterwards.
    """
    # lay the figure out once, at the saved resolution, and keep that layout for every
    # format: each savefig would otherwise run the constrained layout twice (once more
    # for the tight bounding box). Vector formats, which matplotlib would lay out at
    # 72 dpi, get the positions of the raster ones
    fig.set_dpi(dpi)
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    blobs = {}
    for fmt in formats:
        # no creation date in PDFs: the same results give the same files
        meta = {"CreationDate": None} if fmt == "pdf" else None
        buf = io.BytesIO()
        fig.savefig(buf, format=fmt, dpi=dpi, bbox_inches="tight", metadata=meta)
        blobs[fmt] = buf.getvalue()
    return blobs


def _warm() -> None:
    """A worker's first task, run while its parent computes: import what drawing needs and
    draw one small figure, so that fonts and the renderers are loaded before the first
    real figure."""
    import matplotlib

    matplotlib.use("Agg")  # a worker: ncprobe's own process

    from . import plots

    with plots.style():
        fig = plots.new_figure(figsize=(1, 1), layout="constrained")
        ax = fig.add_subplot()
        ax.boxplot([[0.0, 1.0, 2.0]])
        ax.set_title("A$_{x}$")
        for fmt in ("png", "pdf"):
            fig.savefig(io.BytesIO(), format=fmt, bbox_inches="tight")


#: ``prctl`` option of Linux: the signal a process gets when its parent dies.
_PR_SET_PDEATHSIG = 1
#: Seconds between two looks at the parent, where the kernel cannot signal its death.
_PARENT_POLL_SECONDS = 0.5


def _worker_init(parent: int) -> None:
    """A figure worker's set-up: ignore Ctrl-C, and end when ``parent`` (the process that
    started it) ends.

    Ctrl-C reaches every process of the terminal: the caller handles it (it stops the
    workers after their current figure), so a worker ignores it. A caller killed outright
    (SIGKILL, the OOM killer) never stops its workers; left alone, they would wait for work
    forever. On Linux the kernel kills the worker when its parent dies (``prctl``
    ``PR_SET_PDEATHSIG``; strictly, when the thread that started the pool ends: the pool is
    started and used within one call); elsewhere (macOS, the BSDs) a daemon thread looks at
    the parent's process id twice a second and ends the worker when it changes (the worker
    was handed to another parent). Either way, a parent already gone when the worker starts
    ends it at once. The multiprocessing resource tracker needs nothing: it ends by itself
    once the parent and the workers are gone (its pipe closes).
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if not _kill_with_parent():
        import threading

        def watch() -> None:
            import time

            while os.getppid() == parent:
                time.sleep(_PARENT_POLL_SECONDS)
            os._exit(1)

        threading.Thread(target=watch, name="ncprobe-parent-watch", daemon=True).start()
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)


def _kill_with_parent() -> bool:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux); whether it could."""
    import sys

    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):  # no libc with prctl (e.g. a static build)
        return False


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the system has one, e.g.
    under SLURM or ``taskset``; else every CPU), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS, Windows: no affinity masks
        return max(1, os.cpu_count() or 1)


class FigureWorkers:
    """Worker processes that draw figures for :func:`write_report`.

    Started on entering the ``with`` block: each imports matplotlib and seaborn at once,
    so that a caller with other work first (``reproduce`` computes) overlaps the
    workers' start with it. ``jobs`` counts the calling process too: ``jobs - 1``
    workers are started, none for ``jobs=1``.

    Never more processes than there are figures to draw (a process more would only start,
    import matplotlib and wait: hundreds of MB each) or CPUs this process may use
    (:func:`usable_cpus`): :attr:`jobs` is ``jobs`` capped so, :attr:`asked` what was given.

    Args:
        jobs: processes that draw figures, this one included (1 or more).
        figures: the most figures the report will draw; ``None``: every figure a report
            may draw (the study's and ncprobe's additions).
    """

    def __init__(self, jobs: int, *, figures: int | None = None) -> None:
        if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
            raise UsageError(f"jobs={jobs!r}: give a whole number of processes, 1 or more")
        if figures is None:
            figures = len(_specs(True)[0])
        self.asked = jobs
        self.jobs = max(1, min(jobs, figures, usable_cpus()))
        if self.jobs < jobs:
            log.info("jobs=%d: %d process(es) draw the figures (%d figure(s) at most, %d "
                     "CPU(s) usable)", jobs, self.jobs, figures, usable_cpus())
        self.pool: ProcessPoolExecutor | None = None  # started by __enter__ for jobs > 1

    def __enter__(self) -> "FigureWorkers":
        if self.jobs > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(max_workers=self.jobs - 1,
                                            mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_worker_init,
                                            initargs=(os.getpid(),))
            for _ in range(self.jobs - 1):
                self.pool.submit(_warm)
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            # an exception (Ctrl-C included): queued figures are dropped, not drawn
            self.pool.shutdown(wait=True, cancel_futures=exc[0] is not None)
            self.pool = None


def _figures(results: Results, formats: Sequence[str], dpi: int, workers: FigureWorkers,
             options: dict[str, dict] | None = None):
    """``(name, (blobs, notes))`` for every figure, in figure order: the study's, then those
    of :data:`ncprobe.plots.ADDED_FIGURES` named in ``options`` (name -> the figure's keyword
    options; ``None``: the study's figures with their defaults).

    With workers, they take figures from the front of the list while this process
    takes them from the back, so no process waits on another while figures remain.
    """
    from . import plots

    options = options if options is not None else {name: {} for name in plots.FIGURES}
    names = list(plots.FIGURES) + [n for n in plots.ADDED_FIGURES if n in options]
    if workers.pool is None:
        for name in names:
            yield name, _render(name, results, formats, dpi, options=options[name])
        return
    import matplotlib

    rc = {k: v for k, v in matplotlib.rcParams.items()
          if k not in ("backend", "backend_fallback")}
    from concurrent.futures.process import BrokenProcessPool

    try:
        futures = {n: workers.pool.submit(_render, n, results, formats, dpi, rc, options[n])
                   for n in names}
        done: dict[str, tuple] = {}
        for name in reversed(names):
            if futures[name].cancel():  # not started by a worker: draw it here
                done[name] = _render(name, results, formats, dpi, options=options[name])
        for name in names:
            yield name, done[name] if name in done else futures[name].result()
    except BrokenProcessPool as e:
        raise NcprobeError(
            f"a figure worker process stopped ({e}). Killed for memory, or a script that "
            "calls write_report(jobs=...) without `if __name__ == \"__main__\":` around its "
            "main code (each worker imports the script again); use jobs=1, or add the guard"
        ) from None


def _write(results: Results, out: Path, formats: Sequence[str], dpi: int,
           jobs: FigureWorkers, view: View, *, provenance: str | None = None,
           put: Callable[[dict[Path, bytes]], None] | None = None,
           progress: Callable[[str], None] | None = None) -> list[Path]:
    """Draw and write the files of the report (``put`` writes them: path -> content; by
    default atomically, as they are); ``progress`` is told of each figure and table.

    Every figure and table is a :class:`~ncprobe.view.Spec`, built alike with the options
    it takes from ``view``."""
    from . import tables

    figure_specs, table_specs = _specs(view.layerwise)
    written: list[Path] = []
    if put is None:
        def put(blobs: dict[Path, bytes]) -> None:
            for path, data in blobs.items():
                atomic_write_bytes(path, data)
    say = progress or (lambda line: None)
    n_figures, n_tables = len(figure_specs), len(table_specs)
    index = [f"# ncprobe report\n\nMade by ncprobe {__version__} from these runs:\n"]
    index += _run_lines(results)
    index.append("\n## Figures\n")
    index.append(f"Vector space {view.space}; figures 3-10 at {view.level_text()} level.\n")
    options = {spec.name: spec.options(view) for spec in figure_specs}
    figures = _figures(results, formats, dpi, jobs, options=options)
    spec_of = {spec.name: spec for spec in figure_specs}
    for i, (name, (blobs, notes)) in enumerate(figures, start=1):
        spec = spec_of[name]
        stem = f"fig{i:02d}_{name}"
        if blobs is None:  # NoData: notes holds why
            index.append(f"- {stem}: not drawn: {notes[0]}")
            log.info("%s not drawn: %s", stem, notes[0])
            say(f"figure {i}/{n_figures}: {stem} not drawn ({notes[0]})")
            continue
        files = {out / f"{stem}.{fmt}": blobs[fmt] for fmt in formats}
        put(files)
        written += files
        say(f"figure {i}/{n_figures}: {stem}")
        index.append(f"- `{stem}`: {_first_paragraph(spec.build.__doc__ or name)}"
                     + (f" ({'; '.join(notes)})" if notes else "")
                     + (" Not a figure of the study: ncprobe's addition." if spec.added
                        else ""))
    index.append("\n## Tables\n")
    index.append(_correction_line(view.correct, view.intervals) + "\n")
    for i, spec in enumerate(table_specs, start=1):
        stem = f"table_{spec.name}"
        df = spec.build(results, **spec.options(view))
        if df.empty:
            index.append(f"- {stem}: empty for these results")
            say(f"table {i}/{n_tables}: {stem} empty for these results")
            continue
        caption = tables.caption(spec.name, df, where=(
            f"{view.level_text()} level, {view.space} space" if spec.says_view else None))
        files = {out / f"{stem}{suffix}": text.encode("utf-8") for suffix, text in (
            (".md", f"{caption}\n\n{tables.to_markdown(df)}"),
            (".tex", tables.to_latex(df, caption)))}
        put(files)
        written += files
        say(f"table {i}/{n_tables}: {stem}")
        missing = df.attrs.get("missing")
        index.append(f"- `{stem}`: {caption}"
                     + (f" (not in these results: {', '.join(missing)})" if missing else "")
                     + (". Not a table of the study: ncprobe's addition." if spec.added
                        else ""))
    if provenance:
        index.append("\n" + provenance.rstrip("\n"))
    readme = out / "README.md"
    put({readme: ("\n".join(index) + "\n").encode("utf-8")})
    written.append(readme)
    return written


def _run_lines(results: Results) -> list[str]:
    """The index's line for each run the results hold: model, language, contexts, layers and
    gold (and a warning where the results were edited)."""
    index: list[str] = []
    for m in results.meta:
        cfg = m["config"]
        if m.get("edited"):  # read with --accept-edited-results: said where it cannot be missed
            index.append(f"- **EDITED RESULTS**: {cfg['model']} ({cfg['lang']}): "
                         f"{', '.join(m['edited'])} edited since ncprobe wrote it; these "
                         "numbers are not what ncprobe computed")
        if m.get("data_sources", True):
            index.append(f"- {cfg['model']} ({cfg['lang']}): contexts "
                         f"{cfg.get('contexts', '(not recorded)')}, layers "
                         f"{cfg.get('layers') or 'default'}, gold "
                         f"{cfg.get('gold', '(not recorded)')}")
            continue
        # a user's own stimuli (load_pairs): their languages and contexts, their gold
        cos = results.cosines
        mine = cos[cos["model"] == m.get("model_name", cfg["model"])]
        langs = ", ".join(sorted(map(str, set(mine["lang"])))) or "?"
        ctxs = ",".join(sorted(map(str, set(mine["context"])))) or "?"
        index.append(f"- {cfg['model']} (loaded for {cfg['lang']}) on your own stimuli: "
                     f"languages {langs}, contexts {ctxs}, layers "
                     f"{cfg.get('layers') or 'default'}, gold: the comp scores given")
    return index


def _correction_line(correct: str, intervals: bool) -> str:
    """The index's sentence on the multiple-comparison correction and the cell format."""
    how = ("not corrected for multiple comparisons (as in the study)" if correct == "none"
           else f"{CORRECTION_NAMES[correct]} (`--correct {correct}`) across the cells "
           "of each table, and across the pairs of the correlogram (figure 10)")
    cells = ("rho [95% bootstrap interval]" if intervals else
             "rho alone (`--compact-tables`; the intervals are in the results' correlations "
             "table)")
    return (f"Multiple comparisons: the \"-\" cells of the correlation tables and the blank "
            f"cells of the correlogram mark p > 0.05, {how}; each caption gives the number "
            f"of tests. Significant correlation cells: {cells}.")


def _first_paragraph(doc: str) -> str:
    import re

    text = " ".join(doc.strip().split("\n\n")[0].split())
    # written for readers of the report: no reST roles or double backticks
    return re.sub(r"``([^`]+)``", r"\1", re.sub(r":\w+:`~?([^`]+)`", r"\1", text))
