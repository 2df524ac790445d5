"""Published values checked: the data file of the papers' printed numbers, the verdict rule, and
the verification table that ``ncprobe reproduce --probes`` writes.

The printed values live in one data file shipped with the package, ``ncprobe/data/published.tsv``
(:data:`PUBLISHED_FILE`), one row per printed number with its citation: the probe that computes
it, the probe's key for it, the paper, the table, the row and the cell, the value *as printed*
(a string: its decimals are part of the value), the tolerance and a note. A probe that checks
published values (:attr:`ncprobe.probes.base.Probe.checks_published`) computes ncprobe's value
of each of its rows (:meth:`~ncprobe.probes.base.Probe.verify`, one :class:`Measured` per key);
this module joins the two (:func:`verification_table`), gives each row its verdict
(:func:`verdict`) and writes the table (:func:`write_verification`). It names no probe.

The verdict rule:

* ``equal``: ncprobe's value, rounded half up to the printed decimals, is the printed value;
* ``within``: otherwise, ``|ncprobe - printed|`` is at most the row's tolerance (a number, in
  the printed unit), or, for a tolerance of ``range``, the printed value lies inside the range
  the probe reports for its own value (IdioLink's tie range: what reordering only tied
  documents can give);
* ``differs``: otherwise (or without a tolerance), with the reason in the note.

A row whose tolerance is ``reference`` is a printed value no file lets ncprobe compute (the
paper's human accuracy, its fine-tuned models): a probe shows it beside its own rows
(:func:`reference_values`), and it is never checked (:func:`published_rows` leaves it out).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable, Mapping, Sequence

from .errors import DataError, UsageError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COLUMNS", "FILES", "PUBLISHED_FILE", "RANGE", "VERDICTS", "Measured", "Published",
           "decimals_of", "published_rows", "read_published", "reference_values", "verdict",
           "verification_table",
           "write_verification"]

#: The data file of the published values, shipped with the package.
PUBLISHED_FILE = Path(__file__).parent / "data" / "published.tsv"

#: The data file's columns, in order.
FIELDS = ("probe", "key", "paper", "table", "row", "cell", "printed", "tolerance", "note")

#: The tolerance that asks for the probe's own range (:attr:`Measured.low`, :attr:`Measured.high`).
RANGE = "range"
#: The tolerance of a printed value shown as a reference, never checked.
REFERENCE = "reference"

#: The verdicts, from the closest.
VERDICTS = ("equal", "within", "differs")

#: The verification table's columns.
COLUMNS = ("probe", "paper", "table", "row", "cell", "published", "ncprobe", "difference",
           "verdict", "tolerance", "note")

#: The files of the verification table, in the directory :func:`write_verification` writes.
FILES = ("verification.md", "verification.tex", "verification.csv")

#: The report kind of that directory (:mod:`ncprobe.owned`).
KIND = "verification"
LABEL = "verification table"

#: Slack for comparing a difference with a tolerance (binary fractions of printed decimals).
_EPS = 1e-9


@dataclass(frozen=True)
class Published:
    """One printed value of the data file, with its citation."""

    probe: str
    key: str        # the probe's name for the value (its :meth:`Probe.verify` knows it)
    paper: str
    table: str
    row: str
    cell: str
    printed: str    # as printed: "65.2" (its decimals are part of the value)
    tolerance: float | str | None  # points in the printed unit, RANGE, REFERENCE, or None
    #                                (equal only)
    note: str = ""
    line: int = 0   # the data file's line, in messages

    @property
    def value(self) -> float:
        return float(self.printed)

    @property
    def checked(self) -> bool:
        """Whether ncprobe checks it (every row but a :data:`REFERENCE`)."""
        return self.tolerance != REFERENCE

    @property
    def tolerance_text(self) -> str:
        if self.tolerance is None:
            return ""
        if isinstance(self.tolerance, str):  # RANGE, REFERENCE
            return self.tolerance
        return f"±{self.tolerance:g}"


@dataclass(frozen=True)
class Measured:
    """ncprobe's value of one published key, in the printed unit (percent where the paper
    prints percent), with the range it can take where the probe reports one (``low``,
    ``high``: IdioLink's tie range) and what the probe says of it (``note``)."""

    key: str
    value: float
    low: float | None = None
    high: float | None = None
    note: str = ""


def decimals_of(printed: str) -> int:
    """The decimals of a printed number: ``"65.2"`` 1, ``"36.04"`` 2, ``"25"`` 0."""
    return len(printed.partition(".")[2])


def _rounded(value: float, decimals: int) -> Decimal:
    """``value`` rounded half up to ``decimals`` (as a printed table rounds; the shortest
    decimal that reads back as the float, so 0.125 is 0.13)."""
    return Decimal(repr(value)).quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP)


def verdict(printed: str, value: float, tolerance: float | str | None = None, *,
            low: float | None = None, high: float | None = None) -> tuple[str, str]:
    """The verdict of ncprobe's ``value`` against the ``printed`` one, and its reason.

    Returns:
        ``(verdict, reason)``: ``equal`` (rounded half up to the printed decimals, the printed
        value), ``within`` (``|value - printed| <= tolerance``; for ``tolerance`` ``range``:
        ``low <= printed <= high``), else ``differs``; the reason says which bound failed
        (empty for ``equal``).
    """
    if not math.isfinite(value):
        return "differs", f"ncprobe's value is {value}"
    places = decimals_of(printed)
    shown = _rounded(value, places)
    if shown == Decimal(printed):
        return "equal", ""
    published = float(printed)
    diff = abs(value - published)
    at = f"{shown} at the printed decimals"
    if tolerance is None:
        return "differs", f"{at}; no tolerance stated"
    if tolerance == RANGE:
        if low is None or high is None:
            return "differs", f"{at}; no range reported for it"
        span = f"[{low:.{places}f}, {high:.{places}f}]"
        if low - _EPS <= published <= high + _EPS:
            return "within", f"{at}; the published value is inside the range {span}"
        return "differs", f"{at}; the published value is outside the range {span}"
    assert isinstance(tolerance, float)
    if diff <= tolerance + _EPS:
        return "within", f"{at}; |difference| {diff:.{places + 2}f} <= {tolerance:g}"
    return "differs", f"{at}; |difference| {diff:.{places + 2}f} > {tolerance:g}"


# --- the data file ----------------------------------------------------------------------------

def read_published(path: str | Path | None = None) -> list[Published]:
    """The rows of the data file (default :data:`PUBLISHED_FILE`): tab-separated, a header of
    :data:`FIELDS`, lines starting with ``#`` comments.

    Raises:
        DataError: a missing column, a printed value that is no decimal number, a tolerance
            that is neither a number >= 0, ``range`` nor empty, an empty key, or a probe's
            key given twice (naming the file and the line).
    """
    path = Path(path) if path is not None else PUBLISHED_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise DataError(f"cannot read the published values: {e}", file=str(path)) from None
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1)
             if line.strip() and not line.startswith("#")]
    if not lines:
        raise DataError("no header (columns " + ", ".join(FIELDS) + ")", file=str(path))
    reader = csv.reader(io.StringIO("\n".join(line for _, line in lines)), delimiter="\t",
                        quoting=csv.QUOTE_NONE)
    header, *body = list(reader)
    if tuple(header) != FIELDS:
        raise DataError(f"columns {', '.join(header)}; expected " + ", ".join(FIELDS),
                        file=str(path), key=f"line {lines[0][0]}")
    out: list[Published] = []
    seen: set[tuple[str, str]] = set()
    for (n, _), cells in zip(lines[1:], body, strict=True):
        def bad(what: str, n: int = n) -> DataError:
            return DataError(what + "; fix the data file", file=str(path), key=f"line {n}")

        if len(cells) != len(FIELDS):
            raise bad(f"{len(cells)} cells, expected {len(FIELDS)}")
        rec = dict(zip(FIELDS, (c.strip() for c in cells), strict=True))
        if not rec["probe"] or not rec["key"]:
            raise bad("an empty probe or key")
        try:
            if not Decimal(rec["printed"]).is_finite():
                raise InvalidOperation
        except InvalidOperation:
            raise bad(f"printed value {rec['printed']!r} is not a number") from None
        tol: float | str | None = None
        if rec["tolerance"] in (RANGE, REFERENCE):
            tol = rec["tolerance"]
        elif rec["tolerance"]:
            try:
                tol = float(rec["tolerance"])
            except ValueError:
                tol = -1.0
            if not (math.isfinite(tol) and tol >= 0):
                raise bad(f"tolerance {rec['tolerance']!r}: a number >= 0, {RANGE!r}, "
                          f"{REFERENCE!r} or empty")
        if (rec["probe"], rec["key"]) in seen:
            raise bad(f"key {rec['key']!r} of probe {rec['probe']!r} given twice")
        seen.add((rec["probe"], rec["key"]))
        out.append(Published(rec["probe"], rec["key"], rec["paper"], rec["table"], rec["row"],
                             rec["cell"], rec["printed"], tol, rec["note"], line=n))
    return out


def published_rows(probe: str, path: str | Path | None = None) -> list[Published]:
    """The data file's rows of the probe called ``probe`` that ncprobe checks, in file order
    (its :data:`REFERENCE` rows left out)."""
    return [p for p in read_published(path) if p.probe == probe and p.checked]


def reference_values(probe: str, path: str | Path | None = None) -> dict[str, Published]:
    """The data file's :data:`REFERENCE` rows of ``probe``, by key, in file order: printed
    values the probe shows and cannot compute."""
    return {p.key: p for p in read_published(path) if p.probe == probe and not p.checked}


# --- the table ---------------------------------------------------------------------------------

def verification_table(published: Sequence[Published],
                       measured: Mapping[str, Sequence[Measured]]) -> "pd.DataFrame":
    """One row per published value (in the data file's order): its citation, the printed
    value, ncprobe's, the difference (ncprobe - printed), the verdict and the note (the
    verdict's reason, then the probe's note, then the data file's).

    Args:
        published: the data file's rows of the probes checked.
        measured: probe name -> what its :meth:`~ncprobe.probes.base.Probe.verify` returned.

    Raises:
        ValueError: a published row no probe measured, a measured key the data file lacks, a
            key measured twice: a probe's :meth:`verify` that does not answer its rows (a
            defect, never a row left out silently); a :data:`REFERENCE` row (never checked).
    """
    import pandas as pd

    shown = [f"{p.probe} {p.key}" for p in published if not p.checked]
    if shown:
        raise ValueError(f"reference values are shown, never checked: {', '.join(shown)}")

    by_key: dict[tuple[str, str], Measured] = {}
    for probe, rows in measured.items():
        for m in rows:
            if (probe, m.key) in by_key:
                raise ValueError(f"probe {probe!r} measured {m.key!r} twice")
            by_key[(probe, m.key)] = m
    wanted = {(p.probe, p.key) for p in published}
    extra = sorted(set(by_key) - wanted)
    missing = [f"{p.probe} {p.key} (line {p.line})" for p in published
               if (p.probe, p.key) not in by_key]
    if extra or missing:
        raise ValueError("published values not measured: " + (", ".join(missing) or "none")
                         + "; measured values not published: "
                         + (", ".join(f"{a} {b}" for a, b in extra) or "none"))
    records = []
    for p in published:
        m = by_key[(p.probe, p.key)]
        said, reason = verdict(p.printed, m.value, p.tolerance, low=m.low, high=m.high)
        records.append({
            "probe": p.probe, "paper": p.paper, "table": p.table, "row": p.row,
            "cell": p.cell, "published": p.printed, "ncprobe": m.value,
            "difference": m.value - p.value, "verdict": said, "tolerance": p.tolerance_text,
            "note": "; ".join(x for x in (reason, m.note, p.note) if x)})
    return pd.DataFrame.from_records(records, columns=list(COLUMNS))


def _display(table: "pd.DataFrame") -> "pd.DataFrame":
    """The table as display strings: ncprobe's value and the difference at two decimals more
    than printed."""
    out = table.copy()
    places = [decimals_of(p) + 2 for p in table["published"]]
    out["ncprobe"] = [f"{v:.{k}f}" for v, k in zip(table["ncprobe"], places, strict=True)]
    out["difference"] = [f"{v:+.{k}f}" for v, k in zip(table["difference"], places,
                                                        strict=True)]
    return out.set_index(["probe", "paper", "table", "row", "cell"])


def summary_line(table: "pd.DataFrame") -> str:
    """``26 published values: 24 equal, 2 within, 0 differ``."""
    counts = table["verdict"].value_counts()
    return (f"{len(table)} published values: {counts.get('equal', 0)} equal, "
            f"{counts.get('within', 0)} within their tolerance, "
            f"{counts.get('differs', 0)} differ")


def planned_files() -> list[str]:
    return list(FILES)


def check_verification_dir(out_dir: str | Path, *, overwrite: bool = False) -> None:
    """Refuse, before any work, a directory :func:`write_verification` would refuse (a file,
    inside a results directory, holding files ncprobe did not write under its names)."""
    from .owned import check_report_dir

    check_report_dir(out_dir, planned_files, kind=KIND, label=LABEL, overwrite=overwrite)


def write_verification(table: "pd.DataFrame", out_dir: str | Path, *, overwrite: bool = False,
                       progress: Callable[[str], None] | None = None) -> list[Path]:
    """Write the verification table into ``out_dir`` as Markdown, LaTeX and CSV (:data:`FILES`;
    the CSV with the values unrounded), as ncprobe's own files (:func:`ncprobe.owned.write_owned`:
    never over a file ncprobe did not write). Returns the files written."""
    from .owned import write_owned
    from .tables import to_latex, to_markdown

    shown = _display(table)
    note = (summary_line(table) + ". Verdicts: equal = ncprobe's value rounded half up to the "
            "printed decimals is the printed value; within = inside the stated tolerance "
            "(points) or, for 'range', the published value inside the range ncprobe reports; "
            "differs = neither (the note says why). Difference = ncprobe - published.")
    buf = io.StringIO()
    table.to_csv(buf, index=False, lineterminator="\n")
    contents = {
        "verification.md": "# Published values checked\n\n" + to_markdown(shown) + "\n"
                           + note + "\n",
        "verification.tex": to_latex(shown, caption="Published values checked. " + note),
        "verification.csv": buf.getvalue()}
    out = Path(out_dir)

    def write(put) -> list[Path]:
        written = []
        for name in FILES:
            put({out / name: contents[name].encode("utf-8")})
            written.append(out / name)
            if progress is not None:
                progress(f"wrote {out / name}")
        return written

    return write_owned(out, planned_files(), write, kind=KIND, label=LABEL,
                       overwrite=overwrite)


def check_probes(given: Iterable[str], known: Sequence[str]) -> list[str]:
    """The probe names ``given`` (a comma list's items, or ``all``: every one of ``known``),
    each once, in ``known`` order.

    Raises:
        UsageError: an empty list, or a name not in ``known`` (naming the known ones).
    """
    names = [n.strip() for n in given if n.strip()]
    if not names:
        raise UsageError("--probes: no probe named; choose from " + ", ".join(known)
                         + " (or all)")
    if "all" in names:
        return list(known)
    unknown = [n for n in dict.fromkeys(names) if n not in known]
    if unknown:
        raise UsageError(f"--probes: unknown probe(s) {', '.join(map(repr, unknown))}; the "
                         "probes reproduce covers are " + ", ".join(known) + " (or all; a probe "
                         "not listed checks no published value)")
    return [n for n in known if n in names]
