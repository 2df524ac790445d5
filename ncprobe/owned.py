"""The directories ncprobe owns: what it wrote there, under which temporary names, and how it
replaces, keeps, refuses and tidies files. One protocol for every writer of them.

ncprobe writes three kinds of directory, and never touches a file there that it did not write:

* **A report directory** (every probe's report), through :func:`write_owned`, checked
  beforehand by :func:`check_report_dir`. Every file is written atomically, and its name and the
  SHA-256 of its content are recorded in :data:`MANIFEST` as it is written (before the file
  itself, so an interrupted report leaves a manifest naming everything it wrote). A later
  report into the same directory replaces or removes only files whose content is still what
  ncprobe wrote: it refuses (before writing anything) when a file it would write exists and is
  not ncprobe's, or was changed since, or (unless ``overwrite``) when the directory holds a
  report of another kind (another probe's: the manifest records each report's kind). A changed
  file it no longer writes is kept and named (a warning), never removed. The same command after
  an interruption resumes: the files the first run wrote are recognised as ncprobe's.
* **A results directory** (:mod:`ncprobe.results.store`), marked by :data:`RESULTS_MARKER`:
  written whole into a locked temporary directory beside it (:func:`locked_temp_dir`), then
  renamed into place, the previous one first moved aside (:func:`aside_name`) and removed
  after. Nothing else is ever written inside a results directory (:func:`enclosing_results`).
* **The embedding cache** (:mod:`ncprobe.cache`), whose root and entries carry
  :data:`CACHEDIR_TAG` (:func:`cachedir_tag`, :func:`is_ncprobe_tag`).

**Temporary names.** Whatever ncprobe writes, a file or a directory, is first written beside
its final name under ``.<final name>.<8 characters>.tmp`` (:func:`temp_prefix` and
:data:`TEMP_SUFFIX`, given to :func:`tempfile.mkstemp` or :func:`tempfile.mkdtemp`, as
:func:`ncprobe._io.atomic_open` does) and renamed into place once complete. :func:`temp_re`
recognises those names; the next writer of the same names removes what an interrupted write
left, while it holds the directory's lock (:func:`remove_temp_files`, :func:`remove_temp_dirs`).

**Development versions.** A directory that a development version of ncprobe wrote, before its
first release (a report manifest of format 1 or without its kind, a report without a manifest),
is refused, never read: the message names the directory and says :data:`DEVELOPMENT`.

Locks are :func:`ncprobe._io.dir_lock`'s (``flock`` on the directory itself); the writers here
take them.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import logging
import os
import re
import stat
import tempfile
import uuid
from pathlib import Path
from typing import Callable, Iterable, NamedTuple, Sequence

from ._io import (
    UNWRITABLE_ERRNOS,
    LockBusy,
    atomic_write_bytes,
    check_can_write,
    chmod_like_open,
    dir_lock,
    file_sha256,
    output_error,
)
from ._version import VERSION
from .errors import OutputError, UsageError

log = logging.getLogger(__name__)

#: What the refusal of a directory of a development version of ncprobe says.
DEVELOPMENT = "written by a development version of ncprobe: run it again"

# ---------------------------------------------------------------------------------------------
# temporary names

#: The end of every temporary name (:func:`temp_prefix`).
TEMP_SUFFIX = ".tmp"
# the 8 characters tempfile.mkstemp and mkdtemp put between prefix and suffix (their alphabet)
_RANDOM = r"[a-z0-9_]{8}"


def temp_prefix(name: str) -> str:
    """The start of the temporary names of a write of ``name``: ``.<name>.`` (for
    :func:`tempfile.mkstemp` or :func:`tempfile.mkdtemp`, with :data:`TEMP_SUFFIX`)."""
    return f".{name}."


def temp_re(names: Iterable[str] = (), *, pattern: str | None = None) -> re.Pattern[str]:
    """The temporary names of writes of ``names`` (final names, taken literally) or of any
    final name that ``pattern`` (a regular expression, e.g. ``r"shard-[A-Za-z0-9_-]+\\.npz"``)
    matches whole: ``.<final name>.<8 characters>.tmp``.

    Raises:
        ValueError: neither names nor a pattern.
    """
    alternatives = [re.escape(n) for n in names] + ([pattern] if pattern is not None else [])
    if not alternatives:
        raise ValueError("temp_re: give the final names or a pattern of them")
    return re.compile(rf"^\.(?:{'|'.join(alternatives)})\.{_RANDOM}{re.escape(TEMP_SUFFIX)}$")


def aside_name(name: str) -> str:
    """A fresh name for the directory ``name`` moved aside while its replacement is renamed
    into place: ``.<name>.old-<12 hex digits>``."""
    return f".{name}.old-{uuid.uuid4().hex[:12]}"


def aside_re(name: str) -> re.Pattern[str]:
    """The names :func:`aside_name` gives ``name``."""
    return re.compile(rf"^\.{re.escape(name)}\.old-[0-9a-f]{{12}}$")


def locked_temp_dir(parent: Path, name: str, stack: contextlib.ExitStack) -> Path:
    """A fresh temporary directory for a write of ``parent/name``, locked (the lock is held
    until ``stack`` closes: no other writer takes it for a killed write's leftover) and given
    the mode ``mkdir`` would give under the umask."""
    for _ in range(10):
        tmp = Path(tempfile.mkdtemp(dir=parent, prefix=temp_prefix(name), suffix=TEMP_SUFFIX))
        try:
            stack.enter_context(dir_lock(tmp))
        except FileNotFoundError:
            # another writer took it for a killed write's leftover in the instant before it
            # was locked (it was empty and unlocked) and removed it: make another
            continue
        chmod_like_open(tmp, directory=True)
        return tmp
    raise OSError(errno.EAGAIN, f"{parent}: a temporary directory for {name} was removed "
                  "each time before it could be locked")


# ---------------------------------------------------------------------------------------------
# what interrupted writes left


def unwritable(err: OSError, path: Path, what: str) -> OSError | OutputError:
    """The error to raise for ``err``, met while writing ``path`` (a ``what``: ``report
    directory``...): an :class:`OutputError` naming it for a read-only or full disk or no
    permission; any other ``err`` as it is."""
    return output_error(err, path, what=what) if err.errno in UNWRITABLE_ERRNOS else err


def remove_temp_files(directory: Path, pattern: re.Pattern[str], *, what: str,
                      work: str = "write", logger: logging.Logger | None = None) -> None:
    """Remove the temporary files that interrupted writes left in ``directory``: regular files
    whose names ``pattern`` (:func:`temp_re`) matches. Call it holding the directory's lock, so
    that no other writer of those names is writing them.

    Args:
        what: the directory in words, for an error (``report directory``).
        work: what was interrupted, logged (``removed X, left by an interrupted <work>``).
        logger: where that is logged (the owner's logger; default this module's).

    Raises:
        OutputError: a file cannot be removed (read-only, no permission).
    """
    for entry in os.scandir(directory):
        if entry.name.endswith(TEMP_SUFFIX) and pattern.match(entry.name) \
                and entry.is_file(follow_symlinks=False):
            try:
                os.unlink(entry.path)
            except FileNotFoundError:
                continue
            except OSError as e:
                raise unwritable(e, Path(entry.path), what) from None
            (logger or log).info("removed %s, left by an interrupted %s", entry.path, work)


def holds_only(path: str | Path, allowed: Callable[[str], bool]) -> bool:
    """Whether the directory ``path`` holds nothing but regular files whose names ``allowed``
    accepts (or nothing)."""
    return all(c.is_file(follow_symlinks=False) and allowed(c.name) for c in os.scandir(path))


def remove_if_only(path: str | Path, allowed: Callable[[str], bool], *,
                   logger: logging.Logger | None = None) -> bool:
    """Remove the directory ``path`` a killed write left, file by file, when it holds nothing
    but files ``allowed`` accepts (:func:`holds_only`); else leave it, named in a warning.
    Whether it was removed."""
    logger = logger or log
    if not holds_only(path, allowed):
        logger.warning("left %s in place: it holds files ncprobe does not write there", path)
        return False
    for c in os.scandir(path):
        with contextlib.suppress(FileNotFoundError):  # another writer tidying it too
            os.unlink(c.path)
    os.rmdir(path)
    logger.info("removed %s, left by an interrupted write", path)
    return True


def remove_temp_dirs(parent: Path, name: str, allowed: Callable[[str], bool], *,
                     logger: logging.Logger | None = None) -> None:
    """Remove the temporary directories (:func:`locked_temp_dir`) that killed writes of
    ``parent/name`` left beside it: those not locked (a writer holds its lock from right after
    creating it until it is renamed into place, so an unlocked one is a killed write's) and
    holding nothing but files ``allowed`` accepts, empty or partly written. Others are left:
    being written now, or named in a warning."""
    pattern = temp_re([name])
    for entry in sorted(os.scandir(parent), key=lambda e: e.name):
        if not pattern.match(entry.name) or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            with dir_lock(entry.path, blocking=False):
                remove_if_only(entry.path, allowed, logger=logger)
        except (LockBusy, FileNotFoundError):
            continue  # being written now, or removed by another writer meanwhile


# ---------------------------------------------------------------------------------------------
# results directories and the cache: their markers


#: The file that makes a directory a results directory.
RESULTS_MARKER = "run.json"


def enclosing_results(path: str | Path, *, itself: bool = False) -> Path | None:
    """The results directory that ``path`` is inside: the nearest directory above it
    (``itself``: or ``path`` itself) that holds :data:`RESULTS_MARKER`, or ``None``.

    Anything written there would change that results directory (a directory ncprobe does
    not write there makes it foreign: never replaced again, and read as two by ``ncprobe
    report``): results (:func:`ncprobe.results.store.check_target`) and reports
    (:func:`check_report_dir`) refuse such a place. ``path`` need not exist; links are
    followed (where it would be written).
    """
    try:
        real = Path(path).expanduser().resolve()
    except (RuntimeError, OSError):  # a link loop: the writers name it themselves
        return None
    for above in ((real,) if itself else ()) + tuple(real.parents):
        if (above / RESULTS_MARKER).is_file():
            return above
    return None


#: The marker of a cache directory (https://bford.info/cachedir/): backup tools skip it.
CACHEDIR_TAG = "CACHEDIR.TAG"
_TAG_SIGNATURE = "Signature: 8a477f597d28d172789f06886806bc55"


def cachedir_tag(what: str, remove: str) -> str:
    """The content of ncprobe's :data:`CACHEDIR_TAG` of a directory that is ``what`` (``an
    ncprobe embedding cache``), saying how to ``remove`` it (``ncprobe cache clear``)."""
    return (f"{_TAG_SIGNATURE}\n# This directory is {what}, written by ncprobe.\n"
            f"# Remove it with `{remove}`; see https://bford.info/cachedir/\n")


def is_ncprobe_tag(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a :data:`CACHEDIR_TAG` that ncprobe wrote (:func:`cachedir_tag`):
    a small regular file, not a link, with the signature and ncprobe's name."""
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > 4096:
            return False
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return text.startswith(_TAG_SIGNATURE) and "ncprobe" in text


# ---------------------------------------------------------------------------------------------
# report directories

#: The manifest of a report directory: the files ncprobe wrote there, with their SHA-256.
MANIFEST = ".ncprobe-report.json"
#: The format of :data:`MANIFEST` (``files``: name -> SHA-256; ``report``: the kind).
MANIFEST_FORMAT = 2
# the index that every report writes, whose first line starts "# ncprobe "
_INDEX = "README.md"

#: What :func:`write_owned` hands its writer: writes files (path -> content), each recorded
#: in the manifest before it is written.
Put = Callable[[dict[Path, bytes]], None]

_LABELS: dict[str, str] = {}

#: The kind of the index of a report of several probes' results (each probe's report in a
#: subdirectory named by the probe): no probe's, a kind of its own.
INDEX_KIND = "probes"
#: :data:`INDEX_KIND` in words.
INDEX_LABEL = "index of several probes' reports"


def report_kind(kind: str, label: str) -> str:
    """Make the report kind ``kind`` (the name its manifest records: its probe's) known as
    ``label`` (``NCIMP report``), for the messages that name a report of that kind found
    where another kind is written: what a probe's report writer declares of its own report
    when it checks or writes a directory (:func:`check_report_dir`, :func:`write_owned`).
    Returns ``kind``."""
    _LABELS[kind] = label
    return kind


def kind_label(kind: str) -> str:
    """The label of the report kind ``kind``: as its report writer declared it in this
    process (:func:`report_kind`), else ``<kind> report`` (the kind is its probe's name).
    This module asks no probe registry: what names the probes is above it."""
    return _LABELS.get(kind, f"{kind} report")


_LABELS[INDEX_KIND] = INDEX_LABEL


class Owned(NamedTuple):
    """What an earlier report left in a directory (:func:`owned_files`)."""

    #: name -> SHA-256 of the files whose content is still what ncprobe wrote
    files: dict[str, str]
    #: files an earlier report wrote that were changed since (they are no longer ncprobe's)
    changed: list[str]
    #: the kind of the report there (its manifest's ``report``); ``None``: no manifest
    kind: str | None = None


def owned_files(out: Path) -> Owned:
    """The files of the report directory ``out`` that an earlier report wrote, as it wrote
    them (those may be replaced or removed).

    The manifest gives each file's SHA-256: a file is ncprobe's while its content has that
    hash (or the hash of the content being written when a report was interrupted).

    Raises:
        UsageError: a manifest that cannot be read, or that a development version of
            ncprobe wrote (format 1, or no kind of report).
    """
    path = out / MANIFEST
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
        digests, kind = _manifest(out, manifest)
    except FileNotFoundError:
        return Owned({}, [])
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as e:
        raise UsageError(f"{path} cannot be read ({e}): it says which files of {out} "
                         "ncprobe wrote; remove the directory by hand or choose another --out"
                         ) from None
    files, changed = _verify(out, digests)
    return Owned(files, changed, kind)


def _manifest(out: Path, manifest) -> tuple[dict[str, set[str]], str]:
    """The hashes ncprobe wrote, by name, and the kind of report, of a read manifest."""
    if not isinstance(manifest, dict):
        raise TypeError(f"it holds a {type(manifest).__name__}, not an object")
    fmt = manifest.get("format")
    if fmt == 1 or (fmt == MANIFEST_FORMAT and "report" not in manifest):
        what = f"format {fmt}" if fmt == 1 else "no kind of report"
        raise UsageError(_development_report(out, f"its {MANIFEST}: {what}"))
    if fmt != MANIFEST_FORMAT:
        raise ValueError(f"format {fmt!r}; this ncprobe writes format {MANIFEST_FORMAT}")
    listed, kind = manifest["files"], manifest["report"]
    if not isinstance(listed, dict) or not isinstance(kind, str):
        raise TypeError("'files' is no object of names, or 'report' no kind")
    digests = {n: {d} for n, d in listed.items()}
    for name, d in (manifest.get("writing") or {}).items():
        digests[name] = digests.get(name, set()) | {d}
    return digests, kind


def _development_report(out: Path, why: str) -> str:
    return (f"{out} holds a report {DEVELOPMENT} into another --out, or remove the "
            f"directory by hand ({why}); nothing was written")


def _regular(path: Path) -> bool:
    """Whether ``path`` is a regular file (not a link)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except (FileNotFoundError, NotADirectoryError):
        return False


def _verify(out: Path, digests: dict[str, set[str]]) -> tuple[dict[str, str], list[str]]:
    """The files named in ``digests`` (name -> the hashes ncprobe wrote) whose content has one
    of them (name -> its hash), and the others there (changed since, sorted)."""
    files: dict[str, str] = {}
    changed = []
    for name, known in digests.items():
        if not isinstance(name, str) or "/" in name or os.sep in name or name in ("", ".",
                                                                                  ".."):
            continue
        if not _regular(out / name):
            if os.path.lexists(out / name):
                changed.append(name)  # a directory or a link now: not ncprobe's
            continue
        digest = file_sha256(out / name)
        if digest in known:
            files[name] = digest
        else:
            changed.append(name)
    return files, sorted(changed)


def check_report_dir(out_dir, planned: Callable[[], Sequence[str]], *, kind: str, label: str,
                     overwrite: bool = False) -> None:
    """Refuse, before any work, a report directory that :func:`write_owned` would refuse.

    Args:
        out_dir: the report directory (it need not exist).
        planned: returns every name the report may write (called only when ``out_dir`` is
            a directory already).
        kind, label, overwrite: as :func:`write_owned`'s.

    Raises:
        UsageError: ``out_dir`` is a file, is or is inside a results directory (one holding
            :data:`RESULTS_MARKER`), holds files that ncprobe did not write (or that were
            changed since) under planned names, a report of a development version, or
            (without ``overwrite``) a report of another kind.
        OutputError: ``out_dir``, or the directory it would be made in, cannot be written.
    """
    report_kind(kind, label)
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
        owned = owned_files(out)
        _refuse_other_kind(out, owned, kind, overwrite)
        _refuse_foreign(out, list(planned()), owned)


def write_owned(out_dir, planned: Sequence[str], write: Callable[[Put], list[Path]], *,
                kind: str, label: str, possible: Sequence[str] | None = None,
                overwrite: bool = False, logger: logging.Logger | None = None) -> list[Path]:
    """Write a report's files into ``out_dir`` as ncprobe's own.

    Creates ``out_dir``, locks it (two reports into one directory run one after the other),
    and refuses, before anything is written, a file under a ``planned`` name that ncprobe did
    not write or that was changed since (:data:`MANIFEST`). Temporary files that an
    interrupted report left are removed. ``write`` is then called with the function that
    writes files (atomically, each recorded with its SHA-256 in the manifest before it is
    written) and returns the files it wrote, in order. Last, the files of an earlier report
    that this one did not write are removed where their content is still ncprobe's, and kept
    and named in a logged warning where it was changed.

    A directory holding a report of another kind (another probe's) is refused unless
    ``overwrite``: this report would remove that one's files. With ``overwrite`` it is
    replaced, and a logged warning names the files removed.

    Args:
        out_dir: the report directory (checked beforehand with :func:`check_report_dir`).
        planned: every name the report may write here (figures left undrawn included).
        write: draws and writes the files through the function it is given.
        kind: the kind of report, recorded in the manifest: the name of the probe whose
            results it shows.
        label: the kind in words, in messages (``NCIMP report``; :func:`report_kind`).
        possible: every name a report of this kind may ever write (any format), whose
            temporary files are removed; ``None``: ``planned``.
        overwrite: replace a report of another kind.
        logger: where the warnings go (the report's own logger; default this module's).

    Returns:
        What ``write`` returned.

    Raises:
        UsageError: a file that ncprobe did not write, or that was changed since, under a
            planned name, a report of a development version, or (without ``overwrite``) a
            report of another kind there (nothing is written); a file changed while the
            report ran.
        OutputError: the directory or a file cannot be written; the message names it.
    """
    report_kind(kind, label)
    logger = logger or log
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise unwritable(e, out, "report directory") from None
    with dir_lock(out.resolve()):  # two reports into one directory: one after the other
        owned = owned_files(out)
        _refuse_other_kind(out, owned, kind, overwrite)
        _refuse_foreign(out, list(planned), owned)
        remove_temp_files(out, temp_re([*(planned if possible is None else possible), MANIFEST]),
                          what="report directory", work="report", logger=logger)
        journal = _Journal(out, owned.files, kind)  # written before every file
        written = write(journal.put)
        kept = journal.finish({p.name for p in written}) + owned.changed
    if owned.kind not in (None, kind) and owned.files:  # only with overwrite
        gone = journal.removed
        logger.warning("%s: replaced the %s that was there (overwrite): %s", out,
                       kind_label(str(owned.kind)),
                       f"removed {len(gone)} of its file(s): {', '.join(gone)}" if gone else
                       "its files were all replaced by this report's")
    if kept:
        logger.warning("%s: kept %d file(s) that an earlier report wrote and that were changed "
                       "since (%s): ncprobe neither replaces nor removes them, and no longer "
                       "counts them as its own; remove them by hand if they are not needed",
                       out, len(kept), ", ".join(sorted(kept)))
    return written


def _refuse_other_kind(out: Path, owned: Owned, kind: str, overwrite: bool) -> None:
    """Refuse (unless ``overwrite``) a directory holding a report of another kind than
    ``kind`` whose files are still ncprobe's: this report would remove them."""
    if overwrite or owned.kind in (None, kind) or not owned.files:
        return
    names = sorted(owned.files)
    shown = ", ".join(names[:6]) + (f" and {len(names) - 6} more" if len(names) > 6 else "")
    raise UsageError(
        f"{out} holds {_a(kind_label(str(owned.kind)))} ({len(names)} file(s) ncprobe wrote: "
        f"{shown}); {_a(kind_label(kind))} written there would replace or remove them. "
        "Nothing was written: choose another --out, or pass --overwrite (Python: "
        "overwrite=True) to replace that report")


def _a(label: str) -> str:
    """``label`` with its article: ``an NCIMP report``, ``a retrieval report (IdioLink)``
    (``an`` before a vowel, and before an initialism whose first letter's name starts with
    one)."""
    first = label.split(" ", 1)[0]
    vowel = label[:1].lower() in "aeiou" or (first.isupper() and first[:1] in "AEFHILMNORSX")
    return ("an " if vowel else "a ") + label


def _refuse_foreign(out: Path, planned: list[str], owned: Owned) -> None:
    """Refuse a directory holding, under a ``planned`` name, a file that is not ncprobe's
    (:func:`owned_files`)."""
    clash = [n for n in planned if os.path.lexists(out / n) and n not in owned.files]
    if not clash:
        return
    if owned.kind is None and _INDEX in clash and _is_ncprobe_index(out / _INDEX):
        raise UsageError(_development_report(out, f"no {MANIFEST}"))
    shown = ", ".join(n + (" (changed since ncprobe wrote it)" if n in owned.changed else "")
                      for n in clash[:6])
    shown += f" and {len(clash) - 6} more" if len(clash) > 6 else ""
    raise UsageError(f"{out} holds files that ncprobe did not write, or that were changed "
                     f"since, and a report would replace ({shown}); nothing was written: "
                     "choose another --out, or move those files")


def _is_ncprobe_index(path: Path) -> bool:
    """Whether ``path`` is a report index that ncprobe wrote (its first line)."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.readline().startswith("# ncprobe ")
    except (OSError, UnicodeDecodeError):
        return False


class _Journal:
    """The manifest of the report being written, kept on disk as it goes.

    Every file is recorded (name and SHA-256 of its content) before it is written, so a
    report interrupted at any point leaves a manifest naming every file it wrote, and the
    same command resumes instead of taking them for the user's.
    """

    def __init__(self, out: Path, files: dict[str, str], kind: str) -> None:
        self.out = out
        self.files = dict(files)  # name -> sha256 of what is there
        self.writing: dict[str, str] = {}  # name -> sha256 of the content being written
        self.kind = kind
        self.removed: list[str] = []  # files of earlier reports removed by finish()
        self._save()  # the directory is ncprobe's report from now on

    def _save(self) -> None:
        manifest: dict = {"format": MANIFEST_FORMAT, "ncprobe": VERSION, "report": self.kind,
                          "files": dict(sorted(self.files.items()))}
        if self.writing:
            manifest["writing"] = dict(sorted(self.writing.items()))
        path = self.out / MANIFEST
        try:
            atomic_write_bytes(path, (json.dumps(manifest, indent=1) + "\n").encode("utf-8"))
        except OSError as e:
            raise unwritable(e, path, "report manifest") from None

    def put(self, blobs: dict[Path, bytes]) -> None:
        """Write each file of ``blobs`` (path -> content), after recording them."""
        for path in blobs:  # changed while this report ran: never replaced
            if os.path.lexists(path) and (not _regular(path) or file_sha256(path) not in (
                    self.files.get(path.name), self.writing.get(path.name))):
                raise UsageError(f"{path} was changed while the report was written; it was "
                                 "kept, and the report stopped: move it and run the command "
                                 "again")
        self.files.update(self.writing)
        self.writing = {path.name: hashlib.sha256(data).hexdigest()
                        for path, data in blobs.items()}
        self._save()
        for path, data in blobs.items():
            try:
                atomic_write_bytes(path, data)
            except OSError as e:
                raise unwritable(e, path, "report file") from None

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
            if not _regular(path):
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
                raise unwritable(e, path, "report directory") from None
            self.removed.append(name)
        self._save()
        return kept
