"""A probe's report as files: its figures, its table files and its index, written into one
directory as ncprobe's own. What the report writers of the IdioLink, NCC and AStitch probes
share (:func:`ncprobe.retrieval.report.write_retrieval_report`,
:func:`ncprobe.ncc.report.write_ncc_report`,
:func:`ncprobe.astitch.report.write_astitch_report`); each brings its own figures, drawing,
tables and index.

* :func:`check_report_args`: the figure formats, the resolution and the mapping of tables,
  checked before anything is built; :func:`check_report_meta`: the runs' metadata;
* :func:`figure_lines` and :func:`meta_lines`: the index's lines of the figures, and of the
  runs' notes and configuration;
* :func:`write_probe_report`: the figures drawn in order (one with nothing to show,
  :class:`~ncprobe.errors.NoData`, is left out and named in the index), each saved in every
  format by :func:`ncprobe.drawing.figure_bytes`; the table files (each ``.md`` and
  ``.tex``); the index ``README.md`` last; results read although edited said first in every
  file but the figures (:func:`with_edited`). The directory is checked before any work
  (:func:`ncprobe.owned.check_report_dir`) and written through
  :func:`ncprobe.owned.write_owned` (the manifest, atomic writes, refusal to replace a file
  ncprobe did not write, resuming after an interruption).
* :func:`check_index_dir` and :func:`write_index`: the index of a report of several probes'
  results (``ncprobe report results`` once several probes wrote there), each probe's report
  in the subdirectory named by the probe.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, NamedTuple, Sequence

from .drawing import FORMATS, check_formats, figure_bytes
from .errors import NoData, UsageError
from .owned import INDEX_KIND, INDEX_LABEL, MANIFEST, check_report_dir, write_owned

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["Drawn", "check_index_dir", "check_report_args", "check_report_meta", "figure_lines",
           "meta_lines", "planned_files", "with_edited", "write_index", "write_probe_report"]

#: The index of every report, written last.
INDEX = "README.md"
#: The files of each table, in the order they are written.
TABLE_SUFFIXES = (".md", ".tex")


class Drawn(NamedTuple):
    """One figure of a report as its index tells of it."""

    #: Its file stem (``fig01_accuracy``).
    stem: str
    #: What the probe's drawing function was given for it (its kind, or a kind and a metric).
    spec: Any
    #: The files written, one per format (none when not drawn).
    files: list[str]
    #: Why it was not drawn (the :class:`~ncprobe.errors.NoData` message), or ``None``.
    why: str | None


def check_report_args(formats: Sequence[str], dpi: Any, tables: Any, needed: Sequence[str], *,
                      what: str, give: str) -> tuple[str, ...]:
    """The checked figure formats (:func:`ncprobe.drawing.check_formats`), once the
    resolution and the tables are checked too.

    Args:
        formats: the figure formats.
        dpi: the resolution of the raster figures: a finite number > 0.
        tables: a mapping holding every table of ``needed``.
        what: the tables in words, in ``tables: give a mapping of <what>``.
        give: what to give instead, in ``tables: <missing> missing; <give>``.

    Raises:
        UsageError: a bad format or dpi, tables that are not a mapping or lack one of
            ``needed``.
    """
    formats = check_formats(formats)
    if isinstance(dpi, bool) or not isinstance(dpi, (int, float)) or not dpi > 0 \
            or not math.isfinite(dpi):
        raise UsageError(f"dpi={dpi!r}: give a positive resolution in dots per inch (e.g. 200)")
    if not isinstance(tables, Mapping):
        raise UsageError(f"tables: give a mapping of {what}, not a {type(tables).__name__}")
    missing = [t for t in needed if t not in tables]
    if missing:
        raise UsageError(f"tables: {', '.join(missing)} missing; {give}")
    return formats


def check_report_meta(meta: Any, *, kind: str, probe: str, run: str,
                      needed: Sequence[str] = (),
                      entry: str = "{'model': ..., 'id': ...}") -> Mapping[str, Any]:
    """``meta``, the runs' metadata a probe's report is given, checked: a mapping, of the
    probe ``kind`` (``probe``: its name in words, ``run``: a run of it, ``an NCC run``), with
    every key of ``needed``, its ``models`` a list of mappings each with ``model`` (``entry``:
    one as the message shows it), its ``edited`` (when given) a list of lines.

    Raises:
        UsageError: naming the key and what to give.
    """
    if not isinstance(meta, Mapping):
        raise UsageError(f"meta: give the runs' metadata (a dict), not a {type(meta).__name__}")
    if meta.get("probe", kind) != kind:
        raise UsageError(f"meta: probe {meta.get('probe')!r} is not the {probe} probe "
                         f"{kind!r}; give the metadata of {run}")
    missing = [k for k in needed if k not in meta]
    if missing:
        raise UsageError(f"meta: {', '.join(missing)} missing; give the metadata of {run}")
    models = meta.get("models")
    if not isinstance(models, Sequence) or isinstance(models, str) or not all(
            isinstance(m, Mapping) and "model" in m for m in models):
        raise UsageError(f"meta['models']: give a list of {entry} entries, one per model")
    edited = meta.get("edited") or []
    if isinstance(edited, str) or not isinstance(edited, Sequence):
        raise UsageError("meta['edited']: give a list of lines, one per edited run")
    return meta


def figure_lines(figures: Sequence[Drawn], text: Callable[[Any], str]) -> list[str]:
    """The index's line of each figure, in order: its files and what it shows
    (``text(spec)``), or why it was not drawn; then the line of the manifest."""
    lines = []
    for stem, spec, files, why in figures:
        if why is not None:
            lines.append(f"- {stem}: not drawn: {why}")
            continue
        lines.append(f"- {', '.join(f'`{f}`' for f in files)}: {text(spec)}")
    lines.append(f"- `{MANIFEST}`: the files ncprobe wrote here, with their SHA-256; a later "
                 "report into this directory replaces or removes only those, unchanged.")
    return lines


def meta_lines(meta: Mapping[str, Any]) -> list[str]:
    """The index's last sections: the runs' notes (``meta["notes"]``) and the options they
    share (``meta["config"]``, each as JSON), each where there is any."""
    lines: list[str] = []
    notes = [str(n) for n in meta.get("notes") or []]
    if notes:
        lines += ["", "## Notes\n"] + [f"- {n}" for n in notes]
    config = meta.get("config")
    if isinstance(config, Mapping) and config:
        lines += ["", "## Configuration\n"]
        lines += [f"- {k}: `{json.dumps(config[k], sort_keys=True, default=str)}`"
                  for k in sorted(config, key=str)]
    return lines


def planned_files(figures: Sequence[str], tables: Sequence[str], formats: Sequence[str]
                  ) -> list[str]:
    """Every name a report writes: each figure stem in every format (figures left undrawn
    included), each table stem as ``.md`` and ``.tex``, the index last."""
    names = [f"{stem}.{fmt}" for stem in figures for fmt in formats]
    names += [f"{stem}{suffix}" for stem in tables for suffix in TABLE_SUFFIXES]
    return names + [INDEX]


def with_edited(name: str, data: bytes, edited: Sequence[str], *,
                latex_shown: Callable[[str], str] | None = None) -> bytes:
    """A report file's content with the edited results said first (nothing when none).

    In Markdown a bold paragraph per line, under the file's heading when it starts with one
    (``# ...``); in LaTeX a comment per line and, with ``latex_shown`` (the escape of LaTeX
    text), a bold paragraph of them before the table, so that the typeset table says it too.
    """
    if not edited:
        return data
    text = data.decode("utf-8")
    if name.endswith(".tex"):
        said = "".join(f"% {line}\n" for line in edited)
        if latex_shown is not None:
            said += r"\noindent\textbf{" + latex_shown("; ".join(edited)) + "}\\par\n\n"
        return (said + text).encode("utf-8")
    said = "".join(f"**{line}**\n\n" for line in edited)
    if text.startswith("# "):  # the heading stays the first line, the warning right under it
        head, _, rest = text.partition("\n")
        return (head + "\n\n" + said + rest.lstrip("\n")).encode("utf-8")
    return (said + text).encode("utf-8")


def write_probe_report(out_dir, *, figures: Sequence[tuple[str, Any]],
                       draw: Callable[[Any], "Figure"], tables: Sequence[str],
                       table_files: Mapping[str, bytes], index: Callable[[list[Drawn]], str],
                       formats: Sequence[str], dpi: int, edited: Sequence[Any],
                       kind: str, label: str, overwrite: bool = False,
                       progress: Callable[[str], None] | None = None,
                       latex_shown: Callable[[str], str] | None = None,
                       logger: logging.Logger | None = None) -> list[Path]:
    """Write a probe's report into ``out_dir``: the figures, the table files, the index.

    The table files are built by the caller before this is called (bad input writes
    nothing); ``out_dir`` is checked before any figure is drawn.

    Args:
        out_dir: the report directory (made when needed).
        figures: ``(stem, spec)`` per figure, in order; ``draw(spec)`` draws it, or raises
            :class:`~ncprobe.errors.NoData` when it has nothing to show.
        draw: the probe's drawing function.
        tables: the table file stems, in order: each is written as ``.md`` then ``.tex``.
        table_files: the content of each table file, by file name.
        index: the index ``README.md`` of the figures as drawn (:class:`Drawn`, in order).
        formats, dpi: checked figure formats and resolution (:func:`check_report_args`).
        edited: one line per run read although edited (``meta["edited"]``, checked by
            :func:`check_report_meta`): said first in every table file and in the index
            (:func:`with_edited`, with ``latex_shown``).
        kind, label: the report's kind (its probe) and the report in words
            (:func:`ncprobe.owned.write_owned`).
        overwrite: replace another probe's report in ``out_dir``.
        progress: called with one line as each figure and table is written.
        latex_shown: as :func:`with_edited`'s.
        logger: where the warnings of :func:`~ncprobe.owned.write_owned` go.

    Returns:
        The files written, in order (figures, tables, the index ``README.md`` last).

    Raises:
        UsageError: an ``out_dir`` refused (:func:`ncprobe.owned.check_report_dir`);
            nothing is written.
        OutputError: ``out_dir`` cannot be written; the message names the file.
    """
    stems = [stem for stem, _ in figures]
    edited = [str(line) for line in edited]
    marked = {name: with_edited(name, data, edited, latex_shown=latex_shown)
              for name, data in table_files.items()}
    out = Path(out_dir)
    planned = planned_files(stems, tables, formats)
    check_report_dir(out, lambda: planned, kind=kind, label=label, overwrite=overwrite)
    say = progress or (lambda line: None)

    def write(put: Callable[[dict[Path, bytes]], None]) -> list[Path]:
        written: list[Path] = []
        drawn: list[Drawn] = []
        for i, (stem, spec) in enumerate(figures, start=1):
            try:
                fig = draw(spec)
            except NoData as e:
                drawn.append(Drawn(stem, spec, [], str(e)))
                say(f"figure {i}/{len(figures)}: {stem} not drawn ({e})")
                continue
            blobs = figure_bytes(fig, formats, dpi)
            files = {out / f"{stem}.{fmt}": blobs[fmt] for fmt in formats}
            put(files)
            written += files
            drawn.append(Drawn(stem, spec, [p.name for p in files], None))
            say(f"figure {i}/{len(figures)}: {stem}")
        for i, stem in enumerate(tables, start=1):
            for suffix in TABLE_SUFFIXES:
                put({out / f"{stem}{suffix}": marked[f"{stem}{suffix}"]})
                written.append(out / f"{stem}{suffix}")
            say(f"table {i}/{len(tables)}: {stem}")
        readme = out / INDEX
        put({readme: with_edited(INDEX, index(drawn).encode("utf-8"), edited,
                                 latex_shown=latex_shown)})
        written.append(readme)
        return written

    return write_owned(out, planned, write, possible=planned_files(stems, tables, FORMATS),
                       kind=kind, label=label, overwrite=overwrite, logger=logger)


def check_index_dir(out_dir, probes: Sequence[str], *, overwrite: bool = False,
                    labels: Mapping[str, str] | None = None) -> None:
    """Refuse, before any report is drawn, what :func:`write_index` and the reports of
    ``probes`` (each in the subdirectory of ``out_dir`` named by the probe) would refuse: an
    ``out_dir`` holding a report of its own (or files ncprobe did not write under the index's
    name), a subdirectory holding another probe's report (unless ``overwrite``). ``labels``:
    each probe's report in words (its layout's ``report_label``); a probe not there is
    named as :func:`ncprobe.owned.kind_label` names it.

    Raises:
        UsageError, OutputError: as :func:`ncprobe.owned.check_report_dir`.
    """
    from .owned import kind_label

    out = Path(out_dir)
    check_report_dir(out, lambda: [INDEX], kind=INDEX_KIND, label=INDEX_LABEL,
                     overwrite=overwrite)
    for probe in probes:
        check_report_dir(out / probe, lambda: [],
                         kind=probe, label=(labels or {}).get(probe) or kind_label(probe),
                         overwrite=overwrite)


def write_index(out_dir, reports: Mapping[str, Sequence[str]], *, overwrite: bool = False,
                labels: Mapping[str, str] | None = None) -> Path:
    """Write the index ``README.md`` of a report of several probes' results into ``out_dir``
    (as ncprobe's own, :func:`ncprobe.owned.write_owned`): a link to each probe's report, in
    the subdirectory named by the probe, with the results directories it shows.

    Args:
        out_dir: the report directory, holding one subdirectory per probe.
        reports: per probe (in the order shown), the results directories of its report.
        overwrite: replace a report of another kind there.
        labels: each probe's report in words (its layout's ``report_label``); a probe not
            there is named as :func:`ncprobe.owned.kind_label` names it (as its report,
            written before the index, declared it).

    Returns:
        The index written.
    """
    from .owned import kind_label

    out = Path(out_dir)
    lines = ["# ncprobe report: results of several probes", "",
             "The results read hold several probes' results; each probe's report is in its "
             "own directory:", ""]
    for probe, dirs in reports.items():
        shown = ", ".join(f"`{d}`" for d in dirs)
        label = (labels or {}).get(probe) or kind_label(probe)
        lines.append(f"- [{probe}]({probe}/{INDEX}): the {label} of "
                     f"{len(dirs)} results director{'y' if len(dirs) == 1 else 'ies'} "
                     f"({shown})")
    lines += ["", f"- `{MANIFEST}`: the files ncprobe wrote here, with their SHA-256; a later "
              "report into this directory replaces or removes only those, unchanged.", ""]
    index = out / INDEX

    def write(put: Callable[[dict[Path, bytes]], None]) -> list[Path]:
        put({index: "\n".join(lines).encode("utf-8")})
        return [index]

    write_owned(out, [INDEX], write, kind=INDEX_KIND, label=INDEX_LABEL, overwrite=overwrite)
    return index
