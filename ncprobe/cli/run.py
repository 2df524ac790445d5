"""``ncprobe compute | report | reproduce``: runs, and the figures and tables made of them."""

from __future__ import annotations

import argparse
import sys
import warnings

from ..errors import ModelUnavailableError, UsageError
from ..schema import LEVELS, SPACES
from ._argtypes import comma_list
from ._options import (
    REPRODUCE_OPTIONS,
    accept_edited_option,
    cache_options,
    config_from_args,
    config_options,
    data_dir_option,
    exclude_option,
    jobs_option,
    print_results,
    say,
    table_options,
)


def add_probes_parser(sub, config: type) -> argparse.ArgumentParser:
    return sub.add_parser(
        "probes", help="list the probes: what each asks, its data, its result tables",
        description="List the probes ncprobe runs (`ncprobe run PROBE`), one line each: its "
        "name, what it asks, its data and its result tables.")


def run_probes(args: argparse.Namespace, config: type) -> int:
    from ..probes import describe

    for line in describe():
        print(line)
    return 0


def add_run_parser(sub, config: type) -> argparse.ArgumentParser:
    from ..probes import probes

    p = sub.add_parser(
        "run", help="run a probe (`ncprobe probes` lists them) on one or more models",
        description="Run one probe: `ncprobe run PROBE --help` lists its options. `ncprobe "
        "compute` is `ncprobe run ncimp`, `ncprobe retrieve` is `ncprobe run idiolink`.")
    psub = p.add_subparsers(dest="probe", metavar="PROBE")
    for probe in probes():
        q = psub.add_parser(probe.name, help=probe.help, description=probe.description)
        probe.add_run_arguments(q, _config_for(probe, config))
    return p


def run_run(args: argparse.Namespace, config: type) -> int:
    from ..probes import get_probe

    probe = get_probe(args.probe)
    return probe.run_from_args(args, _config_for(probe, config))


def add_shorthand_parser(command: str, sub, config: type) -> argparse.ArgumentParser:
    """The parser of ``command``, the shorthand of ``ncprobe run PROBE`` for the probe whose
    :attr:`~ncprobe.probes.base.Probe.shorthand` it is: the same options."""
    probe = _shorthand_probe(command)
    p = sub.add_parser(command, help=probe.help, description=probe.description)
    probe.add_run_arguments(p, _config_for(probe, config))
    return p


def run_shorthand(command: str, args: argparse.Namespace, config: type) -> int:
    probe = _shorthand_probe(command)
    return probe.run_from_args(args, _config_for(probe, config))


def _shorthand_probe(command: str):
    from ..probes import probes

    return next(p for p in probes() if p.shorthand == command)


def _config_for(probe, config: type) -> type:
    """The run options' config of ``probe``: ``config`` (the command line's, e.g. a
    subclass of RunConfig with a field more) where it extends the probe's own, else the
    probe's own."""
    own = probe.config_class()
    return config if isinstance(config, type) and issubclass(config, own) else own


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
    from ..pipeline import compute, run_dir
    from ..results import check_target, check_writable

    cfg = config_from_args(args, config)
    out = args.out or run_dir("results", cfg.model, cfg.lang, cfg)
    # refuse before computing when --out holds another run (or is not ncprobe's), or cannot
    # be written there (read-only, no permission: exit 6)
    check_target(out, cfg.to_dict(), overwrite=args.overwrite)
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


def add_report_parser(sub, config: type) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "report", help="figures and tables from saved results",
        description="Draw the ten figures of the study (PNG and PDF) and write its tables "
        "(Markdown and LaTeX) from one or more results directories written by `ncprobe "
        "compute` or `ncprobe reproduce`.")
    p.add_argument("results", nargs="+", metavar="RESULTS",
                   help="results directories, or directories to search for them (every "
                   "directory below holding a run.json)")
    exclude_option(p)
    accept_edited_option(p)
    p.add_argument("--out", metavar="DIR", default="report", help="output directory "
                   "(default: report)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace the report of another probe that --out holds (an NCIMP "
                   "report by a retrieval report, or the other way round; the files removed "
                   "are listed); without it such a directory is exit 2. Files ncprobe did not "
                   "write are never replaced")
    p.add_argument("--format", default="png,pdf",
                   help="comma list of figure formats: png, pdf, svg, svgz, eps, ps, jpg, jpeg, "
                   "tif, tiff, webp (default: png,pdf)")
    p.add_argument("--examples", default=None, metavar="NCS",
                   help="comma list of NCs for the example table (default: the six of the study)")
    p.add_argument("--space", choices=SPACES, default=None,
                   help="vector space of the figures and the layer-wise figure and table "
                   "(default: raw; standardised needs runs computed with --standardise)")
    p.add_argument("--level", choices=LEVELS, default=None,
                   help="level of figures 3-10 and the layer-wise figure and table (default: "
                   "nc)")
    table_options(p)
    jobs_option(p)
    p.add_argument("--quiet", action="store_true",
                   help="no progress on stderr (each figure and table as it is written)")
    return p


def run_report(args: argparse.Namespace, config: type) -> int:
    from ..drawing import check_formats
    from ..probes import get_probe
    from ..results.store import NCIMP_LAYOUT, results_by_probe

    formats = check_formats(args.format)  # before any results are read
    by_probe = results_by_probe(args.results, args.exclude, require_match=True)
    if len(by_probe) <= 1:
        return get_probe(next(iter(by_probe), NCIMP_LAYOUT.probe)).report_from_args(args, formats)
    return report_each_probe(args, formats, by_probe)


def report_each_probe(args: argparse.Namespace, formats, by_probe: dict) -> int:
    """``ncprobe report`` of results of several probes (``by_probe``: each probe's results
    directories): each probe's report in the subdirectory of ``--out`` named by the probe,
    given only the report options it takes, then an index ``README.md`` linking them. Every
    directory is checked before any report is drawn."""
    from pathlib import Path

    from ..probes import probes
    from ..report_files import check_index_dir, write_index

    found = {p.name: p for p in probes(list(by_probe))}
    own = list(dict.fromkeys(o for p in probes() for o in p.report_options))
    given = [o for o in own if getattr(args, o, None) is not None
             and not any(o in p.report_options for p in found.values())]
    if given:
        raise UsageError(f"{', '.join('--' + o for o in given)}: no report of these results "
                         f"takes it (results of {', '.join(found)})")
    out = Path(args.out)
    check_index_dir(out, list(found), overwrite=args.overwrite)
    if not args.quiet:
        say(f"{args.out}: results of {len(found)} probes ({', '.join(found)}): one report "
            "each, in its own directory")
    for name, probe in found.items():
        mine = {**vars(args), "results": [str(d) for d in by_probe[name]], "exclude": [],
                "out": str(out / name)}
        for option in own:
            if option not in probe.report_options:
                mine[option] = None
        probe.report_from_args(argparse.Namespace(**mine), formats)
    index = write_index(out, {name: [str(d) for d in by_probe[name]] for name in found},
                        overwrite=args.overwrite)
    print(f"index of the {len(found)} reports written to {index}")
    return 0


def report_ncimp(args: argparse.Namespace, formats) -> int:
    """``ncprobe report`` of NCIMP results: the study's figures and tables."""
    from ..report import write_report
    from ..results import Results

    res = Results.load_many(args.results, exclude=args.exclude,  # never two runs of one cell
                       accept_edited=args.accept_edited_results)
    written = write_report(res, args.out, formats=formats,
                           examples=comma_list(args.examples) if args.examples else None,
                           jobs=args.jobs, space=args.space, level=args.level,
                           correct=args.correct, intervals=not args.compact_tables,
                           progress=None if args.quiet else say, overwrite=args.overwrite)
    print(f"{len(written)} files written to {args.out}")
    return 0


def add_reproduce_parser(sub, config: type) -> argparse.ArgumentParser:
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
    table_options(p)
    jobs_option(p)
    p.add_argument("--executor", choices=executor_names(), default="local",
                   help="where the runs compute: local (here, one after the other; the "
                   "default) or slurm (one SLURM array task per run, through submitit)")
    p.add_argument("--resume", action=argparse.BooleanOptionalAction, default=None,
                   help="keep the runs already finished (a results directory holding the "
                   "same run, from unchanged data) instead of computing them again (default: "
                   "yes with --executor slurm, no with local)")
    for name in executor_names():
        executor_class(name).add_arguments(p)
    return p


def run_reproduce(args: argparse.Namespace, config: type) -> int:
    import time

    from ..drawing import FigureWorkers
    from ..encoders.registry import study_models
    from ..executors import RunsFailed
    from ..report import check_out, reproduce_provenance, write_report
    from ..reproduce import reproduce

    options = {name: getattr(args, name) for name in REPRODUCE_OPTIONS}
    config_from_args(args, config)  # the run options together, before any work
    executor = _executor(args)
    check_out(args.out)  # a report directory it may not write: refused before computing
    t0 = time.perf_counter()
    langs = comma_list(args.langs)

    def on_skip(model, lang, why):
        print(f"skipped {model} ({lang}): {why}", file=sys.stderr)

    # the figure workers start now: their imports overlap the computing
    with FigureWorkers(args.jobs) as workers:
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
    return 0


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
