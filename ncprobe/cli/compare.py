"""``ncprobe compare``: do two runs' (or two conditions') rho with the gold differ? And the
comparison of two sides of another probe's results (:func:`compare_probe_runs`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..argtypes import count, positive_int
from ..errors import UsageError
from ..probes.options import accept_edited_option, exclude_option
from ..schema import CORRECTIONS

if TYPE_CHECKING:
    import pandas as pd

    from ..probes.base import ProbeResults


def add_compare_parser(sub, config: type) -> argparse.ArgumentParser:
    from ..ncimp.comparison import COMPARE_N_BOOT, SELECT_KEYS

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
    p.add_argument("--n-boot", type=positive_int, default=COMPARE_N_BOOT, metavar="N",
                   help=f"bootstrap resamples (default {COMPARE_N_BOOT}; the least p is "
                   "2/(N+1), so Holm over m rows needs N > 40 m for any row to be "
                   "significant and N >= 2000 m for ***; a p at that floor is shown as a "
                   "bound, '< 0.0002', and warned about). Retrieval results: the resamples "
                   "of the intervals only")
    p.add_argument("--n-flips", type=_flips, default="auto", metavar="N|auto",
                   help="retrieval results: random sign flips of the paired test (default "
                   "auto: 1,000 per test of the family, so that the least corrected p "
                   "reaches 0.001; all 2^k patterns when there are fewer)")
    p.add_argument("--seed", type=count, default=0, metavar="S",
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
    exclude_option(p)
    accept_edited_option(p)
    p.add_argument("--quiet", action="store_true",
                   help="no progress on stderr (each cell as it is tested)")
    return p


def run_compare(args: argparse.Namespace, config: type) -> int:
    from ..ncimp.comparison import check_comparison_out

    out = Path(args.out) if args.out else None
    if out is not None:  # refused before any work
        check_comparison_out(out, args.overwrite)
    from ..probes import get_probe

    return get_probe(probe_of_sides(args)).compare_from_args(args, out)


def probe_of_sides(args: argparse.Namespace) -> str:
    """The one probe whose results both sides of ``ncprobe compare`` hold (``ncimp`` when
    none is found), the sides checked before anything is read, for every probe alike.

    Raises:
        UsageError: a results directory on both sides (the same directory, also through a
            link or as ``DIR/.``: paths compared resolved) without ``--a``/``--b``: a run
            compared with itself; the sides hold different probes' results (they cannot be
            compared; no ``--exclude`` is offered that would leave a side without
            results to compare); a side holds several probes' (the ``--exclude`` options
            that keep one probe both sides hold).
    """
    from ..results.store import NCIMP_LAYOUT, mixed_probes_message, probe_of_all, results_by_probe

    advice = "compare results of one probe"
    if not args.results_b:
        return probe_of_all([args.results_a], args.exclude, advice=advice)
    names = (args.results_a, args.results_b)
    sides = [results_by_probe([side], args.exclude) for side in names]
    real = [{d.resolve(): d for dirs in side.values() for d in dirs} for side in sides]
    twice = [str(d) for r, d in real[0].items() if r in real[1]]
    if twice and not (args.select_a or args.select_b):
        shown = ", ".join(twice[:6]) + (f" and {len(twice) - 6} more" if len(twice) > 6 else "")
        raise UsageError(f"RESULTS_A ({names[0]}) and RESULTS_B ({names[1]}) hold the same "
                         f"results directory ({shown}): a run compared with itself (every "
                         "difference 0) tells nothing. Give two runs' directories (to compare "
                         "two selections of one NCIMP run, give it once: RESULTS_A --a "
                         "KEY=VALUE --b KEY=VALUE)")
    held = [list(side) for side in sides]
    if all(len(h) == 1 for h in held) and held[0] != held[1]:
        raise UsageError(f"RESULTS_A ({names[0]}) holds results of the {held[0][0]!r} probe "
                         f"and RESULTS_B ({names[1]}) of the {held[1][0]!r} probe: results of "
                         "different probes cannot be compared; give two directories of one "
                         "probe's results")
    joined: dict = {}
    for side in sides:
        for probe, dirs in side.items():
            joined.setdefault(probe, []).extend(dirs)
    if len(joined) > 1:
        common = set(held[0]) & set(held[1])
        if not common:
            raise UsageError(mixed_probes_message(
                joined, "results of different probes cannot be compared, and no probe's "
                "results are on both sides"))
        raise UsageError(mixed_probes_message(joined, advice, keep=common))
    return next(iter(joined)) if joined else NCIMP_LAYOUT.probe


def compare_probe_runs(args: argparse.Namespace, out: Path | None,
                       results_class: type[ProbeResults], *,
                       what: str, how: str, within: str, title: str,
                       markdown: Callable[[pd.DataFrame], str],
                       latex: Callable[[pd.DataFrame, str], str],
                       load: Mapping[str, Any] | None = None,
                       options: Mapping[str, Any] | None = None,
                       latex_edited: bool = False, config: type | None = None) -> int:
    """``ncprobe compare A B`` of two sides of a probe's results: each side's directories
    read and joined (``results_class.load_many``), the sides compared (its ``compare``, with
    ``--n-boot``, ``--seed`` and ``--correct``), the tests printed as Markdown (results read
    although edited said first) and, with ``--out``, written (:func:`ncprobe.ncimp.comparison.
    write_comparison`, under ``title``).

    Args:
        args, out: the command's options and its ``--out`` (checked).
        results_class: the probe's results class.
        what: its results in words (``NCC results``), in the refusals.
        how: how they are compared (``classifier against classifier``), in the refusal of
            ``--a``/``--b``.
        within: what one run already holds (``the classifiers of one run are already tested
            ...``), in the refusal of one side.
        title: the title of the ``--out`` file.
        markdown, latex: the tests table as Markdown, and as LaTeX under a caption.
        load, options: more keywords of ``load_many`` and of ``compare``.
        latex_edited: the LaTeX file says the edited results first too (comments).
        config: the probe's options class: when given, the options in which the sides' runs
            differ (a float16 run against a float32 one: the store dtype of each) are said
            under the table (:func:`ncprobe.ncimp.comparison.differing_options`).

    Raises:
        UsageError: ``--a``/``--b`` given (NCIMP's), or one side only.
    """
    from ..ncimp.comparison import differing_options, write_comparison

    if args.select_a or args.select_b:
        raise UsageError(f"--a/--b select rows of NCIMP results; {what} are compared {how}")
    if not args.results_b:
        raise UsageError(f"{what}: give two sides (RESULTS_A RESULTS_B); {within}")
    a, b = (results_class.load_many([side], exclude=args.exclude,
                                    accept_edited=args.accept_edited_results, **(load or {}))
            for side in (args.results_a, args.results_b))
    df = a.compare(b, names=[args.results_a, args.results_b], n_boot=args.n_boot,
                   seed=args.seed, correction=args.correct, **(options or {}))
    edited = a.edited_lines() + b.edited_lines()
    # results read although edited: said first, where it cannot be missed
    text = "".join(f"{line}\n\n" for line in edited) + markdown(df)
    if config is not None:  # which side is which: e.g. the store dtype of each
        text += "".join(f"\n{line}\n" for line in [differing_options(a, b, config=config)]
                        if line)
    print(text, end="" if text.endswith("\n") else "\n")
    if out is not None:
        said = "".join(f"% {line}\n" for line in edited) if latex_edited else ""
        write_comparison(out, df, markdown=f"{title}\n\n{text}", latex=said + latex(df, title),
                         overwrite=args.overwrite)
        print(f"written to {out}", file=sys.stderr)
    return 0


def _flips(text: str) -> int | str:
    """``--n-flips``: ``auto`` or a whole number >= 1."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        return positive_int(text)
    except (argparse.ArgumentTypeError, ValueError):
        raise argparse.ArgumentTypeError(f"{text!r}: give auto or a whole number of 1 or "
                                         "more") from None


