"""``ncprobe compute | report | reproduce``: runs, and the figures and tables made of them."""

from __future__ import annotations

import argparse

from ..errors import UsageError
from ..probes.options import (
    accept_edited_option,
    add_declared_options,
    exclude_option,
    options_of,
    say,
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


def add_probe_command_parser(command: str, sub, config: type) -> argparse.ArgumentParser:
    """The parser of ``command``, a command of its own that a probe declares
    (:meth:`~ncprobe.probes.base.Probe.commands`: NCIMP's ``reproduce``)."""
    probe = _command_probe(command)
    return probe.commands()[command][0](sub, _config_for(probe, config))


def run_probe_command(command: str, args: argparse.Namespace, config: type) -> int:
    probe = _command_probe(command)
    return probe.commands()[command][1](args, _config_for(probe, config))


def _command_probe(command: str):
    from ..probes import probes

    return next(p for p in probes() if command in p.commands())


def _shorthand_probe(command: str):
    from ..probes import probes

    return next(p for p in probes() if p.shorthand == command)


def _config_for(probe, config: type) -> type:
    """The run options' config of ``probe``: ``config`` (the command line's, e.g. a
    subclass of RunConfig with a field more) where it extends the probe's own, else the
    probe's own."""
    own = probe.config_class()
    return config if isinstance(config, type) and issubclass(config, own) else own


def add_report_parser(sub, config: type) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "report", help="figures and tables from saved results",
        description="Draw the figures (PNG and PDF) and write the tables (Markdown and "
        "LaTeX) of a probe's report from one or more results directories of that probe (for "
        "NCIMP results, written by `ncprobe compute` or `ncprobe reproduce`: the ten figures "
        "and the tables of the study). Options marked [PROBE results only] are those of one "
        "probe's report: given for other results, they are exit 2.")
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
    p.add_argument("--quiet", action="store_true",
                   help="no progress on stderr (each figure and table as it is written)")
    add_declared_options(p, declared_options("report"))
    return p


def declared_options(command: str) -> dict:
    """The options of ``command`` (``report``, ``compare``) that each probe declares
    (:meth:`~ncprobe.probes.base.Probe.report_options`, ``compare_options``), by its name."""
    from ..probes import probes

    return {p.name: tuple(getattr(p, f"{command}_options")()) for p in probes()}


def probe_options(args: argparse.Namespace, probe, command: str, *, strict: bool = True
                  ) -> argparse.Namespace:
    """``args`` as the ``command`` of ``probe``'s results takes them
    (:func:`~ncprobe.probes.options.options_of`): an option of another probe given is exit 2
    (``strict``) or left out; the probe's own options not given at their defaults."""
    declared = declared_options(command)
    every: dict = {}
    for options in declared.values():
        for o in options:
            every.setdefault(o.dest, o)  # the first declaration: the one the parser has
    own = tuple(getattr(probe, f"{command}_options")())
    return options_of(args, probe.name, own, every, command, strict=strict)


def run_report(args: argparse.Namespace, config: type) -> int:
    from ..drawing import check_formats
    from ..probes import get_probe, results_by_probe, results_probe

    formats = check_formats(args.format)  # before any results are read
    _declare_report_labels()
    by_probe = results_by_probe(args.results, args.exclude, require_match=True)
    if len(by_probe) <= 1:
        probe = get_probe(next(iter(by_probe), results_probe(None)))
        return probe.report_from_args(probe_options(args, probe, "report"), formats)
    return report_each_probe(args, formats, by_probe)


def _declare_report_labels() -> None:
    """Every probe's report label made known to the owner of report directories
    (:func:`ncprobe.owned.report_kind`), which asks no registry: a report of another probe
    found in ``--out`` is then named by its label (``a retrieval report (IdioLink)``), not by
    its probe's name alone. The command line knows the probes; the shared module does not."""
    from ..owned import report_kind
    from ..probes import probes

    for probe in probes():
        layout = probe.results_class().layout
        if layout.report_label:
            report_kind(layout.probe, layout.report_label)


def report_each_probe(args: argparse.Namespace, formats, by_probe: dict) -> int:
    """``ncprobe report`` of results of several probes (``by_probe``: each probe's results
    directories): each probe's report in the subdirectory of ``--out`` named by the probe,
    given only the report options it declares (an option that none of them declares is exit
    2), then an index ``README.md`` linking them. Every directory is checked before any
    report is drawn."""
    from pathlib import Path

    from ..probes import probes
    from ..report_files import check_index_dir, write_index

    found = {p.name: p for p in probes(list(by_probe))}
    declared = declared_options("report")
    taken = {o.dest for name in found for o in declared[name]}
    given = list(dict.fromkeys(o.flags[0] for options in declared.values() for o in options
                               if hasattr(args, o.dest) and o.dest not in taken))
    if given:
        whose = {f: [n for n, options in declared.items() if any(o.flags[0] == f
                                                                 for o in options)]
                 for f in given}
        raise UsageError("; ".join(f"{f}: an option of the report of {' and '.join(w)} results"
                                   for f, w in whose.items())
                         + f", and no report of these results takes it (results of "
                         f"{', '.join(found)})")
    out = Path(args.out)
    check_index_dir(out, list(found), overwrite=args.overwrite)
    if not args.quiet:
        say(f"{args.out}: results of {len(found)} probes ({', '.join(found)}): one report "
            "each, in its own directory")
    for name, probe in found.items():
        mine = argparse.Namespace(**{**vars(args), "results": [str(d) for d in by_probe[name]],
                                     "exclude": [], "out": str(out / name)})
        probe.report_from_args(probe_options(mine, probe, "report", strict=False), formats)
    index = write_index(out, {name: [str(d) for d in by_probe[name]] for name in found},
                        overwrite=args.overwrite)
    print(f"index of the {len(found)} reports written to {index}")
    return 0


