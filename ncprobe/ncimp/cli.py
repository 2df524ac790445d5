"""NCIMP's command line: ``ncprobe run ncimp`` (its shorthand ``ncprobe compute``), its
report and compare options and their runs, and ``ncprobe reproduce`` (every model x language
that runs here, then the study's report). The commands reach them through
:class:`~ncprobe.ncimp.seam.NcimpProbe` only."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..argtypes import comma_list
from ..errors import ModelUnavailableError, UsageError
from ..probes.options import (
    Option,
    cache_options,
    compare_test_options,
    config_from_args,
    config_options,
    data_dir_option,
    jobs_option,
    option,
    print_results,
    say,
)
from ..schema import CORRECTIONS, LEVELS, SPACES

if TYPE_CHECKING:
    from ..probes.base import Probe


def add_compute_arguments(p: argparse.ArgumentParser, config: type) -> None:
    """The options of ``ncprobe compute`` (``ncprobe run ncimp``)."""
    config_options(p, config)  # the fields of RunConfig, in field order
    p.add_argument("--out", metavar="DIR", help="results directory (default: "
                   "results/<model>-<lang>, plus every option that changes results and is not "
                   "its default, e.g. results/minilm-en-layers_all-std)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a results directory that holds a different run (other "
                   "options, model or data); the same run is always replaced, a directory "
                   "that is not ncprobe's never")
    data_dir_option(p)
    cache_options(p)
    p.add_argument("--allow-pickle", action="store_true",
                   help="load a gensim .kv vector file (a Python pickle: it can run code when "
                   "loaded; only for a file you trust)")
    p.add_argument("--allow-gensim-downloader", action="store_true",
                   help="allow --model gensim:NAME and word2vec (English): gensim.downloader "
                   "downloads the vectors and runs Python code from the gensim-data repository")
    p.add_argument("--json", action="store_true",
                   help="print the headline rows as JSON (Spearman's rho of every measure with "
                   "the gold score, per model, language, space, layer view, level and context: "
                   "n, rho, its 95%% interval, p and Holm's p across them) instead of the "
                   "summary")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no summary")


def run_compute(args: argparse.Namespace, config: type) -> int:
    from ..results.store import check_target, check_writable
    from .pipeline import compute, run_dir
    from .results import NCIMP_LAYOUT

    cfg = config_from_args(args, config)
    out = args.out or run_dir("results", cfg.model, cfg.lang, cfg)
    # refuse before computing when --out holds another run (or is not ncprobe's), or cannot
    # be written there (read-only, no permission: exit 6)
    check_target(out, cfg.to_dict(), layout=NCIMP_LAYOUT, overwrite=args.overwrite)
    check_writable(out)
    with warnings.catch_warnings():
        # the notes of the run repeat every warning; the summary prints them once
        warnings.simplefilter("ignore")
        res = compute(cfg, data_dir=args.data_dir, cache=not args.no_cache,
                      cache_dir=args.cache_dir, progress=not args.quiet,
                      allow_pickle=args.allow_pickle,
                      allow_gensim_downloader=args.allow_gensim_downloader)
    path = res.to_parquet(out, overwrite=args.overwrite)
    print_results(res, args)
    run = res.meta[0]  # how this computation went: not part of the results (RUN_LOG_KEYS)
    print(f"{run['encoded']} of {run['unique']} unique items encoded now, the others read "
          "from the embedding cache", file=sys.stderr)
    print(f"results written to {path}", file=sys.stderr)
    return 0


def report_ncimp(args: argparse.Namespace, formats) -> int:
    """``ncprobe report`` of NCIMP results: the study's figures and tables."""
    from .report import write_report
    from .results import Results

    res = Results.load_many(args.results, exclude=args.exclude,  # never two runs of one cell
                       accept_edited=args.accept_edited_results)
    written = write_report(res, args.out, formats=formats,
                           examples=comma_list(args.examples) if args.examples else None,
                           jobs=args.jobs, space=args.space, level=args.level,
                           correct=args.correct, intervals=not args.compact_tables,
                           progress=None if args.quiet else say, overwrite=args.overwrite)
    print(f"{len(written)} files written to {args.out}")
    return 0


#: The options of ``reproduce`` that every probe it covers takes (the others are the study's
#: runs' and report's: refused when ``--probes`` leaves NCIMP out).
SHARED_REPRODUCE = ("help", "probes", "out", "results_dir", "overwrite", "data_dir", "no_cache",
                    "cache_dir", "quiet", "resume")


def add_reproduce_parser(sub, config: type, *, known: Sequence[str] = ("ncimp",)
                         ) -> argparse.ArgumentParser:
    """``reproduce``'s parser (``known``: the names ``--probes`` takes, NCIMP's first:
    :meth:`~ncprobe.ncimp.seam.NcimpProbe.commands`)."""
    from ..executors import executor_class, executor_names

    p = sub.add_parser(
        "reproduce", help="compute every available model x language, then the report",
        description="Run `ncprobe compute` for every model and language that can run here "
        "(models whose weights, package, GPU, key or network are missing are skipped with one "
        "line saying why), save each run under --results-dir, then write every figure and "
        "table of the study into --out. --layers and --device go to the models they apply to "
        "(transformers; --device to ELMo too); the others run without them, with a note. "
        "With --executor slurm each run is one task of a SLURM job array, and the report is "
        "drawn once every task has ended.")
    p.add_argument("--probes", default=known[0], metavar="P1,P2",
                   help=f"what to reproduce, a comma list of {', '.join(known)}, or all: "
                   f"{known[0]} (the default) computes the study's runs and draws its figures "
                   "and tables into --out, as always; each other probe computes the values a "
                   "paper printed (the data file ncprobe/data/published.tsv) and every one is "
                   "checked in one verification table, --out/verification/verification.md, "
                   ".tex and .csv")
    p.add_argument("--models", default=None, metavar="M1,M2",
                   help="comma list (default: glove-6b-50d, minilm and every alias of the "
                   "study)")
    p.add_argument("--langs", default="en,pt", help="comma list (default: en,pt)")
    p.add_argument("--out", metavar="DIR", default="reproduce",
                   help="figures and tables (default: reproduce)")
    p.add_argument("--results-dir", metavar="DIR", default="results",
                   help="one results directory per run (default: results)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace results directories that hold a different run")
    config_options(p, config, names=REPRODUCE_OPTIONS)
    data_dir_option(p)
    cache_options(p)
    p.add_argument("--quiet", action="store_true",
                   help="no progress bars, no progress of the report on stderr")
    for o in (*table_options(), jobs_option()):
        o.add(p)
    p.add_argument("--executor", choices=executor_names(), default="local",
                   help="where the runs compute: local (here, one after the other; the "
                   "default) or slurm (one SLURM array task per run, through submitit)")
    p.add_argument("--resume", action=argparse.BooleanOptionalAction, default=None,
                   help="keep the runs already finished (a results directory holding the "
                   "same run, from unchanged data) instead of computing them again (default: "
                   "yes with --executor slurm, no with local)")
    for name in executor_names():
        executor_class(name).add_arguments(p)
    # what an option of the study's runs is when not given: refused when given without ncimp
    p.set_defaults(reproduce_defaults={a.dest: a.default for a in p._actions
                                       if a.dest not in SHARED_REPRODUCE})
    return p


def run_reproduce(args: argparse.Namespace, config: type, *,
                  probes: Sequence["Probe"] = (), own: str = "ncimp") -> int:
    """``ncprobe reproduce``: ``probes`` are those that check published values
    (:func:`ncprobe.probes.verifiers`, through :attr:`~ncprobe.probes.base.Probe.peers`),
    ``own`` NCIMP's name (the study's runs and figures)."""
    import time

    from ..verify import check_probes, check_verification_dir

    verifiers = {p.name: p for p in probes}
    chosen = check_probes(comma_list(args.probes), [own, *verifiers])
    if own not in chosen:
        _refuse_study_options(args, chosen, own)
    t0 = time.perf_counter()
    checked = [verifiers[name] for name in chosen if name != own]
    where = Path(args.out) / "verification"
    if checked:  # refused before any work, as the report's directory
        check_verification_dir(where)
    if own in chosen:
        _reproduce_study(args, config, t0, before=lambda: _verification(args, checked, where)
                         if checked else None)
    else:
        _verification(args, checked, where)
    return 0


def _refuse_study_options(args: argparse.Namespace, chosen: Sequence[str], own: str) -> None:
    """Refuse the options of the study's runs and report given when ``--probes`` leaves them
    out: they would do nothing."""
    given = [f"--{dest.replace('_', '-')}" for dest, default in args.reproduce_defaults.items()
             if getattr(args, dest, default) != default]
    if given:
        raise UsageError(f"{', '.join(given)}: option(s) of the study's runs and report, which "
                         f"--probes {','.join(chosen)} leaves out: drop them, or add {own} to "
                         "--probes")


def _verification(args: argparse.Namespace, checked: Sequence["Probe"], where: Path) -> None:
    """Each probe of ``checked`` computes its published values; the verification table is
    written into ``where``."""
    from ..verify import published_rows, summary_line, verification_table, write_verification

    published, measured = [], {}
    for probe in checked:
        rows = published_rows(probe.name)
        published += rows
        measured[probe.name] = probe.verify(
            rows, results_dir=args.results_dir, data_dir=args.data_dir,
            cache=not args.no_cache, cache_dir=args.cache_dir, progress=not args.quiet,
            resume=bool(args.resume), overwrite=args.overwrite,
            say=None if args.quiet else say)
    table = verification_table(published, measured)
    write_verification(table, where, progress=None if args.quiet else say)
    print(f"verification table ({summary_line(table)}) written to {where}")


def _reproduce_study(args: argparse.Namespace, config: type, t0: float, *,
                     before) -> None:
    """The study's runs and report, as ``reproduce`` always made them (``before``: called
    once the output directories are checked, before any run)."""
    import time

    from ..drawing import FigureWorkers
    from ..encoders.registry import study_models
    from ..executors import RunsFailed
    from .report import check_out, most_figures, reproduce_provenance, write_report
    from .reproduce import reproduce

    options = {name: getattr(args, name) for name in REPRODUCE_OPTIONS}
    config_from_args(args, config)  # the run options together, before any work
    executor = _executor(args)
    check_out(args.out)  # a report directory it may not write: refused before computing
    before()
    langs = comma_list(args.langs)

    def on_skip(model, lang, why):
        print(f"skipped {model} ({lang}): {why}", file=sys.stderr)

    # the figure workers start now: their imports overlap the computing
    with FigureWorkers(args.jobs, figures=most_figures()) as workers:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # each run's notes keep its warnings
            rep = reproduce(comma_list(args.models) if args.models else None, langs,
                            results_dir=args.results_dir, data_dir=args.data_dir,
                            cache=not args.no_cache, cache_dir=args.cache_dir,
                            progress=not args.quiet, on_skip=on_skip,
                            overwrite=args.overwrite, **options, **executor)
        for note in rep.notes:
            print(f"note: {note}", file=sys.stderr)
        resumed = set(rep.resumed)
        for model, lang, path in rep.ran:
            if (model, lang, path) in resumed:
                print(f"kept {model} ({lang}) -> {path} (finished earlier; not computed again)")
            else:
                print(f"computed {model} ({lang}) -> {path}")
        for model, lang, why, log in rep.failed:
            print(f"failed {model} ({lang}): {why}" + (f"; log: {log}" if log else ""),
                  file=sys.stderr)
        again = ("run the same command again to compute them: the runs that finished are "
                 "kept")
        if rep.results is None:
            if rep.failed:
                raise RunsFailed(f"every run that could start failed ({len(rep.failed)}; "
                                 f"see above); nothing to report. {again}")
            raise ModelUnavailableError("no model could run here; nothing to report")
        ran = list(dict.fromkeys(model for model, _, _ in rep.ran))
        lost = [(model, lang, f"failed: {why}" + (f" (log: {log})" if log else ""))
                for model, lang, why, log in rep.failed]
        provenance = reproduce_provenance(ran, langs, rep.skipped + lost,
                                          [m for m in study_models() if m not in ran])
        written = write_report(rep.results, args.out, jobs=workers, provenance=provenance,
                               correct=args.correct, intervals=not args.compact_tables,
                               progress=None if args.quiet else say)
    print(f"{len(written)} figures and tables written to {args.out} "
          f"({time.perf_counter() - t0:.0f} s)")
    if rep.failed:
        raise RunsFailed(f"{len(rep.failed)} run(s) failed (see above); the report shows the "
                         f"others. To complete it, {again}")


def _executor(args: argparse.Namespace) -> dict:
    """``reproduce``'s executor keywords from the options; options of another executor than
    the one chosen are refused (exit 2)."""
    from ..executors import executor_class, executor_names

    chosen = executor_class(args.executor)
    for name in executor_names():
        other = executor_class(name)
        given = other.options_from_args(args)
        if other is not chosen and given:
            flags = ", ".join(other.cli_options[k] for k in given)
            raise UsageError(f"{flags}: option(s) of --executor {name}, not of "
                             f"--executor {args.executor}")
    options = chosen.options_from_args(args)
    if not args.quiet:
        options["on_event"] = say
    return {"executor": args.executor, "executor_options": options, "resume": args.resume}


#: The RunConfig fields that ``reproduce`` passes to every run.
REPRODUCE_OPTIONS = ("contexts", "layers", "device", "batch_tokens", "store_dtype", "standardise",
                     "n_boot", "seed")


def table_options() -> tuple[Option, Option]:
    """``--correct`` and ``--compact-tables`` of NCIMP's ``report`` and ``reproduce``."""
    return (option("--correct", choices=CORRECTIONS, default="holm",
                   help="multiple-comparison correction of the p-values each correlation "
                   "table and the correlogram show: their \"-\" and blank cells follow the "
                   "corrected p (default: holm; none: the study's uncorrected marks)"),
            option("--compact-tables", action="store_true",
                   help="correlation cells without their 95%% bootstrap interval (rho alone, "
                   "as in the study; default: 0.59 [0.50, 0.66])"))


def report_options() -> tuple[Option, ...]:
    """The options of ``ncprobe report`` that NCIMP's report takes (beyond every report's)."""
    return (option("--examples", default=None, metavar="NCS",
                   help="comma list of NCs for the example table (default: the six of the "
                   "study)"),
            option("--space", choices=SPACES, default=None,
                   help="vector space of the figures and the layer-wise figure and table "
                   "(default: raw; standardised needs runs computed with --standardise)"),
            option("--level", choices=LEVELS, default=None,
                   help="level of figures 3-10 and the layer-wise figure and table "
                   "(default: nc)"),
            *table_options(), jobs_option())


def compare_options() -> tuple[Option, ...]:
    """The options of ``ncprobe compare`` that NCIMP's comparison takes: the selections of
    each side's rows (``--a``, ``--b``; with them one run may be both sides), and the
    resamples, seed and correction of the tests."""
    from .comparison import SELECT_KEYS

    keys = ", ".join(SELECT_KEYS)
    return (*(option(f"--{side}", dest=f"select_{side}", action="append", default=[],
                     metavar="KEY=VALUE", selects_side=True,
                     help=f"keep side {side.upper()}'s rows with KEY=VALUE (repeatable; KEY "
                     f"one of {keys}). One value compares that key across the sides (shown "
                     "as KEY A / KEY B); a comma list only filters")
              for side in ("a", "b")),
            *compare_test_options())


def compare_ncimp(args: argparse.Namespace, out) -> int:
    """``ncprobe compare`` of NCIMP results: rho differences, cell by cell."""
    from ..probes.commands import differing_options, write_comparison
    from ..significance import CORRECTION_NAMES, STARS_NOTE
    from ..tables import to_latex, to_markdown
    from . import tables
    from .comparison import COMPARE_FAMILY, compare
    from .config import RunConfig

    select_a, select_b = selection_of(args.select_a, "a"), selection_of(args.select_b, "b")
    if args.exclude:  # each --exclude leaves out a directory of one side or the other
        from ..results.store import drop_excluded, find_results

        drop_excluded(find_results([args.results_a] + ([args.results_b] if args.results_b
                                                        else [])), args.exclude)
    a = load_side(args.results_a, args.exclude, args.accept_edited_results)
    b = (load_side(args.results_b, args.exclude, args.accept_edited_results)
         if args.results_b else None)
    if b is not None:  # never two sides of different data in one test
        from .cells import check_same_data

        check_same_data([a, b], [args.results_a, args.results_b])

    def progress(k: int, total: int, cell: str) -> None:
        print(f"test {k}/{total}: {cell}", file=sys.stderr, flush=True)
    df = compare(a, b, select_a=select_a, select_b=select_b, n_boot=args.n_boot,
                 seed=args.seed, correct=args.correct,
                 progress=None if args.quiet else progress, options=True)
    shown = tables.comparison_table(df)
    how = CORRECTION_NAMES.get(args.correct, args.correct)
    bounds = bool(df["p_boot_bound"].any() or df["p_corrected_bound"].any())
    note = (f"diff = rho A - rho B on the n NCs both sides share, [95% paired bootstrap "
            f"interval] ({args.n_boot} resamples of the NCs, seed {args.seed}); p boot: its "
            f"two-sided bootstrap p; Williams t (n - 3 df) and p Williams: a classical "
            f"cross-check; p corrected: p boot {how} across the {int(df['p_boot'].notna().sum())}"
            f" rows, one family ({COMPARE_FAMILY}); sig.: {STARS_NOTE}"
            + (f"; < x: a bound, no resample fell on the other side of 0 (the least bootstrap "
               f"p of {args.n_boot} resamples is 2/{args.n_boot + 1}): the true p is smaller, "
               "sig. credits only what the bound guarantees" if bounds else ""))
    text = to_markdown(shown) + "\n" + note + "\n"
    text += "".join(f"{line}\n" for line in [differing_options(a, b, config=RunConfig)]
                    if line)  # which is which
    print(text, end="")
    if out is not None:
        title = "Differences of Spearman's rho with the gold score (ncprobe compare)"
        write_comparison(out, df, markdown=f"{title}\n\n{text}",
                         latex=to_latex(shown, f"{title}. {note}"),
                         overwrite=args.overwrite)
        print(f"written to {out}", file=sys.stderr)
    return 0


def selection_of(items: Sequence[str], side: str) -> dict[str, str | list[str]] | None:
    """``--a KEY=VALUE ...`` as a selection of :func:`ncprobe.ncimp.comparison.compare`."""
    from ..query import cannot_select_message
    from .comparison import SELECT_KEYS

    sel: dict[str, str | list[str]] = {}
    for item in items:
        key, eq, value = (x.strip() for x in item.partition("="))
        values = [v.strip() for v in value.split(",")]
        if not eq or not key or not all(values):
            raise UsageError(f"--{side} {item!r}: expected KEY=VALUE or KEY=V1,V2 (e.g. --{side} "
                             f"context=neut), KEY one of {', '.join(SELECT_KEYS)}")
        if key not in SELECT_KEYS:
            raise UsageError(cannot_select_message([key], "the per-NC measures table",
                                                   SELECT_KEYS, source=f"--{side} {item!r}"))
        if key in sel:
            raise UsageError(f"--{side} {key}= given twice; give several values as one comma "
                             f"list (--{side} {key}=V1,V2)")
        sel[key] = values[0] if len(values) == 1 else values
    return sel or None


def load_side(path: str, exclude: Sequence[str] = (), accept_edited: bool = False):
    """One side of ``compare``: never two runs of one cell pooled. An ``--exclude`` may
    leave out nothing on this side (``ncprobe compare`` checks it against both sides)."""
    from .results import Results

    return Results.load_many([path], exclude=exclude, accept_edited=accept_edited,
                        require_match=False)
