"""Write every figure and table of the study for a Results into one directory.

``write_report(results, out)`` saves figures 1-10 as ``figNN_<name>.png`` and
``.pdf`` and the tables as ``table_<name>.md`` and ``.tex``, plus a
``README.md`` index saying which models and languages made them. A figure or
table with nothing to show for these results (e.g. NC-level figures of a
sentence-level-only model) is left out and named in the index, never drawn empty.

Every figure and table is a :class:`~ncprobe.ncimp.view.Spec`
(:data:`ncprobe.ncimp.figures.FIGURE_SPECS`,
:data:`ncprobe.ncimp.tables.TABLE_SPECS`), built alike from one :class:`~ncprobe.ncimp.view.View`
of the report's options: a new figure or table is a spec in one of those lists, not a branch here.

The files are ncprobe's own (:mod:`ncprobe.owned`): the output directory may hold other
files, which are never deleted or overwritten; every file is recorded with its SHA-256 in the
report's manifest before it is written, a later report replaces or removes only files whose
content is still what ncprobe wrote, and the same command after an interruption resumes. The
figures are drawn here or in worker processes and saved in every format by
:mod:`ncprobe.drawing`, as every probe's report saves them.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from .._version import VERSION as __version__
from ..drawing import FORMATS, FigureWorkers, check_formats, figure_bytes
from ..errors import NcprobeError, UsageError
from ..owned import Put, check_report_dir, write_owned
from ..significance import CORRECTION_NAMES, check_correction
from .runs import NCIMP_LAYOUT
from .view import Spec, View

if TYPE_CHECKING:  # pragma: no cover
    from ..schema import Correction
    from .runs import ResultsData as Results

log = logging.getLogger(__name__)

#: The kind of this report, recorded in its manifest (the probe whose results it shows), and
#: the report in words, in messages (``an NCIMP report``): the probe's layout declares them
#: (:data:`ncprobe.ncimp.runs.NCIMP_LAYOUT`).
KIND, LABEL = NCIMP_LAYOUT.probe, NCIMP_LAYOUT.report_label


def most_figures() -> int:
    """Every figure an NCIMP report may draw (the study's and ncprobe's additions): the most
    its figure workers ever draw (``FigureWorkers(jobs, figures=most_figures())`` where the
    report's figures are not known yet, as in ``ncprobe reproduce``)."""
    from . import figures as plots

    return len(plots.FIGURES) + len(plots.ADDED_FIGURES)


def write_report(results: Results, out_dir, *, formats: Sequence[str] = ("png", "pdf"),
                 examples: Sequence[str] | None = None, dpi: int = 200,
                 jobs: int | FigureWorkers = 1, provenance: str | None = None,
                 space: str | None = None, level: str | None = None,
                 correct: Correction = "holm", intervals: bool = True,
                 progress: Callable[[str], None] | None = None,
                 overwrite: bool = False) -> list[Path]:
    """Save every figure and table of method §4 for ``results`` into ``out_dir``.

    When the results hold two or more single-layer views of some model (``--layers all``),
    the layer-wise figure (``fig11_layers``, :func:`ncprobe.ncimp.figures.fig_layers`) and table
    (``table_layers``, :func:`ncprobe.ncimp.tables.layers`) are written too: ncprobe's additions,
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
        jobs: processes that draw figures (this one included), or
            :class:`~ncprobe.drawing.FigureWorkers` started earlier; workers are fresh
            processes (``spawn``) given this process's matplotlib settings, so the files are
            the same whatever ``jobs`` is. Never more processes than figures to draw or CPUs
            this process may use.
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
        UsageError: a format that is not one of :data:`~ncprobe.drawing.FORMATS`;
            ``out_dir`` is, or is inside, a results directory; it holds files that ncprobe did
            not write, or changed since, under names the report would write, a report of a
            development version of ncprobe, or (without ``overwrite``) another probe's
            report (nothing is written); ``results`` hold one
            NC of one cell twice (two runs pooled: :meth:`~ncprobe.ncimp.results.Results.concat`
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
        possible=_planned(FORMATS, layerwise=True), kind=KIND, label=LABEL,
        overwrite=overwrite, logger=log)


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


def check_out(out_dir, formats: Sequence[str] = ("png", "pdf"), *,
              overwrite: bool = False) -> None:
    """Refuse, before any work, an output directory that :func:`write_report` would refuse
    (``overwrite``: as its own).

    Raises:
        UsageError: a format that is not one (:func:`check_formats`); ``out_dir`` is a file,
            is or is inside a results directory (one holding ``run.json``: a report there
            would stop ``ncprobe compute`` from writing it again), or holds files that
            ncprobe did not write (or that were changed since) under names the report
            would write, a report of a development version of ncprobe, or (without
            ``overwrite``) another probe's report.
        OutputError: ``out_dir``, or the directory it would be made in, cannot be written
            (a read-only file system, no permission).
    """
    check_formats(formats)
    check_report_dir(out_dir, lambda: _planned(formats), kind=KIND, label=LABEL,
                     overwrite=overwrite)


def _specs(layerwise: bool) -> tuple[list[Spec], list[Spec]]:
    """The figures and the tables a report writes, in order, with the options each takes
    (:data:`ncprobe.ncimp.figures.FIGURE_SPECS`, :data:`ncprobe.ncimp.tables.TABLE_SPECS`): the
    layer-wise ones only when ``layerwise``.

    Which figures and tables, and the function that builds each, are those of
    :data:`ncprobe.ncimp.figures.FIGURES` and :data:`~ncprobe.ncimp.figures.ADDED_FIGURES`, and of
    :data:`ncprobe.ncimp.tables.TABLES` and the added tables' specs: a caller (a test) that
    narrows or wraps those dicts narrows or wraps the report.
    """
    from . import figures as plots
    from . import tables

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
    from ..schema import LEVEL_LABELS, LEVELS, SPACES
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
    from . import figures as plots

    try:
        draw = plots.FIGURES.get(name) or plots.ADDED_FIGURES[name]
        fig, notes = draw(results, return_notes=True, **(options or {}))
    except plots.NoData as e:
        return None, [str(e)]
    return figure_bytes(fig, formats, dpi), notes


def _figures(results: Results, formats: Sequence[str], dpi: int, workers: FigureWorkers,
             options: dict[str, dict] | None = None):
    """``(name, (blobs, notes))`` for every figure, in figure order: the study's, then those
    of :data:`ncprobe.ncimp.figures.ADDED_FIGURES` named in ``options`` (name -> the figure's
    keyword options; ``None``: the study's figures with their defaults).

    With workers, they take figures from the front of the list while this process
    takes them from the back, so no process waits on another while figures remain.
    """
    from . import figures as plots

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
           jobs: FigureWorkers, view: View, *, put: Put, provenance: str | None = None,
           progress: Callable[[str], None] | None = None) -> list[Path]:
    """Draw and write the files of the report (``put`` writes them, as ncprobe's own: path ->
    content, :func:`ncprobe.owned.write_owned`); ``progress`` is told of each figure and
    table.

    Every figure and table is a :class:`~ncprobe.ncimp.view.Spec`, built alike with the options
    it takes from ``view``."""
    from ..tables import to_latex, to_markdown
    from . import tables

    figure_specs, table_specs = _specs(view.layerwise)
    written: list[Path] = []
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
            (".md", f"{caption}\n\n{to_markdown(df)}"),
            (".tex", to_latex(df, caption)))}
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
