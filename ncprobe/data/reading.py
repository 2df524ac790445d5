"""Reading raw files: the load context, tables, tags and scores, with errors that say where.

Every data file goes through :func:`parse_rows` or :func:`parse_table` (or
:meth:`LoadContext.table`, which also verifies the file against its pin), so an unreadable
or malformed file is always a :class:`~ncprobe.errors.DataError` naming the file, the row
where there is one, and what to do, never a pandas or Unicode traceback.
"""

from __future__ import annotations

import ast
import csv
import io
import logging
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from .._io import git_blob_sha1
from ..errors import DataError, ErrorSink
from .sources import not_a_file, upstream_files

log = logging.getLogger(__name__)

#: What to do about a pinned NCIMP file that cannot be used as it is.
RESTORE = "run `ncprobe data download` to restore the pinned copy"


def pinned_blobs() -> dict[str, str]:
    """Path inside the data directory -> git blob id of its pinned upstream copy."""
    return {f.local_path: f.git_blob_sha1 for f in upstream_files()}


def parse_table(data: bytes, name: str, *, sep: str = ",", excel: bool = False,
                remedy: str = RESTORE) -> pd.DataFrame:
    """Parse a CSV/TSV (UTF-8) or xlsx file's bytes into a frame of strings.

    Every cell is a string (no NA parsing: an empty cell is ``""``). Blank lines are
    skipped, as pandas does.

    Args:
        data: the file's content.
        name: the file, as errors should name it.
        sep: the field separator of a text table.
        excel: parse as an xlsx workbook (first sheet) instead.
        remedy: what the user should do, appended to every error.

    Raises:
        DataError: the file is empty, not UTF-8 (with the line of the first bad byte), has a
            quoted field that is never closed, a row with more or fewer fields than the
            header (with the row), a repeated column name, no data row, or is not a
            readable workbook.
    """
    if excel:
        if not data:
            raise DataError(f"the file is empty (0 bytes); {remedy}", file=name)
        return _parse_excel(data, name, remedy)
    return parse_rows(data, name, sep=sep, remedy=remedy).to_frame()


def parse_rows(data: bytes, name: str, *, sep: str = ",", remedy: str = RESTORE) -> "Table":
    """Parse a CSV/TSV (UTF-8) file's bytes into a :class:`Table` of strings.

    What :func:`parse_table` does for a text table, without building a DataFrame: the
    loaders walk the rows one by one, and a frame (and ``to_dict("records")``) would cost
    more than the parsing itself.

    Raises:
        DataError: as :func:`parse_table`.
    """
    if not data:
        raise DataError(f"the file is empty (0 bytes); {remedy}", file=name)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise DataError(f"not UTF-8 text: byte 0x{data[e.start]:02x} on line {line} cannot be "
                        f"decoded (a file saved as Latin-1 or Windows-1252?); re-save it as "
                        f"UTF-8, or {remedy}", file=name) from None
    # The csv module rather than pandas: pandas fills the missing fields of a short row
    # (a file cut mid-row) with "" silently, and names neither file nor row in its errors;
    # csv gives each record's fields and line number, so both can be checked and named.
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=sep, strict=True)
    header: list[str] | None = None
    rows: list[list[str]] = []
    last_line = 0
    try:
        for fields in reader:
            if not fields:  # a blank line
                last_line = reader.line_num
                continue
            if header is None:
                header = fields
                _check_header(header, name, remedy)
            elif len(fields) != len(header):
                what = "more" if len(fields) > len(header) else "fewer"
                raise DataError(
                    f"line {reader.line_num} has {len(fields)} fields, {what} than the "
                    f"{len(header)} columns of the header (an extra separator, a stray quote, "
                    f"or a file cut short?); {remedy}", file=name, row=len(rows) + 1)
            else:
                rows.append(fields)
            last_line = reader.line_num
    except csv.Error as e:
        where = f"the record that starts on line {last_line + 1}"
        if "end of data" in str(e):
            reason = (f"a quoted field in {where} is never closed (the file is cut short, or "
                      "has a stray quote)")
        else:
            reason = f"{where} is not valid {'TSV' if sep == chr(9) else 'CSV'} ({e})"
        raise DataError(f"{reason}; {remedy}", file=name,
                        row=len(rows) + 1 if header is not None else None) from None
    if header is None:
        raise DataError(f"the file holds no header and no data; {remedy}", file=name)
    if not rows:
        raise DataError(f"the file has a header but no data rows; {remedy}", file=name)
    return Table(tuple(header), rows)


@dataclass(frozen=True)
class Table:
    """A parsed data file: its column names and its rows (data rows only), every cell a string.

    Row ``i`` of :meth:`records` (1-based) is the file's data row ``i``, as errors name it.
    """

    columns: tuple[str, ...]
    rows: list[list[str]] = field(repr=False)

    def __len__(self) -> int:
        return len(self.rows)

    def records(self) -> list[dict[str, str]]:
        """One ``{column: cell}`` dict per row (what ``DataFrame.to_dict("records")`` gives)."""
        cols = self.columns
        return [dict(zip(cols, r, strict=True)) for r in self.rows]

    def column(self, name: str) -> list[str]:
        """The cells of one column, in row order."""
        i = self.columns.index(name)
        return [r[i] for r in self.rows]

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=list(self.columns), dtype=str)

    @classmethod
    def from_frame(cls, df: pd.DataFrame) -> "Table":
        return cls(tuple(str(c) for c in df.columns),
                   [list(r) for r in zip(*(df[c].tolist() for c in df.columns), strict=True)])


def _check_header(header: list[str], name: str, remedy: str) -> None:
    seen: set[str] = set()
    for col in header:
        if col in seen:
            raise DataError(f"column {col!r} appears twice in the header; {remedy}", file=name)
        seen.add(col)


def _parse_excel(data: bytes, name: str, remedy: str) -> pd.DataFrame:
    try:
        df = pd.read_excel(io.BytesIO(data), dtype=str, keep_default_na=False)
    # openpyxl and zipfile raise many unrelated types for a damaged workbook (BadZipFile,
    # KeyError, ValueError, OSError, XML errors...); none of them is a bug of ncprobe here
    except Exception as e:  # noqa: BLE001
        raise DataError(f"not a readable Excel workbook ({type(e).__name__}: {e}); {remedy}",
                        file=name) from None
    if df.empty:
        raise DataError(f"the workbook's first sheet has no data rows; {remedy}", file=name)
    return df


@dataclass
class LoadContext:
    """What a loader carries: where the files are, where problems go, what it noted and read.

    Attributes:
        data_dir: the data directory.
        sink: where problems go (raise at once, or collect).
        notes: what was tolerated or corrected, one line each.
        read: file -> git blob id of every file read.
        tolerated: counts of known, harmless anomalies (see :meth:`tolerate`).
        accept_modified: a file whose git blob id differs from its pin is used, and listed
            in :attr:`modified`, instead of being an error.
        modified: file -> ``{"blob": found, "pinned": pinned}`` of the files used although
            they differ from their pin.
        pins: file -> pinned git blob id (default: ``ncprobe/data/upstream.tsv``).
    """

    data_dir: Path
    sink: ErrorSink = field(default_factory=ErrorSink)
    notes: list[str] = field(default_factory=list)
    read: dict[str, str] = field(default_factory=dict)
    tolerated: Counter = field(default_factory=Counter)
    accept_modified: bool = False
    modified: dict[str, dict] = field(default_factory=dict)
    pins: dict[str, str] = field(default_factory=pinned_blobs, repr=False)
    _tables: dict[str, Table | None] = field(default_factory=dict, repr=False)
    _reported: set = field(default_factory=set, repr=False)

    def tolerate(self, what: str) -> None:
        """Count a known, harmless anomaly; :meth:`flush_tolerated` turns counts into notes."""
        self.tolerated[what] += 1

    def flush_tolerated(self) -> None:
        for what, n in sorted(self.tolerated.items()):
            self.notes.append(f"{what}: {n} tolerated")
        self.tolerated.clear()

    def exists(self, rel: str) -> bool:
        return (self.data_dir / rel).is_file()

    def table(self, rel: str, sep: str = ",", columns=(), excel: bool = False
              ) -> Table | None:
        """Read a file once, verify it against its pin, parse it as strings, check its columns.

        The file is read and hashed once per context (a second call returns the same
        table). A file whose git blob id differs from its pin is an error unless
        :attr:`accept_modified`. Returns ``None`` (after reporting) when the file is
        missing, unreadable, modified, malformed or lacks a column.
        """
        if rel not in self._tables:
            self._tables[rel] = self._load(rel, sep, excel)
        df = self._tables[rel]
        if df is None:
            return None
        missing = [c for c in columns if c not in df.columns]
        for c in missing:
            if (rel, c) not in self._reported:
                self._reported.add((rel, c))
                self.sink.error("missing column; the file does not have the expected layout; "
                                + RESTORE, file=rel, column=c)
        return None if missing else df

    def _load(self, rel: str, sep: str, excel: bool) -> Table | None:
        data = self.verified_bytes(rel)
        if data is None:
            return None
        try:
            if excel:
                return Table.from_frame(parse_table(data, rel, excel=True))
            return parse_rows(data, rel, sep=sep)
        except DataError as e:
            self.sink.error(e.reason, file=e.file, row=e.row, column=e.column, key=e.key)
            return None

    def verified_bytes(self, rel: str) -> bytes | None:
        """A file's bytes, verified against its pin (what :meth:`table` parses).

        The file's git blob id is recorded in :attr:`read`. A missing or unreadable file,
        or one whose git blob id differs from its pin (unless :attr:`accept_modified`), is
        reported to :attr:`sink` and gives ``None``.
        """
        path = self.data_dir / rel
        if not path.is_file():
            if not self.data_dir.is_dir():
                from .sources import data_dir_origin

                if "<data dir>" in self._reported:  # said once, not once per file
                    return None
                self._reported.add("<data dir>")
                self.sink.error(
                    f"the data directory {self.data_dir} does not exist (from "
                    f"{data_dir_origin(Path(self.data_dir))}); run `ncprobe data download`, or "
                    "point --data-dir / $NCPROBE_DATA at the directory that holds the files "
                    "(an absolute path works from every directory)", file=rel)
                return None
            self.sink.error(not_a_file(path) or "file not found; run `ncprobe data download`, "
                            "or point --data-dir / $NCPROBE_DATA at a directory that holds it",
                            file=str(path))
            return None
        try:
            data = path.read_bytes()
        except OSError as e:
            self.sink.error(f"cannot be read ({e.strerror or e}); make it readable (check its "
                            f"permissions), or {RESTORE}", file=rel)
            return None
        blob = git_blob_sha1(data)
        self.read[rel] = blob
        pinned = self.pins.get(rel)
        if blob != pinned:
            if not self.accept_modified:
                self.sink.error(
                    f"content differs from the pinned upstream file (git blob {blob}, pinned "
                    f"{pinned or 'none: not a pinned file'}): the file was edited, cut short or "
                    f"replaced. {RESTORE[0].upper() + RESTORE[1:]}; or, to compute on this copy "
                    "on purpose, pass --accept-modified-data (Python: accept_modified=True): "
                    "the run then records it in run.json and its summary", file=rel)
                return None
            self.modified[rel] = {"blob": blob, "pinned": pinned}
            log.warning("%s differs from its pin (git blob %s, pinned %s); used because "
                        "modified data were accepted", rel, blob, pinned)
        return data

    def score(self, value: str, *, file: str, row: int, column: str, key: str,
              allow_empty: bool = False) -> float:
        """A 0-5 score; a decimal comma is accepted. Empty gives NaN where allowed."""
        text = value.strip().replace(",", ".")
        if not text:
            if not allow_empty:
                self.sink.error("empty score", file=file, row=row, column=column, key=key)
            return math.nan
        try:
            x = float(text)
        except ValueError:
            self.sink.error(f"{value!r} is not a number", file=file, row=row, column=column,
                            key=key)
            return math.nan
        if not 0.0 <= x <= 5.0:
            self.sink.error(f"score {x} outside the 0-5 scale", file=file, row=row,
                            column=column, key=key)
        return x

    def tag_span(self, sentence: str, tag: str, *, file: str, row: int, column: str,
                 key: str | None) -> tuple[int, int] | None:
        """The ``[start, end)`` word span of a boolean tag list, validated against the sentence.

        The tag must be a Python list literal of booleans with one entry per
        whitespace word of the sentence, and its True entries must be non-empty
        and contiguous. Returns ``None`` after reporting a problem.
        """
        where = dict(file=file, row=row, column=column, key=key)
        flags = _bool_list(tag)
        try:
            if flags is None:  # not the plain form: let Python's parser judge it
                flags = ast.literal_eval(tag.strip())
        except (ValueError, SyntaxError):
            self.sink.error(f"unparsable tag {tag[:60]!r}: expected a list such as "
                            "[False, True, True]", **where)
            return None
        if not isinstance(flags, list) or not all(isinstance(f, bool) for f in flags):
            self.sink.error(f"tag {tag[:60]!r} is not a list of booleans", **where)
            return None
        n_words = len(sentence.split())
        if len(flags) != n_words:
            self.sink.error(f"tag has {len(flags)} entries but the sentence has {n_words} words: "
                            f"{sentence[:80]!r}", **where)
            return None
        idx = [i for i, f in enumerate(flags) if f]
        if not idx:
            self.sink.error("empty span: the tag has no True entry", **where)
            return None
        if idx[-1] - idx[0] + 1 != len(idx):
            self.sink.error(f"non-contiguous span: True at word positions {idx}", **where)
            return None
        return idx[0], idx[-1] + 1


_BOOLS = {"True": True, "False": False}


def _bool_list(tag: str) -> list[bool] | None:
    """``[True, False, ...]`` parsed without :func:`ast.literal_eval`, or ``None``.

    Every tag of the data is a plain list of ``True``/``False``; a split parses it about 16
    times faster than ``ast.literal_eval``, which compiles each tag (about 19 us a tag:
    0.15 s for the ~8,000 tags of a Portuguese run, 0.9 s for the 46,526 tags ``data check``
    reads). Anything else (``[]``, a trailing comma, tabs, other literals) gives ``None`` and
    is left to ``ast.literal_eval``, so the result is always what it would give.
    """
    text = tag.strip()
    if len(text) < 2 or text[0] != "[" or text[-1] != "]":
        return None
    out = []
    for item in text[1:-1].split(","):
        flag = _BOOLS.get(item.strip(" "))
        if flag is None:
            return None
        out.append(flag)
    return out
