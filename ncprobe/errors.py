"""Exceptions raised by ncprobe.

Every error says what was wrong, where, and what to do about it. The CLI maps
each class to a stable exit code (see :mod:`ncprobe.cli`).
"""

from __future__ import annotations


class NcprobeError(Exception):
    """Base class of every error ncprobe raises on purpose."""

    exit_code = 1


class UsageError(NcprobeError, ValueError):
    """A bad option or argument: an unknown model, a language or layer the model lacks, an
    option that has no effect for this model. The CLI exits 2."""

    exit_code = 2


class OptionError(UsageError, TypeError):
    """A keyword option a function (``ncprobe.run``, ``compute`` ...) does not take, or a config
    object where it takes another: a :class:`UsageError` (exit 2) that is also the
    ``TypeError`` Python raises for an unexpected keyword argument."""


class DataError(NcprobeError):
    """A data file is missing, unreadable or holds a bad value.

    Attributes:
        file: the file (path relative to the data directory where possible).
        row: 1-based data row (the header is not counted), or ``None``.
        column: the column name, or ``None``.
    """

    exit_code = 3

    def __init__(self, message: str, *, file: str | None = None, row: int | None = None,
                 column: str | None = None, key: str | None = None) -> None:
        self.file, self.row, self.column, self.key = file, row, column, key
        self.reason = message
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.file:
            where.append(str(self.file))
        if self.row is not None:
            where.append(f"row {self.row}" + (f" ({self.key})" if self.key else ""))
        elif self.key:
            where.append(self.key)
        if self.column:
            where.append(f"column {self.column!r}")
        return (", ".join(where) + ": " if where else "") + self.reason


class DataErrors(DataError):
    """Several :class:`DataError` at once (what ``ncprobe data check`` collects)."""

    def __init__(self, errors: list[DataError]) -> None:
        self.errors = list(errors)
        head = "\n".join(f"  - {e}" for e in self.errors[:20])
        more = f"\n  ... and {len(self.errors) - 20} more" if len(self.errors) > 20 else ""
        super().__init__(f"{len(self.errors)} data error(s):\n{head}{more}")


class DownloadError(NcprobeError):
    """A file could not be fetched or did not verify."""

    exit_code = 4


class ModelUnavailableError(NcprobeError):
    """A model cannot be loaded here: weights, an optional package, a GPU or network missing.

    ``ncprobe reproduce`` skips such models with one line; other commands exit 5.
    """

    exit_code = 5


class MissingPackageError(NcprobeError):
    """An optional package that a command needs is not installed (``wordfreq`` for generated
    probes). Exits 5, as a model that cannot be loaded here; the message says what to install.

    Not a :class:`ModelUnavailableError`: no model is at fault, so ``ncprobe reproduce``
    stops instead of skipping every model for it.
    """

    exit_code = 5


class OutputError(NcprobeError):
    """An output cannot be written: a read-only file system (EROFS), a full disk (ENOSPC,
    EDQUOT), no permission (EACCES, EPERM), or a path that is not a usable directory.

    Attributes:
        path: the file or directory that could not be written.
    """

    exit_code = 6

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(f"{path}: {message}" if path else message)


class NoData(NcprobeError):
    """The results hold nothing that a figure or table shows (:mod:`ncprobe.ncimp.figures`; the
    report leaves such a figure out and says why)."""


class ErrorSink:
    """Where loaders report bad input: raise at once, or collect everything.

    Loaders call :meth:`error` for each problem. With ``collect=False`` (the
    default for loading) the first problem raises; ``ncprobe data check`` uses
    ``collect=True`` to list every problem, then raises :class:`DataErrors`.
    """

    def __init__(self, collect: bool = False) -> None:
        self.collect = collect
        self.errors: list[DataError] = []

    def error(self, message: str, **where) -> None:
        err = DataError(message, **where)
        if not self.collect:
            raise err
        self.errors.append(err)

    def raise_if_any(self) -> None:
        if self.errors:
            raise DataErrors(self.errors)
