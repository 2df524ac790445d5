"""``ncprobe retrieve`` (``ncprobe run idiolink``): the IdioLink retrieval probe for one or more
models: its options and its run, which :class:`~ncprobe.retrieval.seam.IdioLinkProbe` hands
to the command line."""

from __future__ import annotations

import argparse
import sys

from ..probes.options import (
    cache_options,
    config_from_args,
    config_options,
    data_dir_option,
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
