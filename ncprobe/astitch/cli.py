"""``ncprobe run astitch``: its options and its run, and ``ncprobe compare`` of AStitch results,
which :class:`~ncprobe.astitch.seam.AStitchProbe` hands to the command line."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..argtypes import positive_int
from ..drawing import default_jobs
from ..probes.options import probe_run_options, run_probe


def add_astitch_arguments(p: argparse.ArgumentParser, config: type) -> None:
    """The options of ``run astitch``: the fields of ``config`` (:class:`AStitchConfig`), where
    the results go, what is printed, the data and the cache, the processes."""
    def jobs(q: argparse.ArgumentParser) -> None:
        q.add_argument("--jobs", type=positive_int, default=default_jobs(),
                       metavar="N",
                       help="processes that fit the linear probe's cells of a view (default: "
                       "the CPUs this process may use, at most 4; here %(default)s); the "
                       "results do not depend on it")

    probe_run_options(p, config, out_help="results directory (default: "
                      "results/astitch-<models>-<langs>, plus -layers_<spec> when given)",
                      json_help="print the headline rows as JSON (probe_kind, model, lang, "
                      "split, setting, level, context, layer, auroc or macro_f1 and accuracy "
                      "as fractions, n, their 95%% intervals) instead of the summary",
                      more=jobs)


def run_astitch_from_args(args: argparse.Namespace, config: type) -> int:
    """Run ``run astitch`` from the options parsed; the exit code."""
    from .config import run_dir
    from .probe import run_astitch

    return run_probe(args, config, run_astitch, run_dir, jobs=args.jobs)


def compare_astitch(args: argparse.Namespace, out: Path | None) -> int:
    """``ncprobe compare A B`` of AStitch results: the linear probe's cells of A against those
    of B on the same test rows (paired cluster permutation tests, corrected as one family)."""
    from ..probes.commands import compare_probe_runs
    from .config import AStitchConfig
    from .report import tests_latex, tests_markdown
    from .results import AStitchResults

    return compare_probe_runs(
        args, out, AStitchResults, what="AStitch results",
        within="the views and models of one run are already tested in its table tests",
        title="AStitch: paired differences between linear probes (ncprobe compare)",
        markdown=tests_markdown, latex=tests_latex, config=AStitchConfig)
