"""``ncprobe run ncc``: its options and its run, and ``ncprobe compare`` of NCC results, which
:class:`~ncprobe.ncc.seam.NccProbe` hands to the command line."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..cli._options import cache_options, config_from_args, config_options, data_dir_option, say
from ..errors import UsageError


def add_ncc_arguments(p: argparse.ArgumentParser, config: type) -> None:
    """The options of ``run ncc``: the fields of ``config`` (:class:`NccConfig`), where the
    results go, what is printed, the data and the cache."""
    config_options(p, config)
    p.add_argument("--out", metavar="DIR",
                   help="results directory (default: results/ncc-<models>, plus -layers_<spec> "
                   "and -behaviour when given)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a results directory that holds a different run; one that is "
                   "not ncprobe's never")
    p.add_argument("--json", action="store_true",
                   help="print the accuracy rows as JSON (system, kind, setting, layer, level, "
                   "measure, n, accuracy and macro_f1 as fractions, their 95%% intervals) "
                   "instead of the summary")
    data_dir_option(p)
    cache_options(p)
    p.add_argument("--quiet", action="store_true", help="no progress, no summary")


def run_ncc_from_args(args: argparse.Namespace, config: type) -> int:
    """Run ``run ncc`` from the options parsed; the exit code."""
    from .config import run_dir
    from .probe import run_ncc

    cfg = config_from_args(args, config)
    out = args.out or str(run_dir(cfg))
    res = run_ncc(cfg, out=out, overwrite=args.overwrite, data_dir=args.data_dir,
                  cache=not args.no_cache, cache_dir=args.cache_dir, progress=not args.quiet,
                  on_step=None if args.quiet else say)
    if args.json:
        print(json.dumps(res.json_rows(), indent=1, ensure_ascii=False))
    elif not args.quiet:
        print(res.summary())
    print(f"results written to {out}", file=sys.stderr)
    return 0


def compare_ncc(args: argparse.Namespace, out: Path | None) -> int:
    """``ncprobe compare A B`` of NCC results: every classifier of A against every one of B
    on the same items (paired bootstrap, exact McNemar, corrected as one family)."""
    from ..comparison import write_comparison
    from .results import NccResults

    if args.select_a or args.select_b:
        raise UsageError("--a/--b select rows of NCIMP results; NCC results are compared "
                         "classifier against classifier")
    if not args.results_b:
        raise UsageError("NCC results: give two sides (RESULTS_A RESULTS_B); the classifiers "
                         "of one run are already tested against the systems in its table tests")
    a, b = (NccResults.load_many([side], exclude=args.exclude,
                                 accept_edited=args.accept_edited_results)
            for side in (args.results_a, args.results_b))
    df = a.compare(b, names=[args.results_a, args.results_b], n_boot=args.n_boot,
                   seed=args.seed, correction=args.correct)
    from .report import tests_markdown

    text = "".join(f"{line}\n\n" for line in a.edited_lines() + b.edited_lines())
    text += tests_markdown(df)
    print(text, end="" if text.endswith("\n") else "\n")
    if out is not None:
        from .report import tests_latex

        title = "SemanticQA NCC: paired differences between classifiers (ncprobe compare)"
        write_comparison(out, df, markdown=f"{title}\n\n{text}",
                         latex=tests_latex(df, title), overwrite=args.overwrite)
        print(f"written to {out}", file=sys.stderr)
    return 0
