"""Write every figure and table of the study for a Results into one directory.

``write_report(results, out)`` saves figures 1-10 as ``figNN_<name>.png`` and
``.pdf`` and the tables as ``table_<name>.md`` and ``.tex``, plus a
``README.md`` index saying which models and languages made them. A figure or
table with nothing to show for these results (e.g. NC-level figures of a
sentence-level-only model) is left out and named in the index, never drawn empty.

The output directory may hold other files: they are never deleted or overwritten.
Every file is written atomically, and the names written are recorded in
``.ncprobe-report.json``; a later report into the same directory replaces those
files and removes the ones it no longer writes, and refuses (before writing
anything) when a file it would write exists and is not one of them.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, Sequence

from ._io import atomic_write_bytes, atomic_write_text, dir_lock
from ._version import VERSION as __version__
from .errors import NcprobeError, UsageError
from .schema import CLASS_FIGURES, CORRELATION_TABLES

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import ProcessPoolExecutor

    from .stats import Correction

log = logging.getLogger(__name__)

#: Names of the files written into a report directory, kept for the next report.
MANIFEST = ".ncprobe-report.json"
# what a report of ncprobe <= 0.1 (no manifest) wrote, recognised by its README heading
_OLD_REPORT_RE = re.compile(r"^(fig\d\d_\w+\.\w+|table_\w+\.(md|tex)|README\.md)$")


def write_report(results, out_dir, *, formats: Sequence[str] = ("png", "pdf"),
                 examples: Sequence[str] | None = None, dpi: int = 200,
                 jobs: int | FigureWorkers = 1, provenance: str | None = None,
                 space: str | None = None, level: str | None = None,
                 correct: Correction = "holm", intervals: bool = True) -> list[Path]:
    """Save every figure and table of SPEC §4 for ``results`` into ``out_dir``.

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
            matplotlib settings, so the files are the same whatever ``jobs`` is.
        provenance: a Markdown section that ends the index ``README.md``, after a blank
            line: how the files were made (``ncprobe reproduce`` gives
            :func:`reproduce_provenance`). It is part of the index, written with the rest
            while the directory is locked.

    Returns:
        The files written, in order (the index ``README.md`` last).

    The figures are drawn without pyplot and with Agg: the caller's backend and pyplot's
    figures are left as they are (in Jupyter, nothing is shown).
    """
    from . import plots, tables

    view = _view(results, space, level)  # a space or level the results lack: refused first
    tables.correction_note(correct, 0)  # an unknown correction: refused before any work
    view.options.setdefault("correlogram", {})["correct"] = correct
    for name in CLASS_FIGURES:  # their marks follow the per-class tests table's correction
        view.options.setdefault(name, {})["correct"] = correct
    if not isinstance(jobs, FigureWorkers):
        check_out(Path(out_dir), formats)  # refused before any worker starts
        with FigureWorkers(jobs) as workers:
            return write_report(results, out_dir, formats=formats, examples=examples,
                                dpi=dpi, jobs=workers, provenance=provenance, space=space,
                                level=level, correct=correct, intervals=intervals)
    out = Path(out_dir)
    check_out(out, formats)
    out.mkdir(parents=True, exist_ok=True)
    with dir_lock(out.resolve()):  # two reports into one directory: one after the other
        ours, listed = _own_files(out)
        _refuse_foreign(out, _planned(formats, layerwise=view.layerwise), ours)
        written = _write(results, out, formats, examples, dpi, jobs, plots, tables,
                         provenance, view, correct=correct, intervals=intervals)
        if listed:  # only files the manifest names as ncprobe's are ever removed
            for name in sorted(ours - {p.name for p in written}):
                stale = out / name  # written by an earlier report and not by this one
                if stat.S_ISREG(os.lstat(stale).st_mode):
                    stale.unlink()
        atomic_write_text(out / MANIFEST, json.dumps(
            {"format": 1, "ncprobe": __version__, "files": sorted(p.name for p in written)},
            indent=1) + "\n")
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


def check_out(out_dir, formats: Sequence[str] = ("png", "pdf")) -> None:
    """Refuse, before any work, an output directory that :func:`write_report` would refuse.

    Raises:
        UsageError: ``out_dir`` is a file, or holds files that ncprobe did not write under
            names the report would write.
    """
    out = Path(out_dir)
    if os.path.lexists(out) and not out.is_dir():
        raise UsageError(f"{out} exists and is not a directory: choose another --out")
    if out.is_dir():
        _refuse_foreign(out, _planned(formats), _own_files(out)[0])


def _planned(formats: Sequence[str], *, layerwise: bool = False) -> list[str]:
    """Every name a report may write (figures left undrawn included); the layer-wise figure
    and table only when ``layerwise`` (the results have them, see :func:`_view`)."""
    from . import plots, tables

    figures = list(plots.FIGURES) + (list(plots.ADDED_FIGURES) if layerwise else [])
    names = [f"fig{i:02d}_{name}.{fmt}" for i, name in enumerate(figures, start=1)
             for fmt in formats]
    names += [f"table_{name}{suffix}" for name in tables.TABLES for suffix in (".md", ".tex")]
    if layerwise:
        names += [f"table_{LAYERS_TABLE}{suffix}" for suffix in (".md", ".tex")]
    return names + ["README.md"]


#: The layer-wise table's name (``table_layers.md`` / ``.tex``): ncprobe's, not the study's.
LAYERS_TABLE = "layers"


class _View(NamedTuple):
    """What the figures show: the options of each figure, and whether the layer-wise figure
    and table are written."""

    options: dict[str, dict]
    layerwise: bool
    space: str
    level: str


def _view(results, space: str | None, level: str | None) -> _View:
    """The figures' options for ``space`` and ``level`` (``None``: the figures' defaults).

    Raises:
        UsageError: a space or level that is not one, or that the results do not hold.
    """
    from . import plots
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
    options: dict[str, dict] = {}
    names = list(plots.FIGURES)
    for i, name in enumerate(names):
        kw = {} if space is None else {"space": space}
        if level is not None and i >= 2:  # figures 3-10; figures 1-2 are one level each
            kw["level"] = level
        options[name] = kw
    space, level = space or "raw", level or "nc"
    layerwise = bool(layerwise_views(results.correlations, space=space, level=level))
    if layerwise:
        options.update({name: {"space": space, "level": level} for name in plots.ADDED_FIGURES})
    return _View(options, layerwise, space, level)


def _own_files(out: Path) -> tuple[set[str], bool]:
    """The files of ``out`` that an earlier ncprobe report wrote (and may be replaced).

    Returns:
        ``(names, listed)``: ``listed`` when a manifest names them (then files it names
        that this report does not write are removed as stale).
    """
    def regular(name: str) -> bool:
        try:
            return stat.S_ISREG(os.lstat(out / name).st_mode)
        except FileNotFoundError:
            return False

    try:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
        names = {n for n in manifest["files"] if isinstance(n, str) and "/" not in n}
        return {n for n in names if regular(n)}, True
    except FileNotFoundError:
        pass
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise UsageError(f"{out / MANIFEST} cannot be read ({e}): it says which files of {out} "
                         "ncprobe wrote; remove the directory by hand or choose another --out"
                         ) from None
    try:  # a report of ncprobe <= 0.1: recognised by its index
        with open(out / "README.md", encoding="utf-8") as fh:
            head = fh.read(64)
    except (OSError, UnicodeDecodeError):
        return set(), False
    if not head.startswith("# ncprobe report\n"):
        return set(), False
    return {n for n in os.listdir(out) if _OLD_REPORT_RE.match(n) and regular(n)}, False


def _refuse_foreign(out: Path, planned: list[str], ours: set[str]) -> None:
    clash = [n for n in planned if os.path.lexists(out / n) and n not in ours]
    if clash:
        shown = ", ".join(clash[:6]) + (f" and {len(clash) - 6} more" if len(clash) > 6 else "")
        raise UsageError(f"{out} holds files that ncprobe did not write and a report would "
                         f"replace ({shown}); nothing was written: choose another --out, or "
                         "move those files")


def _render(name: str, results, formats: Sequence[str], dpi: int, rc: dict | None = None,
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
    return blobs, notes


def _warm() -> None:
    """A worker's first task, run while its parent computes: import what drawing needs and
    draw one small figure, so that fonts and the renderers are loaded before the first
    real figure."""
    import matplotlib

    matplotlib.use("Agg")  # a worker: ncprobe's own process

    from . import plots

    with plots._style():
        fig = plots._new_figure(figsize=(1, 1), layout="constrained")
        ax = fig.add_subplot()
        ax.boxplot([[0.0, 1.0, 2.0]])
        ax.set_title("A$_{x}$")
        for fmt in ("png", "pdf"):
            fig.savefig(io.BytesIO(), format=fmt, bbox_inches="tight")


def _ignore_interrupt() -> None:
    """Ctrl-C reaches every process of the terminal: the caller handles it (it stops the
    workers after their current figure), so a worker ignores it."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


class FigureWorkers:
    """Worker processes that draw figures for :func:`write_report`.

    Started on entering the ``with`` block: each imports matplotlib and seaborn at once,
    so that a caller with other work first (``reproduce`` computes) overlaps the
    workers' start with it. ``jobs`` counts the calling process too: ``jobs - 1``
    workers are started, none for ``jobs=1``.
    """

    def __init__(self, jobs: int) -> None:
        if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
            raise UsageError(f"jobs={jobs!r}: give a whole number of processes, 1 or more")
        self.jobs = jobs
        self.pool: ProcessPoolExecutor | None = None  # started by __enter__ for jobs > 1

    def __enter__(self) -> "FigureWorkers":
        if self.jobs > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            self.pool = ProcessPoolExecutor(max_workers=self.jobs - 1,
                                            mp_context=multiprocessing.get_context("spawn"),
                                            initializer=_ignore_interrupt)
            for _ in range(self.jobs - 1):
                self.pool.submit(_warm)
        return self

    def __exit__(self, *exc) -> None:
        if self.pool is not None:
            # an exception (Ctrl-C included): queued figures are dropped, not drawn
            self.pool.shutdown(wait=True, cancel_futures=exc[0] is not None)
            self.pool = None


def _figures(results, formats: Sequence[str], dpi: int, workers: FigureWorkers,
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


def _write(results, out: Path, formats, examples, dpi, jobs, plots, tables,
           provenance: str | None = None, view: _View | None = None, *,
           correct: Correction = "holm", intervals: bool = True) -> list[Path]:
    view = view or _view(results, None, None)
    written: list[Path] = []
    index = [f"# ncprobe report\n\nMade by ncprobe {__version__} from these runs:\n"]
    for m in results.meta:
        cfg = m["config"]
        if m.get("data_sources", True):
            index.append(f"- {cfg['model']} ({cfg['lang']}): contexts {cfg['contexts']}, layers "
                         f"{cfg.get('layers') or 'default'}, gold {cfg['gold']}")
            continue
        # a user's own stimuli (load_pairs): their languages and contexts, their gold
        cos = results.cosines
        mine = cos[cos["model"] == m.get("model_name", cfg["model"])]
        langs = ", ".join(sorted(map(str, set(mine["lang"])))) or "?"
        ctxs = ",".join(sorted(map(str, set(mine["context"])))) or "?"
        index.append(f"- {cfg['model']} (loaded for {cfg['lang']}) on your own stimuli: "
                     f"languages {langs}, contexts {ctxs}, layers "
                     f"{cfg.get('layers') or 'default'}, gold: the comp scores given")
    index.append("\n## Figures\n")
    index.append(f"Vector space {view.space}; figures 3-10 at "
                 f"{'NC' if view.level == 'nc' else 'sentence'} level.\n")
    figures = _figures(results, formats, dpi, jobs, options=view.options)
    for i, (name, (blobs, notes)) in enumerate(figures, start=1):
        stem = f"fig{i:02d}_{name}"
        added = name in plots.ADDED_FIGURES and name not in plots.FIGURES
        draw = plots.ADDED_FIGURES[name] if added else plots.FIGURES[name]
        if blobs is None:  # NoData: notes holds why
            index.append(f"- {stem}: not drawn: {notes[0]}")
            log.info("%s not drawn: %s", stem, notes[0])
            continue
        for fmt in formats:
            path = out / f"{stem}.{fmt}"
            atomic_write_bytes(path, blobs[fmt])
            written.append(path)
        index.append(f"- `{stem}`: {_first_paragraph(draw.__doc__ or name)}"
                     + (f" ({'; '.join(notes)})" if notes else "")
                     + (" Not a figure of the study: ncprobe's addition." if added else ""))
    index.append("\n## Tables\n")
    index.append(_correction_line(correct, intervals, tables) + "\n")
    for name, build in tables.TABLES.items():
        if name == "examples":
            df = build(results, examples)
        elif name in CORRELATION_TABLES:
            df = build(results, correct=correct, intervals=intervals)
        elif name == "class_tests":  # the tests the figures by class mark, at their view
            df = build(results, level=view.level, space=view.space, correct=correct)
        else:
            df = build(results)
        if df.empty:
            index.append(f"- table_{name}: empty for these results")
            continue
        caption = tables.caption(name, df)
        for suffix, text in ((".md", f"{caption}\n\n{tables.to_markdown(df)}"),
                             (".tex", tables.to_latex(df, caption))):
            path = out / f"table_{name}{suffix}"
            atomic_write_text(path, text)
            written.append(path)
        missing = df.attrs.get("missing")
        index.append(f"- `table_{name}`: {caption}"
                     + (f" (not in these results: {', '.join(missing)})" if missing else ""))
    if view.layerwise:
        df = tables.layers(results, level=view.level, space=view.space, correct=correct,
                           intervals=intervals)
        caption = (f"{tables.CAPTIONS['layers']}; {'NC' if view.level == 'nc' else 'sentence'} "
                   f"level, {view.space} space ({df.attrs['note']})")
        for suffix, text in ((".md", f"{caption}\n\n{tables.to_markdown(df)}"),
                             (".tex", tables.to_latex(df, caption))):
            path = out / f"table_{LAYERS_TABLE}{suffix}"
            atomic_write_text(path, text)
            written.append(path)
        index.append(f"- `table_{LAYERS_TABLE}`: {caption}. Not a table of the study: "
                     "ncprobe's addition.")
    if provenance:
        index.append("\n" + provenance.rstrip("\n"))
    readme = out / "README.md"
    atomic_write_text(readme, "\n".join(index) + "\n")
    written.append(readme)
    return written


def _correction_line(correct: str, intervals: bool, tables) -> str:
    """The index's sentence on the multiple-comparison correction and the cell format."""
    how = ("not corrected for multiple comparisons (as in the study)" if correct == "none"
           else f"{tables.CORRECTION_NAMES[correct]} (`--correct {correct}`) across the cells "
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
    return re.sub(r":\w+:`~?([^`]+)`", r"\1", text)
