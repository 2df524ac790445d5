"""``ncprobe compare``: do two runs' (or two conditions') results differ? The options every
probe's comparison takes, those each probe declares
(:meth:`~ncprobe.probes.base.Probe.compare_options`), and the probe of the two sides; the
comparison itself is the probe's (:meth:`~ncprobe.probes.base.Probe.compare_from_args`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import UsageError
from ..probes.options import accept_edited_option, add_declared_options, exclude_option
from .run import declared_options, probe_options


def add_compare_parser(sub, config: type) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "compare", help="test whether two runs' (or conditions') rho with the gold differ",
        description="For every measure x level x context (x space, layer view, language) "
        "present on both sides, the difference of Spearman's rho with the gold score on the "
        "NCs both sides share: a paired bootstrap interval and p-value (the NCs resampled "
        "jointly), Williams' t for dependent correlations as a cross-check, and the bootstrap "
        "p-values corrected across the rows. Two runs (RESULTS_A RESULTS_B), or one under "
        "two selections (RESULTS_A --a context=nat --b context=neut). Prints a Markdown "
        "table. Results of the other probes: their paired tests between the two sides "
        "(docs/cli.md). Options marked [PROBE results only] are those of one probe's "
        "comparison: given for other results, they are exit 2.")
    p.add_argument("results_a", metavar="RESULTS_A",
                   help="side A: a results directory, or a directory above several")
    p.add_argument("results_b", metavar="RESULTS_B", nargs="?",
                   help="side B (default: RESULTS_A again, under the --b selection)")
    p.add_argument("--out", metavar="FILE",
                   help="also write the table: .md or .tex (the printed table), .csv or "
                   ".parquet (every column, unrounded); an existing FILE is refused unless "
                   "--overwrite")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    exclude_option(p)
    accept_edited_option(p)
    p.add_argument("--quiet", action="store_true",
                   help="no progress on stderr (each cell as it is tested)")
    add_declared_options(p, declared_options("compare"))
    return p


def run_compare(args: argparse.Namespace, config: type) -> int:
    from ..probes import get_probe
    from ..probes.commands import check_comparison_out

    out = Path(args.out) if args.out else None
    if out is not None:  # refused before any work
        check_comparison_out(out, args.overwrite)
    probe = get_probe(probe_of_sides(args))
    return probe.compare_from_args(probe_options(args, probe, "compare"), out)


def _selects_side(args: argparse.Namespace) -> bool:
    """Whether an option given selects each side's rows (NCIMP's ``--a``/``--b``): then one
    results directory may be on both sides."""
    return any(o.selects_side and getattr(args, o.dest, None)
               for options in declared_options("compare").values() for o in options)


def probe_of_sides(args: argparse.Namespace) -> str:
    """The one probe whose results both sides of ``ncprobe compare`` hold (``ncimp`` when
    none is found), the sides checked before anything is read, for every probe alike.

    Raises:
        UsageError: a results directory on both sides (the same directory, also through a
            link or as ``DIR/.``: paths compared resolved) without an option that selects
            each side's rows (NCIMP's ``--a``/``--b``): a run compared with itself; the
            sides hold different probes' results (they cannot be compared; no
            ``--exclude`` is offered that would leave a side without results to compare); a
            side holds several probes' (the ``--exclude`` options that keep one probe both
            sides hold).
    """
    from ..probes import probe_of_all, results_by_probe, results_probe
    from ..results.store import mixed_probes_message

    advice = "compare results of one probe"
    if not args.results_b:
        return probe_of_all([args.results_a], args.exclude, advice=advice)
    names = (args.results_a, args.results_b)
    sides = [results_by_probe([side], args.exclude) for side in names]
    real = [{d.resolve(): d for dirs in side.values() for d in dirs} for side in sides]
    twice = [str(d) for r, d in real[0].items() if r in real[1]]
    if twice and not _selects_side(args):
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
    return next(iter(joined)) if joined else results_probe(None)
