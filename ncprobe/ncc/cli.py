"""``ncprobe run ncc``: its options and its run, and ``ncprobe compare`` of NCC results, which
:class:`~ncprobe.ncc.seam.NccProbe` hands to the command line."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..probes.options import probe_run_options, run_probe


def add_ncc_arguments(p: argparse.ArgumentParser, config: type) -> None:
    """The options of ``run ncc``: the fields of ``config`` (:class:`NccConfig`), where the
    results go, what is printed, the data and the cache."""
    probe_run_options(p, config, out_help="results directory (default: results/ncc-<models>, "
                      "plus -layers_<spec> and -behaviour when given)",
                      json_help="print the accuracy rows as JSON (system, kind, setting, "
                      "layer, level, measure, n, accuracy and macro_f1 as fractions, their "
                      "95%% intervals) instead of the summary")


def run_ncc_from_args(args: argparse.Namespace, config: type) -> int:
    """Run ``run ncc`` from the options parsed; the exit code."""
    from .config import run_dir
    from .probe import run_ncc

    return run_probe(args, config, run_ncc, run_dir)


def compare_ncc(args: argparse.Namespace, out: Path | None) -> int:
    """``ncprobe compare A B`` of NCC results: every classifier of A against every one of B
    on the same items (paired bootstrap, exact McNemar, corrected as one family of its own)."""
    from ..probes.commands import compare_probe_runs
    from .report import tests_latex, tests_markdown
    from .results import NccResults

    return compare_probe_runs(
        args, out, NccResults, what="NCC results",
        within="the classifiers of one run are already tested against the systems in its "
        "table tests",
        title="SemanticQA NCC: paired differences between classifiers (ncprobe compare)",
        markdown=tests_markdown, latex=tests_latex)
