"""The ``ncprobe`` command line.

Exit codes a script can rely on: 0 success, 1 unexpected ncprobe error, 2 bad
usage, 3 data error (missing file, bad row), 4 download failed, 5 model not
available here (weights, optional package, GPU or network missing), 130
interrupted (the embedding cache keeps what was encoded: rerun to resume), 141
stdout closed early by its reader (``ncprobe data info --json | head``).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import warnings
from typing import Sequence

from ._version import VERSION as __version__
from .config import DEFAULT_MODEL
from .data.sources import (DEFAULT_BACKOFF, DEFAULT_RETRIES, DEFAULT_TIMEOUT,
                           check_download_options)
from .errors import DataErrors, NcprobeError, UsageError

EXIT_USAGE = 2
#: Exit code when stdout is a pipe closed early, as for a process killed by SIGPIPE.
EXIT_BROKEN_PIPE = 141

_DESCRIPTION = """\
Probe the embedding spaces of language models for idiomaticity, on the NCIMP
noun-compound minimal pairs of He et al. (Computational Linguistics, 2025).

Start with:
  ncprobe data download        fetch the NCIMP files (pinned, verified)
  ncprobe data info            what is there: NCs, classes, contexts, probes
  ncprobe compute              every measure for one model and language
                               (default: glove-6b-50d on English, offline)
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
                   "CPUs, at most 4; here {default}); the files do not depend on it")


def _data_dir_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", metavar="DIR",
                   help="NCIMP data directory (default: $NCPROBE_DATA, else the user cache)")


def build_parser() -> argparse.ArgumentParser:
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
    p.add_argument("--model", default=DEFAULT_MODEL,
                   help=f"alias (see `ncprobe models`), HuggingFace id, model directory or "
                   f"vector file (default: {DEFAULT_MODEL}, offline)")
    p.add_argument("--lang", default="en", choices=["en", "pt"], help="language (default: en)")
    p.add_argument("--context", default="nat,neut", metavar="C",
                   help="nat, neut, neut-pl or a comma list (default: nat,neut)")
    p.add_argument("--level", default=None, metavar="L",
                   help="sent, nc or sent,nc (default: every level the model gives)")
    p.add_argument("--layers", default=None, metavar="SPEC",
                   help="transformer layers: last4 (default), all, -1, 9+10+11+12, or comma "
                   "lists of views")
    p.add_argument("--device", default=None, help="cpu, cuda, cuda:1, mps (default: cuda if "
                   "available)")
    p.add_argument("--dtype", default=None, help="float32 (CPU default), float16, bfloat16")
    p.add_argument("--batch-size", type=int, default=32, help="sentences per forward pass "
                   "(default 32)")
    p.add_argument("--out", metavar="DIR", help="results directory (default: "
                   "results/<model>-<lang>, plus every option that changes results and is not "
                   "its default, e.g. results/minilm-en-layers_all-std)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a results directory that holds a different run (other "
                   "options, model or data); the same run is always replaced, a directory "
                   "that is not ncprobe's never")
    _data_dir_option(p)
    p.add_argument("--standardise", action="store_true",
                   help="also compute every measure on z-scored vectors (rogue dimensions)")
    p.add_argument("--wordssyn", default="first", choices=["first", "all"],
                   help="P_WordsSyn: the paper's single substitution (first) or every "
                   "alternative (all)")
    p.add_argument("--gold", default="comp", choices=["comp", "type"],
                   help="gold score: comp (Eq. 1, token-level, default) or type")
    p.add_argument("--accept-modified-data", action="store_true",
                   help="compute on NCIMP files that differ from their pinned upstream copy "
                   "(edited on purpose) instead of stopping (exit 3); they are named in the "
                   "summary and recorded in run.json")
    p.add_argument("--per-sentence", action="store_true",
                   help="also correlate sentence measures with each sentence's token score")
    p.add_argument("--n-boot", type=int, default=1000,
                   help="bootstrap resamples for confidence intervals (default 1000; 0: none)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
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
    p.add_argument("--out", metavar="DIR", default="report", help="output directory "
                   "(default: report)")
    p.add_argument("--format", default="png,pdf", help="figure formats (default: png,pdf)")
    p.add_argument("--examples", default=None, metavar="NCS",
                   help="comma list of NCs for the example table (default: the six of the study)")
    _jobs_option(p)

    p = sub.add_parser(
        "reproduce", help="compute every available model x language, then the report",
        description="Run `ncprobe compute` for every model and language that can run here "
        "(models whose weights, package, GPU, key or network are missing are skipped with one "
        "line saying why), save each run under --results-dir, then write every figure and "
        "table of the study into --out.")
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
    p.add_argument("--context", default="nat,neut", metavar="C",
                   help="contexts (default: nat,neut)")
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    _data_dir_option(p)
    p.add_argument("--no-cache", action="store_true", help="do not use the embedding cache")
    p.add_argument("--cache-dir", metavar="DIR", help="embedding cache root")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    _jobs_option(p)

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
        return 130
    parser.print_help()
    return EXIT_USAGE


def _data(args, parser) -> int:
    from .data import sources

    if args.data_command is None:
        _subparser(parser, "data").print_help()
        return EXIT_USAGE
    root = sources.resolve_data_dir(args.data_dir)
    if args.data_command == "path":
        print(root)
        return 0
    if args.data_command == "download":
        def progress(path: str, status: str) -> None:
            print(f"  {status:<12} {path}", file=sys.stderr)
        print(f"downloading NCIMP into {root}", file=sys.stderr)
        report = sources.download(root, url_template=args.url, retries=args.retries,
                                  timeout=args.timeout, backoff=args.backoff, progress=progress)
        print(report.summary())
        return 0
    if args.data_command == "check":
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
        return 0 if report.ok else 3
    if args.data_command == "info":
        return _info(root, args.json)
    return EXIT_USAGE


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def _compute(args) -> int:
    from .config import RunConfig
    from .pipeline import compute, run_dir

    try:
        cfg = RunConfig(model=args.model, lang=args.lang, contexts=args.context,
                        levels=args.level, layers=args.layers, device=args.device,
                        dtype=args.dtype, batch_size=args.batch_size,
                        standardise=args.standardise, wordssyn=args.wordssyn, gold=args.gold,
                        per_sentence=args.per_sentence, n_boot=args.n_boot, seed=args.seed,
                        accept_modified_data=args.accept_modified_data)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    from .results import check_target

    out = args.out or run_dir("results", args.model, args.lang, cfg)
    # refuse before computing when --out holds another run (or is not ncprobe's)
    check_target(out, cfg.to_dict(), overwrite=args.overwrite)
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
    print(f"results written to {path}", file=sys.stderr)
    return 0


def _report(args) -> int:
    from .report import write_report
    from .results import Results

    from .results import find_results

    res = Results.concat([Results.from_parquet(p) for p in find_results(args.results)])
    examples = [x.strip() for x in args.examples.split(",")] if args.examples else None
    written = write_report(res, args.out, formats=tuple(args.format.split(",")),
                           examples=examples, jobs=args.jobs)
    print(f"{len(written)} files written to {args.out}")
    return 0


def _reproduce(args) -> int:
    import time

    from .reproduce import STUDY_MODELS, reproduce
    from .report import FigureWorkers, check_out, write_report

    check_out(args.out)  # a report directory it may not write: refused before computing
    t0 = time.perf_counter()
    models = [m.strip() for m in args.models.split(",")] if args.models else None
    langs = [x.strip() for x in args.langs.split(",")]

    def on_skip(model, lang, why):
        print(f"skipped {model} ({lang}): {why}", file=sys.stderr)

    # the figure workers start now: their imports overlap the computing
    with FigureWorkers(args.jobs) as workers:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # each run's notes keep its warnings
            rep = reproduce(models, langs, results_dir=args.results_dir,
                            data_dir=args.data_dir, cache=not args.no_cache,
                            cache_dir=args.cache_dir, progress=not args.quiet,
                            on_skip=on_skip, contexts=args.context, n_boot=args.n_boot,
                            seed=args.seed, overwrite=args.overwrite)
        for model, lang, path in rep.ran:
            print(f"computed {model} ({lang}) -> {path}")
        if rep.results is None:
            print("error: no model could run here; nothing to report", file=sys.stderr)
            return 5
        written = write_report(rep.results, args.out, jobs=workers)
    missing = [m for m in STUDY_MODELS if m not in {r[0] for r in rep.ran}]
    with open(f"{args.out}/README.md", "a", encoding="utf-8") as fh:
        fh.write("\n## How these files were made\n\n"
                 f"`ncprobe reproduce --models {','.join(dict.fromkeys(r[0] for r in rep.ran))} "
                 f"--langs {','.join(langs)}` (ncprobe {__version__}).\n")
        if rep.skipped:
            fh.write("\nSkipped here:\n\n" + "".join(f"- {m} ({lg}): {why}\n"
                                                    for m, lg, why in rep.skipped))
        if missing:
            fh.write(f"\nThe study's own models ({', '.join(missing)}) are not in these "
                     "files: they need their weights (downloads, a GPU for llama2, an API key "
                     "for openai; see `ncprobe models`). Run `ncprobe reproduce` where they are "
                     "available to add their panels.\n")
    print(f"{len(written)} figures and tables written to {args.out} "
          f"({time.perf_counter() - t0:.0f} s)")
    return 0


def _models() -> int:
    from .encoders import MODELS

    print(f"{'alias':<14} {'family':<7} {'model (en / pt)':<64} {'pip install':<20} needs")
    for spec in MODELS.values():
        ids = " / ".join(dict.fromkeys(spec.ids.get(k, spec.ids.get("*", "-"))
                                       for k in ("en", "pt")))
        print(f"{spec.alias:<14} {spec.family:<7} {ids:<64} {spec.install:<20} {spec.needs}")
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
    from .cache import cache_clear, cache_info, cache_root

    if args.cache_command is None:
        _subparser(parser, "cache").print_help()
        return EXIT_USAGE
    if args.cache_command == "info":
        entries = cache_info(args.cache_dir)
        print(f"cache: {cache_root(args.cache_dir)}")
        for e in entries:
            print(f"  {e['model']!s:<40} {e['items']:>8} items {e['bytes'] / 1e6:>9.1f} MB  "
                  f"{e['dir']}")
            for bad in e["corrupt"]:
                print(f"    corrupt shard (discarded by the next compute): {bad}")
        if not entries:
            print("  (empty)")
        return 0
    report = cache_clear(args.cache_dir, args.model)
    for path, why in report.kept:
        print(f"kept {path}: {why}", file=sys.stderr)
    if report.foreign:
        print(f"left {len(report.foreign)} other item(s) in {cache_root(args.cache_dir)} "
              "untouched (not ncprobe's)", file=sys.stderr)
    print(f"removed {len(report.removed)} cached model(s)")
    return 0


def _info(root, as_json: bool) -> int:
    """Files and counts; exit 3 when a required file is missing or any file does not verify.

    The table of files is printed whatever happens; the counts are those of the files as
    they are (modified ones included), and every problem is listed as an error.
    """
    from .data import check_coverage, load_stimuli, sources
    from .errors import DataError

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
    errors = list(dict.fromkeys(errors))
    info = {"data_dir": str(root), "files": files,
            "languages": stim.describe() if stim is not None else {},
            "notes": [n for n in (stim.notes if stim is not None else [])
                      if not n.startswith("MODIFIED DATA")],
            "warnings": [str(w.message) for w in caught], "errors": errors}
    code = 3 if errors else 0
    if as_json:
        print(json.dumps(info, indent=2, ensure_ascii=False))
        return code
    print(f"data directory: {root}")
    for path, f in files.items():
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
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    if errors:
        print(f"{len(errors)} problem(s) in {root}: run `ncprobe data download` to restore the "
              "pinned files, and `ncprobe data check` for every bad row", file=sys.stderr)
    return code


_FILE_PROBLEM = {
    "mismatch": "content differs from the pinned upstream file; run `ncprobe data download` "
                "to restore it",
    "missing": "required file missing; run `ncprobe data download`",
    "unreadable": "cannot be read (no read permission?); make it readable, or run `ncprobe "
                  "data download`",
}


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
