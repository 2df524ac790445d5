"""The ``ncprobe`` command line.

Exit codes a script can rely on: 0 success, 1 unexpected ncprobe error, 2 bad
usage, 3 data error (missing file, bad row), 4 download failed, 5 model not
available here (weights, optional package, GPU or network missing), 130
interrupted (the embedding cache keeps what was encoded: rerun to resume), 141
stdout closed early by its reader (``ncprobe data info --json | head``).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import math
import os
import sys
import types
import typing
import warnings
from typing import Sequence

from ._io import UNWRITABLE_ERRNOS, output_error
from ._version import VERSION as __version__
from .config import DEFAULT_MODEL, RunConfig
from .data.sources import DEFAULT_BACKOFF, DEFAULT_RETRIES, DEFAULT_TIMEOUT, check_download_options
from .errors import DataError, DataErrors, ModelUnavailableError, NcprobeError, UsageError

#: Exit code of a bad option or argument, or of no command (help printed).
EXIT_USAGE = UsageError.exit_code
#: Exit code when interrupted (Ctrl-C), as for a process killed by SIGINT (128 + 2).
EXIT_INTERRUPTED = 130
#: Exit code when stdout is a pipe closed early, as for a process killed by SIGPIPE.
EXIT_BROKEN_PIPE = 141
#: The RunConfig fields that ``reproduce`` passes to every run.
REPRODUCE_OPTIONS = ("contexts", "layers", "device", "standardise", "n_boot", "seed")

_DESCRIPTION = f"""\
Probe the embedding spaces of language models for idiomaticity, on the NCIMP
noun-compound minimal pairs of He et al. (Computational Linguistics, 2025).

Start with:
  ncprobe data download        fetch the NCIMP files (pinned, verified)
  ncprobe data info            what is there: NCs, classes, contexts, probes
  ncprobe compute              every measure for one model and language
                               (default: {DEFAULT_MODEL} on English, offline)
"""


def _count(text: str) -> int:
    """argparse type: a whole number >= 0 (checked while parsing, before any work)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, not {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, not {value}")
    return value


def _seconds(positive: bool):
    """argparse type: a finite number of seconds, > 0 (``positive``) or >= 0."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0 or (positive and value == 0):
            raise argparse.ArgumentTypeError(
                f"expected a number of seconds {'> 0' if positive else '>= 0'}, not {text!r}")
        return value
    parse.__name__ = "seconds"  # what argparse names in its message
    return parse


def _url_template(text: str) -> str:
    """argparse type: a download URL template with known placeholders only."""
    try:
        check_download_options(url_template=text)
    except UsageError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of 1 or more")
    return value


def _jobs_option(p) -> None:
    default = min(os.cpu_count() or 1, 4)
    p.add_argument("--jobs", type=_positive_int, default=default, metavar="N",
                   help="processes that draw the figures, this one included (default: the "
                   "CPUs, at most 4; here %(default)s); the files do not depend on it")


def _accept_edited_option(p) -> None:
    """``--accept-edited-results`` of ``report`` and ``compare``."""
    p.add_argument("--accept-edited-results", action="store_true",
                   help="read results directories edited since ncprobe wrote them (a table "
                   "or run.json changed by hand or rewritten by another program); without it "
                   "such a directory is exit 3. What was edited is said in the output")


def _exclude_option(p) -> None:
    """``--exclude`` of ``report`` and ``compare``: runs of one cell are never pooled."""
    p.add_argument("--exclude", action="append", default=[], metavar="DIR",
                   help="leave out this results directory, or every one below DIR "
                   "(repeatable). Two results directories holding the same cell (model, "
                   "language, space, layers, level, context, measure: a rerun, a copy, two "
                   "models of one name) are never pooled: the command refuses, naming both, "
                   "until one is left out")


def _table_options(p) -> None:
    """``--correct`` and ``--compact-tables`` of ``report`` and ``reproduce``."""
    from .stats import CORRECTIONS

    p.add_argument("--correct", choices=CORRECTIONS, default="holm",
                   help="multiple-comparison correction of the p-values each correlation "
                   "table and the correlogram show: their \"-\" and blank cells follow the "
                   "corrected p (default: holm; none: the study's uncorrected marks)")
    p.add_argument("--compact-tables", action="store_true",
                   help="correlation cells without their 95%% bootstrap interval (rho alone, "
                   "as in the study; default: 0.59 [0.50, 0.66])")


def _data_dir_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", metavar="DIR",
                   help="NCIMP data directory (default: $NCPROBE_DATA, else the user cache)")


def config_options(parser, config: type | None = None,
                   names: Sequence[str] | None = None) -> None:
    """Add one option per field of ``config`` (default :class:`RunConfig`), or per field in
    ``names``, in field order, built from the field alone.

    The option is ``--<name>`` (``_`` as ``-``) or the field's ``option`` metadata, with
    ``dest`` the field's name, the field's default, its ``help`` and ``metavar`` metadata,
    the values of a ``Literal`` type as choices (an optional one, ``dtype``, is not
    restricted: the encoders take other spellings too), a flag for a ``bool`` and a number
    for an ``int`` or ``float``. Other values are checked by ``config`` itself, in
    :func:`config_from_args`.
    """
    config = config or RunConfig
    hints = typing.get_type_hints(config)
    for f in dataclasses.fields(config):
        if names is not None and f.name not in names:
            continue
        kw = {"dest": f.name, "default": _default(f), "help": f.metadata.get("help")}
        hint = hints[f.name]
        if hint is bool:
            kw["action"] = argparse.BooleanOptionalAction if kw["default"] else "store_true"
        else:
            if typing.get_origin(hint) is typing.Literal:
                kw["choices"] = typing.get_args(hint)
            if typing.get_origin(hint) in (typing.Union, types.UnionType):  # X | None: X
                hint = next(a for a in typing.get_args(hint) if a is not type(None))
            if hint in (int, float):
                kw["type"] = hint
            if "metavar" in f.metadata:
                kw["metavar"] = f.metadata["metavar"]
        parser.add_argument(_option(f), **kw)


def _option(f: dataclasses.Field) -> str:
    """The option of a config field: its ``option`` metadata, else ``--`` and its name."""
    return f.metadata.get("option", "--" + f.name.replace("_", "-"))


def _default(f: dataclasses.Field):
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    # every config field has a default: an option left out must take one
    raise TypeError(f"config field {f.name!r} has no default")


def config_from_args(args: argparse.Namespace, config: type | None = None):
    """The ``config`` (default :class:`RunConfig`) of the options parsed into ``args`` (the
    fields it has no option for at their defaults).

    ``config`` checks the values: first each option given alone (the other fields at their
    defaults), then all of them together.

    Raises:
        UsageError: a value ``config`` refuses; the message names its option (or the
            options refused together) and says why.
    """
    config = config or RunConfig
    fields = [f for f in dataclasses.fields(config) if hasattr(args, f.name)]
    values = {f.name: getattr(args, f.name) for f in fields}
    given = [f for f in fields if values[f.name] != _default(f)]
    for group in [[f] for f in given] + [given]:
        try:
            made = config(**{f.name: values[f.name] for f in group})
        except ValueError as e:
            named = ", ".join(_option(f) if values[f.name] is True
                              else f"{_option(f)} {values[f.name]}" for f in group)
            raise UsageError(f"{named}: {e}") from None
    return made


def build_parser(config: type | None = None) -> argparse.ArgumentParser:
    """The ``ncprobe`` parser; the run options of ``compute`` and ``reproduce`` are the fields
    of ``config`` (default :class:`RunConfig`, see :func:`config_options`)."""
    parser = argparse.ArgumentParser(
        prog="ncprobe", description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"ncprobe {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more log output (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    data = sub.add_parser("data", help="fetch, inspect and validate the NCIMP data",
                          description="Fetch, inspect and validate the NCIMP data files.")
    dsub = data.add_subparsers(dest="data_command", metavar="ACTION")

    p = dsub.add_parser("download", help="fetch the pinned upstream files and verify them",
                        description="Fetch every NCIMP file pinned in ncprobe's manifest from "
                        "its upstream commit, verify it by its git blob SHA-1 and write it "
                        "atomically. Files already verified are skipped; corrupt ones are "
                        "fetched again.")
    _data_dir_option(p)
    p.add_argument("--url", metavar="URL", type=_url_template,
                   help="base URL or template with {owner} {repo} {commit} {path} "
                   "(default: https://raw.githubusercontent.com/{owner}/{repo}/{commit}/{path})")
    p.add_argument("--retries", type=_count, default=DEFAULT_RETRIES, metavar="N",
                   help="further attempts per file after a network error, a cut-off transfer, "
                   f"a timeout, HTTP 5xx or 429 (default {DEFAULT_RETRIES})")
    p.add_argument("--timeout", type=_seconds(positive=True), default=DEFAULT_TIMEOUT,
                   metavar="SECONDS", help="seconds to wait for the server to connect or send "
                   f"more bytes, per request (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--deadline", type=_seconds(positive=True), default=None,
                   metavar="SECONDS", help="seconds each file may take in all, retries "
                   "included: stops a server that sends a byte now and then (default: 60, or "
                   "the file's pinned size at 50 kB/s when longer)")
    p.add_argument("--backoff", type=_seconds(positive=False), default=DEFAULT_BACKOFF,
                   metavar="SECONDS", help="wait before the first retry, doubled for each next "
                   f"one (default {DEFAULT_BACKOFF:g})")

    p = dsub.add_parser("info", help="what is present, and the counts of NCs and stimuli",
                        description="Show which files are present and verified, and per "
                        "language the NCs, scores, classes, contexts and stimuli per context.")
    _data_dir_option(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")

    p = dsub.add_parser("check", help="validate every file; non-zero exit with per-row errors",
                        description="Verify every file against its pinned git blob id, parse "
                        "every tag column and load every stimulus; print each problem with its "
                        "file, row and column. Exit 3 when anything is wrong.")
    _data_dir_option(p)

    p = dsub.add_parser("path", help="print the data directory in use")
    _data_dir_option(p)

    p = sub.add_parser(
        "compute", help="cosines, measures and correlations for one model and language",
        description="Encode the NCIMP stimuli with one model, compare every probe with its "
        "original, compute the measures of the study (Sim, Affinity, Scaled Similarity, ratio, "
        "rogue dimensions) and their Spearman correlations with the gold compositionality "
        "score, write the results (parquet + run.json) and print a summary.")
    config_options(p, config)  # the fields of RunConfig, in field order
    p.add_argument("--out", metavar="DIR", help="results directory (default: "
                   "results/<model>-<lang>, plus every option that changes results and is not "
                   "its default, e.g. results/minilm-en-layers_all-std)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a results directory that holds a different run (other "
                   "options, model or data); the same run is always replaced, a directory "
                   "that is not ncprobe's never")
    _data_dir_option(p)
    p.add_argument("--no-cache", action="store_true",
                   help="encode everything and store nothing in the embedding cache")
    p.add_argument("--cache-dir", metavar="DIR", help="embedding cache root (default: "
                   "$NCPROBE_CACHE or the user cache directory)")
    p.add_argument("--allow-pickle", action="store_true",
                   help="load a gensim .kv vector file (a Python pickle: it can run code when "
                   "loaded; only for a file you trust)")
    p.add_argument("--allow-gensim-downloader", action="store_true",
                   help="allow --model gensim:NAME and word2vec (English): gensim.downloader "
                   "downloads the vectors and runs Python code from the gensim-data repository")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no summary")

    p = sub.add_parser(
        "report", help="figures and tables from saved results",
        description="Draw the ten figures of the study (PNG and PDF) and write its tables "
        "(Markdown and LaTeX) from one or more results directories written by `ncprobe "
        "compute` or `ncprobe reproduce`.")
    p.add_argument("results", nargs="+", metavar="RESULTS",
                   help="results directories, or directories to search for them (every "
                   "directory below holding a run.json)")
    _exclude_option(p)
    _accept_edited_option(p)
    p.add_argument("--out", metavar="DIR", default="report", help="output directory "
                   "(default: report)")
    p.add_argument("--format", default="png,pdf",
                   help="comma list of figure formats: png, pdf, svg, svgz, eps, ps, jpg, jpeg, "
                   "tif, tiff, webp (default: png,pdf)")
    p.add_argument("--examples", default=None, metavar="NCS",
                   help="comma list of NCs for the example table (default: the six of the study)")
    p.add_argument("--space", choices=("raw", "standardised"), default=None,
                   help="vector space of the figures and the layer-wise figure and table "
                   "(default: raw; standardised needs runs computed with --standardise)")
    p.add_argument("--level", choices=("sent", "nc"), default=None,
                   help="level of figures 3-10 and the layer-wise figure and table (default: "
                   "nc)")
    _table_options(p)
    _jobs_option(p)
    p.add_argument("--quiet", action="store_true",
                   help="no progress on stderr (each figure and table as it is written)")

    p = sub.add_parser(
        "reproduce", help="compute every available model x language, then the report",
        description="Run `ncprobe compute` for every model and language that can run here "
        "(models whose weights, package, GPU, key or network are missing are skipped with one "
        "line saying why), save each run under --results-dir, then write every figure and "
        "table of the study into --out. --layers and --device go to the models they apply to "
        "(transformers; --device to ELMo too); the others run without them, with a note.")
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
    _data_dir_option(p)
    p.add_argument("--no-cache", action="store_true", help="do not use the embedding cache")
    p.add_argument("--cache-dir", metavar="DIR", help="embedding cache root")
    p.add_argument("--quiet", action="store_true",
                   help="no progress bars, no progress of the report on stderr")
    _table_options(p)
    _jobs_option(p)

    _compare_parser(sub)
    _pairs_parser(sub)

    sub.add_parser("models", help="list the model aliases and what each needs",
                   description="List the model aliases of the study (per language), the two "
                   "offline models, and what each needs (what to pip install, GPU, API key). "
                   "Any HuggingFace id, local model directory or vector file works as well.")

    cache = sub.add_parser("cache", help="inspect or clear the embedding cache",
                           description="The embedding cache keeps pooled vectors per model "
                           "fingerprint ($NCPROBE_CACHE, else the user cache directory).")
    csub = cache.add_subparsers(dest="cache_command", metavar="ACTION")
    for action, text in (("info", "list cached models, items and sizes"),
                         ("clear", "delete cached vectors (all, or one model with --model)")):
        p = csub.add_parser(action, help=text, description=text)
        p.add_argument("--cache-dir", metavar="DIR", help="cache root (default: $NCPROBE_CACHE "
                       "or the user cache directory)")
        if action == "clear":
            p.add_argument("--model", help="only this model name (as `cache info` lists "
                           "it); exit 2 when none is cached")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``ncprobe`` command; return its exit code (see the module docstring)."""
    try:
        code = _run(argv)
        # flush here, not at interpreter exit, so a closed pipe is caught below
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # the reader of stdout went away (`ncprobe data info --json | head`): what Python's
        # signal docs ("Note on SIGPIPE") recommend, point stdout at devnull so the flush at
        # exit does not raise again, then exit as a process killed by SIGPIPE would (128 + 13)
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # stdout without a file descriptor (captured)
            pass
        return EXIT_BROKEN_PIPE


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        if args.command == "data":
            return _data(args, parser)
        if args.command == "compute":
            return _compute(args)
        if args.command == "report":
            return _report(args)
        if args.command == "reproduce":
            return _reproduce(args)
        if args.command == "compare":
            return _compare(args)
        if args.command == "pairs":
            return _pairs(args, parser)
        if args.command == "models":
            return _models()
        if args.command == "cache":
            return _cache(args, parser)
    except DataErrors as e:
        for err in e.errors:
            print(f"error: {err}", file=sys.stderr)
        return e.exit_code
    except NcprobeError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as e:
        # the last net for a write that no writer named itself: a read-only or full disk,
        # no permission. Anything else is a bug and keeps its traceback (exit 1).
        if e.errno not in UNWRITABLE_ERRNOS:
            raise
        unwritable = output_error(e)
        print(f"error: {unwritable}", file=sys.stderr)
        return unwritable.exit_code
    parser.print_help()
    return EXIT_USAGE


def _data(args, parser) -> int:
    """``ncprobe data ACTION``: the action's function, given the data directory in use."""
    from .data import sources

    if args.data_command is None:
        _subparser(parser, "data").print_help()
        return EXIT_USAGE
    action = {"path": _data_path, "download": _data_download, "check": _data_check,
              "info": _data_info}[args.data_command]
    return action(sources.resolve_data_dir(args.data_dir), args)


def _data_path(root, args) -> int:
    print(root)
    return 0


def _data_download(root, args) -> int:
    from .data import sources

    def progress(path: str, status: str) -> None:
        print(f"  {status:<12} {path}", file=sys.stderr)
    print(f"downloading NCIMP into {root}", file=sys.stderr)
    report = sources.download(root, url_template=args.url, retries=args.retries,
                              timeout=args.timeout, backoff=args.backoff,
                              deadline=args.deadline, progress=progress)
    print(report.summary())
    return 0


def _data_check(root, args) -> int:
    from .data.check import check

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = check(root)
    for w in caught:
        print(f"warning: {w.message}")
    for line in report.tolerated + report.notes:
        print(f"note: {line}")
    for err in report.errors:
        print(f"error: {err}", file=sys.stderr)
    print(f"{len(report.errors)} error(s) in {root}")
    return 0 if report.ok else DataError.exit_code


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def _compute(args) -> int:
    from .pipeline import compute, run_dir
    from .results import check_target, check_writable

    cfg = config_from_args(args)
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
    if not args.quiet:
        print(res.summary())
    run = res.meta[0]  # how this computation went: not part of the results (RUN_LOG_KEYS)
    print(f"{run['encoded']} of {run['unique']} unique items encoded now, the others read "
          "from the embedding cache", file=sys.stderr)
    print(f"results written to {path}", file=sys.stderr)
    return 0


def _report(args) -> int:
    from .report import check_formats, write_report
    from .results import load_results

    formats = check_formats(args.format)  # before any results are read
    res = load_results(args.results, exclude=args.exclude,  # never two runs of one cell
                       accept_edited=args.accept_edited_results)
    written = write_report(res, args.out, formats=formats,
                           examples=_comma_list(args.examples) if args.examples else None,
                           jobs=args.jobs, space=args.space, level=args.level,
                           correct=args.correct, intervals=not args.compact_tables,
                           progress=None if args.quiet else _say)
    print(f"{len(written)} files written to {args.out}")
    return 0


def _comma_list(text: str) -> list[str]:
    return [x.strip() for x in text.split(",")]


def _say(line: str) -> None:
    """One line of progress on stderr (``--quiet`` leaves it out); stdout stays for results."""
    print(line, file=sys.stderr, flush=True)


def _reproduce(args) -> int:
    import time

    from .encoders.registry import study_models
    from .report import FigureWorkers, check_out, reproduce_provenance, write_report
    from .reproduce import reproduce

    options = {name: getattr(args, name) for name in REPRODUCE_OPTIONS}
    config_from_args(args)  # the run options together, before any work
    check_out(args.out)  # a report directory it may not write: refused before computing
    t0 = time.perf_counter()
    langs = _comma_list(args.langs)

    def on_skip(model, lang, why):
        print(f"skipped {model} ({lang}): {why}", file=sys.stderr)

    # the figure workers start now: their imports overlap the computing
    with FigureWorkers(args.jobs) as workers:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # each run's notes keep its warnings
            rep = reproduce(_comma_list(args.models) if args.models else None, langs,
                            results_dir=args.results_dir, data_dir=args.data_dir,
                            cache=not args.no_cache, cache_dir=args.cache_dir,
                            progress=not args.quiet, on_skip=on_skip,
                            overwrite=args.overwrite, **options)
        for note in rep.notes:
            print(f"note: {note}", file=sys.stderr)
        for model, lang, path in rep.ran:
            print(f"computed {model} ({lang}) -> {path}")
        if rep.results is None:
            raise ModelUnavailableError("no model could run here; nothing to report")
        ran = list(dict.fromkeys(model for model, _, _ in rep.ran))
        provenance = reproduce_provenance(ran, langs, rep.skipped,
                                          [m for m in study_models() if m not in ran])
        written = write_report(rep.results, args.out, jobs=workers, provenance=provenance,
                               correct=args.correct, intervals=not args.compact_tables,
                               progress=None if args.quiet else _say)
    print(f"{len(written)} figures and tables written to {args.out} "
          f"({time.perf_counter() - t0:.0f} s)")
    return 0


def _band(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number > 0")
    return value


def _pairs_parser(sub) -> None:
    pairs = sub.add_parser("pairs", help="your own compounds: generate their probe sentences",
                           description="Work with your own compounds in the minimal-pairs "
                           "format of ncprobe.load_pairs.")
    psub = pairs.add_subparsers(dest="pairs_command", metavar="ACTION")
    p = psub.add_parser(
        "generate", help="generate P_Comp, P_Rand (and P_Syn/P_WordsSyn from given synonyms)",
        description="Read compounds in context (CSV or JSON Lines: nc, sentence, start/end "
        "or span, head, modifier; optional comp, class, syn, wordssyn, context, lang) and "
        "write a pairs file for review: the original, P_Comp (head alone, modifier alone), "
        "--k frequency-matched random phrases (P_Rand: wordfreq Zipf frequency within "
        "--band of each word they replace, seeded), and P_Syn/P_WordsSyn from the synonyms "
        "given (';' between several). Every word outside the compound is kept. A row "
        "without a context column (or with it empty) is context S1, the first naturalistic "
        "sentence: results and reports count it as naturalistic (nat); give S1/S2/S3 for "
        "several sentences of one compound, N for a neutral one. head and modifier must be "
        "whole words of the compound and a given span must hold exactly its words; every "
        "offending row is named and nothing is written (exit 3). Needs the generate extra: "
        'pip install "ncprobe[generate]" (exit 5 without it).')
    p.add_argument("input", metavar="IN", help="the compounds in context (.csv or .jsonl)")
    p.add_argument("--lang", help="language of rows without a lang column (a language code "
                   "wordfreq covers: en, pt, fr, de, es, it, nl, ...)")
    p.add_argument("--out", required=True, metavar="FILE", help="the pairs file to write "
                   "(.csv)")
    p.add_argument("--k", type=_count, default=5, metavar="N",
                   help="random phrases per sentence (default %(default)s, as the study)")
    p.add_argument("--seed", type=_count, default=0, help="seed of the random draw "
                   "(default %(default)s)")
    p.add_argument("--band", type=_band, default=0.5, metavar="ZIPF",
                   help="half-width of the Zipf band around each word (default %(default)s)")
    p.add_argument("--head", choices=("first", "last", "ask"), default=None,
                   help="for rows without head/modifier: the first or last part of a "
                   "two-part compound is the head, or ask for each compound on the terminal")
    p.add_argument("--scale", type=float, nargs=2, default=(0, 5), metavar=("LOW", "HIGH"),
                   help="the range of the comp gold scores (default 0 5, as NCIMP); a score "
                   "outside it is a bad row (exit 3)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.add_argument("--quiet", action="store_true", help="no progress (on stderr), no summary")


def _ask_head(nc: str, parts: tuple[str, ...]) -> str:
    """Ask on the terminal which part of ``nc`` is its head (``--head ask``)."""
    choices = "/".join(parts)
    while True:
        try:
            answer = input(f"head of {nc!r} [{choices}]: ").strip()
        except EOFError:
            raise UsageError(f"no answer for the head of {nc!r} (input ended); give head and "
                             "modifier columns, or --head first|last") from None
        if answer in parts:
            return answer
        print(f"  answer one of {choices}", file=sys.stderr)


def _pairs(args, parser) -> int:
    from .data.generate import generate_pairs

    if args.pairs_command is None:
        _subparser(parser, "pairs").print_help()
        return EXIT_USAGE
    # progress on stderr: on a terminal one line that rewrites itself and is cleared at the
    # end (as a progress bar), elsewhere (a log file) one line per step
    tty = sys.stderr.isatty()
    shown = False

    def progress(line: str) -> None:
        nonlocal shown
        shown = True
        print(f"\r\x1b[Kpairs generate: {line}" if tty else f"pairs generate: {line}",
              end="" if tty else "\n", file=sys.stderr, flush=True)

    def clear() -> None:
        if tty and shown:
            print("\r\x1b[K", end="", file=sys.stderr, flush=True)

    def ask(nc: str, parts: tuple[str, ...]) -> str:
        clear()  # the question on a line of its own
        return _ask_head(nc, parts)

    try:
        report = generate_pairs(args.input, args.out, args.lang, k=args.k, seed=args.seed,
                                band=args.band, overwrite=args.overwrite,
                                head=None if args.head == "ask" else args.head,
                                ask=ask if args.head == "ask" else None,
                                scale=tuple(args.scale),
                                progress=None if args.quiet else progress)
    finally:
        clear()
    if not args.quiet:
        print(report.summary())
    return 0


#: The file formats of ``compare --out``, by suffix.
COMPARE_FORMATS = (".md", ".tex", ".csv", ".parquet")


def _compare_parser(sub) -> None:
    from .comparison import COMPARE_N_BOOT, SELECT_KEYS
    from .stats import CORRECTIONS

    p = sub.add_parser(
        "compare", help="test whether two runs' (or conditions') rho with the gold differ",
        description="For every measure x level x context (x space, layer view, language) "
        "present on both sides, the difference of Spearman's rho with the gold score on the "
        "NCs both sides share: a paired bootstrap interval and p-value (the NCs resampled "
        "jointly), Williams' t for dependent correlations as a cross-check, and the bootstrap "
        "p-values corrected across the rows. Two runs (RESULTS_A RESULTS_B), or one under "
        "two selections (RESULTS_A --a context=nat --b context=neut). Prints a Markdown "
        "table.")
    p.add_argument("results_a", metavar="RESULTS_A",
                   help="side A: a results directory, or a directory above several")
    p.add_argument("results_b", metavar="RESULTS_B", nargs="?",
                   help="side B (default: RESULTS_A again, under the --b selection)")
    keys = ", ".join(SELECT_KEYS)
    for side in ("a", "b"):
        p.add_argument(f"--{side}", dest=f"select_{side}", action="append", default=[],
                       metavar="KEY=VALUE",
                       help=f"keep side {side.upper()}'s rows with KEY=VALUE (repeatable; KEY "
                       f"one of {keys}). One value compares that key across the sides "
                       "(shown as KEY A / KEY B); a comma list only filters")
    p.add_argument("--n-boot", type=_positive_int, default=COMPARE_N_BOOT, metavar="N",
                   help=f"bootstrap resamples (default {COMPARE_N_BOOT}; the least p is "
                   "2/(N+1), so Holm over m rows needs N > 40 m)")
    p.add_argument("--seed", type=_count, default=0, metavar="S",
                   help="seed of the resamples (default 0): the same inputs give the same "
                   "table")
    p.add_argument("--correct", choices=CORRECTIONS, default="holm",
                   help="multiple-comparison correction of the bootstrap p-values across the "
                   "rows (default holm)")
    p.add_argument("--out", metavar="FILE",
                   help="also write the table: .md or .tex (the printed table), .csv or "
                   ".parquet (every column, unrounded); an existing FILE is refused unless "
                   "--overwrite")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    _exclude_option(p)
    _accept_edited_option(p)
    p.add_argument("--quiet", action="store_true",
                   help="no progress on stderr (each cell as it is tested)")


def _selection(items: Sequence[str], side: str) -> dict[str, str | list[str]] | None:
    """``--a KEY=VALUE ...`` as a selection of :func:`ncprobe.comparison.compare`."""
    from .comparison import SELECT_KEYS

    sel: dict[str, str | list[str]] = {}
    for item in items:
        key, eq, value = (x.strip() for x in item.partition("="))
        values = [v.strip() for v in value.split(",")]
        if not eq or not key or not all(values):
            raise UsageError(f"--{side} {item!r}: expected KEY=VALUE or KEY=V1,V2 (e.g. --{side} "
                             f"context=neut), KEY one of {', '.join(SELECT_KEYS)}")
        if key not in SELECT_KEYS:
            raise UsageError(f"--{side} {item!r}: cannot select on {key!r}; KEY is one of "
                             f"{', '.join(SELECT_KEYS)}")
        if key in sel:
            raise UsageError(f"--{side} {key}= given twice; give several values as one comma "
                             f"list (--{side} {key}=V1,V2)")
        sel[key] = values[0] if len(values) == 1 else values
    return sel or None


def _load_results(path: str, exclude: Sequence[str] = (), accept_edited: bool = False):
    """One side of ``compare``: never two runs of one cell pooled. An ``--exclude`` may
    leave out nothing on this side (:func:`_compare` checks it against both sides)."""
    from .results import load_results

    return load_results([path], exclude=exclude, accept_edited=accept_edited,
                        require_match=False)


def _check_compare_out(out, overwrite: bool) -> None:
    """Refuse a ``compare --out`` that would replace a user's file or cannot be written,
    before any work (and again just before writing: see :func:`_compare`)."""
    import tempfile

    if out.suffix.lower() not in COMPARE_FORMATS:
        raise UsageError(f"--out {out}: write a {', '.join(COMPARE_FORMATS)} file")
    if out.is_dir():
        raise UsageError(f"--out {out} is a directory; name a file, e.g. {out / 'compare.md'}"
                         " (even --overwrite never replaces a directory)")
    if not out.parent.is_dir():
        raise UsageError(f"--out {out}: no directory {out.parent}")
    if (out.parent / "run.json").is_file():
        raise UsageError(f"--out {out}: {out.parent} is a results directory; a file written "
                         "into it would stop `ncprobe compute` from rewriting it: choose "
                         "another --out")
    if os.path.lexists(out) and not overwrite:
        raise UsageError(f"--out {out} exists; choose another --out, or pass --overwrite to "
                         "replace it")
    try:  # writable here? (a read-only or full disk, no permission): before 30 s of tests
        fd, probe = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        raise output_error(e, out, what="comparison table") from None


def _compare(args) -> int:
    import io
    from pathlib import Path

    from . import tables
    from ._io import atomic_write_bytes, atomic_write_text
    from .comparison import compare

    out = Path(args.out) if args.out else None
    if out is not None:  # refused before any work
        _check_compare_out(out, args.overwrite)
    select_a, select_b = _selection(args.select_a, "a"), _selection(args.select_b, "b")
    if args.exclude:  # each --exclude leaves out a directory of one side or the other
        from .results import drop_excluded, find_results

        drop_excluded(find_results([args.results_a] + ([args.results_b] if args.results_b
                                                        else [])), args.exclude)
    a = _load_results(args.results_a, args.exclude, args.accept_edited_results)
    b = (_load_results(args.results_b, args.exclude, args.accept_edited_results)
         if args.results_b else None)

    def progress(k: int, total: int, cell: str) -> None:
        print(f"test {k}/{total}: {cell}", file=sys.stderr, flush=True)
    df = compare(a, b, select_a=select_a, select_b=select_b, n_boot=args.n_boot,
                 seed=args.seed, correct=args.correct,
                 progress=None if args.quiet else progress)
    shown = tables.comparison_table(df)
    how = tables.CORRECTION_NAMES.get(args.correct, args.correct)
    note = (f"diff = rho A - rho B on the n NCs both sides share, [95% paired bootstrap "
            f"interval] ({args.n_boot} resamples of the NCs, seed {args.seed}); p boot: its "
            f"two-sided bootstrap p; Williams t (n - 3 df) and p Williams: a classical "
            f"cross-check; p corrected: p boot {how} across the {int(df['p_boot'].notna().sum())}"
            f" rows; sig.: {tables.STARS_NOTE}")
    text = tables.to_markdown(shown) + "\n" + note + "\n"
    print(text, end="")
    if out is not None:
        # again: a file that appeared there while the tests ran is not replaced either
        if os.path.lexists(out) and not args.overwrite:
            raise UsageError(f"--out {out} was created while the tests ran; nothing written "
                             "(the table is printed above): choose another --out, or pass "
                             "--overwrite")
        suffix = out.suffix.lower()
        title = "Differences of Spearman's rho with the gold score (ncprobe compare)"
        try:  # atomically, with the mode a plain open() gives under the umask
            if suffix == ".md":
                atomic_write_text(out, f"{title}\n\n{text}")
            elif suffix == ".tex":
                atomic_write_text(out, tables.to_latex(shown, f"{title}. {note}"))
            elif suffix == ".csv":
                atomic_write_text(out, df.to_csv(index=False))
            else:
                buf = io.BytesIO()
                df.to_parquet(buf, index=False)
                atomic_write_bytes(out, buf.getvalue())
        except IsADirectoryError:
            raise UsageError(f"--out {out} is now a directory; nothing written") from None
        except OSError as e:
            raise output_error(e, out, what="comparison table") from None
        print(f"written to {out}", file=sys.stderr)
    return 0


def _models() -> int:
    from .encoders.registry import MODELS, offline_models, study_models

    # en and pt, then any other language a registered model covers
    langs = list(dict.fromkeys(["en", "pt"] + [k for s in MODELS.values() for k in s.ids
                                               if k != "*"]))
    head = f"model ({' / '.join(langs)})"
    print(f"{'alias':<14} {'family':<7} {head:<64} {'pip install':<20} needs")
    for spec in MODELS.values():
        ids = " / ".join(dict.fromkeys(spec.ids.get(k, spec.ids.get("*", "-")) for k in langs))
        print(f"{spec.alias:<14} {spec.family:<7} {ids:<64} {spec.install:<20} "
              f"{spec.requirements}")
    print(f"\nOffline: {', '.join(offline_models())}. The study's models: "
          f"{', '.join(study_models())}.\n`ncprobe reproduce` runs these, the offline ones first, "
          "and says why it skips each one that cannot run here.")
    print("\nAlso: any HuggingFace id (org/name), a local model directory, a vector file "
          "(word2vec .bin/.txt, GloVe .txt; gensim .kv with --allow-pickle), or "
          "gensim:<gensim-data name>.\n"
          "gensim:NAME and word2vec (en) load through gensim.downloader, which downloads and "
          "runs Python code\nfrom the gensim-data repository: ncprobe refuses them unless you "
          "pass --allow-gensim-downloader.\n"
          "--layers, --dtype and --device apply to transformer models only (ELMo: --device); "
          "elsewhere they are refused.\n"
          "HuggingFace ids and transformer model directories need ncprobe[hf] (install torch "
          "first: see the README), ELMo directories ncprobe[elmo].")
    return 0


def _cache(args, parser) -> int:
    """``ncprobe cache ACTION``."""
    if args.cache_command is None:
        _subparser(parser, "cache").print_help()
        return EXIT_USAGE
    return {"info": _cache_info, "clear": _cache_clear}[args.cache_command](args)


def _cache_info(args) -> int:
    from .cache import cache_info, cache_root, scan

    entries = cache_info(args.cache_dir)
    print(f"cache: {cache_root(args.cache_dir)}")
    for e in entries:
        print(f"  {e['model']!s:<40} {e['items']:>8} items {e['bytes'] / 1e6:>9.1f} MB  "
              f"{e['dir']}")
        for bad in e["corrupt"]:
            print(f"    corrupt shard (discarded by the next compute): {bad}")
    if not entries:
        print("  (empty)")
    for odd in scan(args.cache_dir).spoiled:  # ncprobe's entry, holding what it never writes
        print(f"  not listed (not an ncprobe cache entry any more: {odd.why}): {odd.path}")
    return 0


def _cache_clear(args) -> int:
    from .cache import cache_clear, cache_root

    report = cache_clear(args.cache_dir, args.model)
    for path, why in report.kept:
        print(f"kept {path}: {why}", file=sys.stderr)
    if report.foreign:
        print(f"left {len(report.foreign)} other item(s) in {cache_root(args.cache_dir)} "
              "untouched (not ncprobe's)", file=sys.stderr)
    print(f"removed {len(report.removed)} cached model(s)")
    return 0


def _data_info(root, args) -> int:
    """Files and counts; exit 3 when a required file is missing or any file does not verify.

    The table of files is printed whatever happens; the counts are those of the files as
    they are (modified ones included), and every problem is listed as an error.
    """
    info = _data_summary(root)
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False))
    else:
        _print_data_info(info)
    return DataError.exit_code if info["errors"] else 0


def _data_summary(root) -> dict:
    """What ``data info`` shows: each file's status, the counts per language, notes,
    warnings and errors."""
    from .data import check_coverage, load_stimuli, sources

    files = {f.local_path: {"need": f.need,
                            "status": sources.file_status(root, f)}
             for f in sources.upstream_files()}
    errors = [f"{path}: {_FILE_PROBLEM[f['status']]}" for path, f in files.items()
              if f["status"] in ("mismatch", "unreadable")
              or f["status"] == "missing" and f["need"] == "required"]
    stim = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            # the pins are reported above: count what is there, modified or not
            stim = load_stimuli("all", contexts="nat,neut", data_dir=root, collect=True,
                                accept_modified=True, cross_check=True)
            check_coverage(stim, contexts="nat,neut", probes="all")
        except DataErrors as e:
            errors += [str(x) for x in e.errors]
        except DataError as e:
            errors.append(str(e))
    return {"data_dir": str(root), "files": files,
            "languages": stim.describe() if stim is not None else {},
            "notes": [n for n in (stim.notes if stim is not None else [])
                      if not n.startswith("MODIFIED DATA")],
            "warnings": [str(w.message) for w in caught],
            "errors": list(dict.fromkeys(errors))}


def _print_data_info(info: dict) -> None:
    print(f"data directory: {info['data_dir']}")
    for path, f in info["files"].items():
        print(f"  {f['status']:<10} {f['need']:<9} {path}")
    for lang, d in info["languages"].items():
        cls = " / ".join(f"{d['classes'][c]}" for c in ("I", "PC", "C"))
        means = " / ".join("-" if d["class_mean_gold"][c] is None
                           else f"{d['class_mean_gold'][c]:.2f}" for c in ("I", "PC", "C"))
        per = ", ".join(f"{k} {lo}-{hi}" if lo != hi else f"{k} {lo}"
                        for k, (lo, hi) in d["stimuli_per_context"].items())
        print(f"\n{lang.upper()}: {d['ncs']} NCs, {d['scored']} with a gold score"
              + (f" (unscored: {', '.join(d['unscored'])})" if d["unscored"] else ""))
        print(f"  classes I/PC/C: {cls}; mean gold {means}")
        print(f"  contexts: {d['contexts']['naturalistic']} naturalistic, "
              f"{d['contexts']['neutral']} neutral; stimuli per context: {per}")
        print(f"  mean naturalistic length: {d['mean_naturalistic_length']} words; "
              f"{d['stimuli']} stimuli ({d['spliced_stimuli']} spliced)")
    if info["notes"]:
        print("\nnotes:")
        for n in info["notes"]:
            print(f"  - {n}")
    for w in info["warnings"]:
        print(f"\nwarning: {w}")
    for e in info["errors"]:
        print(f"error: {e}", file=sys.stderr)
    if info["errors"]:
        print(f"{len(info['errors'])} problem(s) in {info['data_dir']}: run `ncprobe data "
              "download` to restore the pinned files, and `ncprobe data check` for every bad "
              "row", file=sys.stderr)


_FILE_PROBLEM = {
    "mismatch": "content differs from the pinned upstream file; run `ncprobe data download` "
                "to restore it",
    "missing": "required file missing; run `ncprobe data download`",
    "unreadable": "cannot be read (no read permission?); make it readable, or run `ncprobe "
                  "data download`",
}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
