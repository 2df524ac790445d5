"""``ncprobe retrieve`` (``ncprobe run idiolink``): the IdioLink retrieval probe for one or more
models: its options and its run, and its options of ``ncprobe compare`` and the comparison,
which :class:`~ncprobe.retrieval.seam.IdioLinkProbe` hands to the command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..argtypes import positive_int
from ..probes.options import (
    Option,
    cache_options,
    compare_test_options,
    config_from_args,
    config_options,
    data_dir_option,
    option,
    print_results,
    results_options,
    say,
)


def add_retrieve_arguments(p: argparse.ArgumentParser, config: type | None = None) -> None:
    """The options of ``retrieve`` (``run idiolink``): the fields of ``config`` (default
    :class:`RetrievalConfig`), with the command's own options (where the results go, what
    is printed, the data and the cache) where ``--help`` has always had them."""
    config = _retrieval_config(config)
    config_options(p, config, stop="n_boot")
    results_options(p, out_help="results directory (default: results/idiolink-<split>-<models>)",
                    json_help="print the overall rows as JSON (model, mode, usage, r_precision, "
                    "ndcg@10 as fractions, n, intervals, tie ranges) instead of the summary")
    config_options(p, config, start="n_boot", stop="accept_modified_data")
    data_dir_option(p)
    config_options(p, config, start="accept_modified_data")
    cache_options(p)
    p.add_argument("--quiet", action="store_true",
                   help="no progress (bars, and each model and mode as it runs), no summary")


def _retrieval_config(config: type | None) -> type:
    """``config``, or :class:`RetrievalConfig` where it is ``None``."""
    from .config import RetrievalConfig

    return config or RetrievalConfig


def run_retrieve(args: argparse.Namespace, config: type | None = None) -> int:
    """Run ``retrieve`` (``run idiolink``) from the options parsed (``config``: as
    :func:`add_retrieve_arguments`); the exit code."""
    from .config import run_dir
    from .probe import retrieve

    cfg = config_from_args(args, _retrieval_config(config))
    out = args.out or run_dir(cfg)
    # retrieve refuses, before any work, an --out that is not ncprobe's, holds another run
    # (without --overwrite) or cannot be written
    res = retrieve(cfg, data_dir=args.data_dir, out=out, overwrite=args.overwrite,
                   cache_dir=args.cache_dir, use_cache=not args.no_cache,
                   progress=not args.quiet, on_step=None if args.quiet else say)
    print_results(res, args)
    encoded = [f"{m['config']['model']} {m['encoded']}" for m in res.meta if "encoded" in m]
    if encoded:
        print("texts encoded now (the others read from the embedding cache): "
              + ", ".join(encoded), file=sys.stderr)
    print(f"results written to {out}", file=sys.stderr)
    return 0


def compare_options() -> tuple[Option, ...]:
    """The options of ``ncprobe compare`` that IdioLink's comparison takes: the resamples of
    the intervals, the seed and the correction, and the sign flips of the paired test."""
    return (*compare_test_options(),
            option("--n-flips", type=flips, default="auto", metavar="N|auto",
                   help="random sign flips of the paired test (default auto: 1,000 per test "
                   "of the family, so that the least corrected p reaches 0.001; all 2^k "
                   "patterns when there are fewer)"))


def flips(text: str) -> int | str:
    """argparse type of ``--n-flips``: ``auto`` or a whole number >= 1."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return positive_int(text)
    except (argparse.ArgumentTypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r}: give auto or a whole number of 1 or "
                                         "more") from None


def compare_idiolink(args: argparse.Namespace, out: Path | None) -> int:
    """``ncprobe compare A B`` of IdioLink results: A's models against B's, mode by mode, on
    the same queries (the sign-flip test over idioms, corrected as one family)."""
    from ..probes.commands import compare_probe_runs
    from .report import paired_tests_latex, paired_tests_markdown
    from .results import RetrievalResults

    return compare_probe_runs(
        args, out, RetrievalResults, what="retrieval results",
        within="the modes within one run are already tested in its own results (table "
        "tests)",
        title="IdioLink: paired differences between models (ncprobe compare)",
        markdown=paired_tests_markdown, latex=paired_tests_latex,
        load={"across": False}, options={"n_flips": args.n_flips}, latex_edited=True)
