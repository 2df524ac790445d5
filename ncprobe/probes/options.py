"""What a probe needs to declare its options: the run options made from a config class and
the run of a probe from them (:func:`probe_run_options`, :func:`run_probe`), the options of
``ncprobe report`` and ``ncprobe compare`` a probe declares (:class:`Option`), and options
shared by several commands.

:func:`config_options` adds one option per field of a config class (NCIMP's
:class:`~ncprobe.ncimp.config.RunConfig`: ``compute`` takes them all, ``reproduce`` some;
:class:`~ncprobe.retrieval.config.RetrievalConfig`: ``retrieve``); :func:`config_from_args`
makes the config of the options parsed, naming the option of any value the config refuses.

A probe declares the options of ``report`` and ``compare`` that its own report and comparison
take (:meth:`~ncprobe.probes.base.Probe.report_options`,
:meth:`~ncprobe.probes.base.Probe.compare_options`: a tuple of :class:`Option`, made by
:func:`option` or by the helpers here, :func:`compare_test_options`, :func:`jobs_option`).
The command line adds the options every probe declares once each (:func:`add_declared_options`;
an option two probes declare is one option: equal declarations) and, once it knows whose
results it reads, refuses an option given that this probe does not declare and gives it its
own options' defaults (:func:`options_of`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import types
import typing
from typing import Any, Callable, Sequence

from .. import argtypes as _argtypes
from ..argtypes import positive_int
from ..config import field_default
from ..errors import UsageError
from ..schema import CORRECTIONS


def config_options(parser: argparse.ArgumentParser, config: type,
                   names: Sequence[str] | None = None, *, start: str | None = None,
                   stop: str | None = None) -> None:
    """Add one option per field of the config class ``config`` (any frozen dataclass whose
    fields all have defaults, e.g. :class:`~ncprobe.ncimp.config.RunConfig`,
    :class:`~ncprobe.retrieval.config.RetrievalConfig`), in field order, built from the
    field alone: every field, or those in ``names``, or those from ``start`` (included) up
    to ``stop`` (left out), so that a command may put its own options between them.

    The option is ``--<name>`` (``_`` as ``-``) or the field's ``option`` metadata, with
    ``dest`` the field's name, the field's default, and its ``help`` and ``metavar``
    metadata. Its values: the field's ``type`` metadata (an argparse type, or the name of
    one in :mod:`ncprobe.argtypes`, e.g. ``"count"``: it reads the text and refuses
    what is out of range), else a whole number for an ``int``, a finite number for a
    ``float``, the text for the rest; the ``choices`` metadata, else the values of a
    ``Literal`` type (an optional one, ``dtype``, is not restricted: the encoders take
    other spellings too); a flag for a ``bool``. ``repeatable`` metadata: the option may be
    given more than once, each value a list (its ``type``, e.g. ``comma_list``), and the
    field gets the non-empty items of all, in order. Other checks are ``config``'s own, in
    :func:`config_from_args`.
    """
    hints = typing.get_type_hints(config)
    order = [f.name for f in dataclasses.fields(config)]
    first = order.index(start) if start is not None else 0
    last = order.index(stop) if stop is not None else len(order)
    for f in dataclasses.fields(config)[first:last]:
        if names is not None and f.name not in names:
            continue
        kw = {"dest": f.name, "default": field_default(f), "help": f.metadata.get("help")}
        hint = hints[f.name]
        if hint is bool:
            kw["action"] = argparse.BooleanOptionalAction if kw["default"] else "store_true"
        else:
            if "choices" in f.metadata:
                kw["choices"] = f.metadata["choices"]
            elif typing.get_origin(hint) is typing.Literal:
                kw["choices"] = typing.get_args(hint)
            if typing.get_origin(hint) in (typing.Union, types.UnionType):  # X | None: X
                hint = next(a for a in typing.get_args(hint) if a is not type(None))
            parse = f.metadata.get("type")
            if isinstance(parse, str):
                parse = getattr(_argtypes, parse)
            if parse is not None:
                kw["type"] = parse
            elif hint is int:  # ranges: the config's checks (the Python API has the same)
                kw["type"] = int
            elif hint is float:  # nan and inf are no value of any field
                kw["type"] = _argtypes.finite_number
            if f.metadata.get("repeatable"):
                kw["action"] = _Items
            if "metavar" in f.metadata:
                kw["metavar"] = f.metadata["metavar"]
        parser.add_argument(_option(f), **kw)


class _Items(argparse.Action):
    """A ``repeatable`` config field's option: each time given, its value (a list) adds its
    non-empty items to those given before; not given, the field's default."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        had = getattr(namespace, self.dest)
        items = [] if had is self.default else list(had)
        setattr(namespace, self.dest, items + [v for v in values if v])


def _option(f: dataclasses.Field) -> str:
    """The option of a config field: its ``option`` metadata, else ``--`` and its name."""
    return f.metadata.get("option", "--" + f.name.replace("_", "-"))


def config_from_args(args: argparse.Namespace, config: type):
    """The ``config`` (a config class) of the options parsed into ``args`` (the
    fields it has no option for at their defaults).

    ``config`` checks the values once, all together: a value is never judged against the
    other fields' defaults when the command line gives them (``--model X --static Y`` is
    checked as that pair). When ``config`` refuses them, the options blamed are those the
    refusal depends on: each given option without which (at its default) the same refusal
    does not happen: the option of a value out of its own domain, or the options a check of
    several fields refused together.

    Raises:
        UsageError: a value ``config`` refuses; the message names its option (or the
            options refused together) and says why.
    """
    fields = [f for f in dataclasses.fields(config) if hasattr(args, f.name)]
    values = {f.name: getattr(args, f.name) for f in fields}
    given = [f for f in fields if values[f.name] != field_default(f)]

    def made(group: list[dataclasses.Field]) -> str | None:
        """``config`` of the values of ``group``: ``None`` when it takes them, else why."""
        try:
            config(**{f.name: values[f.name] for f in group})
        except ValueError as e:
            return str(e)
        return None

    try:
        return config(**{f.name: values[f.name] for f in given})
    except ValueError as e:
        why = str(e)
    blamed = [f for f in given if made([g for g in given if g is not f]) != why] or given
    named = ", ".join(_option(f) if values[f.name] is True
                      else f"{_option(f)} {_shown(values[f.name])}" for f in blamed)
    raise UsageError(f"{named}: {why}") from None


def _shown(value) -> str:
    """An option's value as it was typed: a list (a ``repeatable`` option) as a comma list,
    nothing as ``''``."""
    text = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    return text or "''"


#: ``--overwrite`` of the probes' run commands.
OVERWRITE_RUN = ("replace a results directory that holds a different run; one that is not "
                 "ncprobe's never")


def results_options(p: argparse.ArgumentParser, *, out_help: str, json_help: str,
                    overwrite_help: str = OVERWRITE_RUN) -> None:
    """``--out``, ``--overwrite`` and ``--json`` of a command that runs a probe, each with
    the command's own help (argparse help texts: ``%%`` for a percent sign): where its
    results directory goes (``out_help``, naming the default), what replacing one means
    (``overwrite_help``), what ``--json`` prints instead of the summary (``json_help``)."""
    p.add_argument("--out", metavar="DIR", help=out_help)
    p.add_argument("--overwrite", action="store_true", help=overwrite_help)
    p.add_argument("--json", action="store_true", help=json_help)


def print_results(res, args: argparse.Namespace) -> None:
    """A run's results on stdout: its JSON rows with ``--json``, else its summary unless
    ``--quiet``."""
    if args.json:
        print(json.dumps(res.json_rows(), indent=1, ensure_ascii=False))
    elif not args.quiet:
        print(res.summary())


def probe_run_options(p: argparse.ArgumentParser, config: type, *, out_help: str,
                      json_help: str,
                      more: Callable[[argparse.ArgumentParser], None] | None = None) -> None:
    """The options of ``ncprobe run PROBE`` of a probe that encodes through the cache and
    writes one results directory (NCC, AStitch; :func:`run_probe` runs it): the fields of
    ``config`` (:func:`config_options`), ``--out``, ``--overwrite`` and ``--json``
    (:func:`results_options`), ``--data-dir``, ``--no-cache`` and ``--cache-dir``, the
    probe's own options (``more`` adds them), ``--quiet``."""
    config_options(p, config)
    results_options(p, out_help=out_help, json_help=json_help)
    data_dir_option(p)
    cache_options(p)
    if more is not None:
        more(p)
    p.add_argument("--quiet", action="store_true", help="no progress, no summary")


def run_probe(args: argparse.Namespace, config: type, run: Callable[..., Any],
              run_dir: Callable[[Any], Any], **options: Any) -> int:
    """Run a probe from the options of :func:`probe_run_options`: the ``config`` of the
    options (:func:`config_from_args`) run by ``run`` (with ``options``) into ``--out``
    (default ``run_dir(config)``), its summary or JSON rows printed (:func:`print_results`),
    where the results went on stderr; the exit code."""
    cfg = config_from_args(args, config)
    out = args.out or str(run_dir(cfg))
    res = run(cfg, out=out, overwrite=args.overwrite, data_dir=args.data_dir,
              cache=not args.no_cache, cache_dir=args.cache_dir, progress=not args.quiet,
              on_step=None if args.quiet else say, **options)
    print_results(res, args)
    print(f"results written to {out}", file=sys.stderr)
    return 0


def data_dir_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", metavar="DIR",
                   help="NCIMP data directory (default: $NCPROBE_DATA, else the user cache)")


def cache_options(p: argparse.ArgumentParser) -> None:
    """``--no-cache`` and ``--cache-dir`` of the commands that encode (compute, reproduce,
    retrieve)."""
    p.add_argument("--no-cache", action="store_true",
                   help="encode everything and store nothing in the embedding cache")
    p.add_argument("--cache-dir", metavar="DIR", help="embedding cache root (default: "
                   "$NCPROBE_CACHE or the user cache directory)")


def jobs_option() -> Option:
    """``--jobs`` of a report that draws its figures in several processes (NCIMP's
    ``report`` and ``reproduce``)."""
    from ..drawing import default_jobs

    return option("--jobs", type=positive_int, default=default_jobs(),
                  metavar="N",
                  help="processes that draw the figures, this one included (default: the "
                  "CPUs this process may use, at most 4; here %(default)s); never more than "
                  "the figures to draw "
                  "or the CPUs this process may use; the files do not depend on it")


def accept_edited_option(p: argparse.ArgumentParser) -> None:
    """``--accept-edited-results`` of ``report`` and ``compare``."""
    p.add_argument("--accept-edited-results", action="store_true",
                   help="read results directories edited since ncprobe wrote them (a table "
                   "or run.json changed by hand or rewritten by another program); without it "
                   "such a directory is exit 3. What was edited is said in the output")


def exclude_option(p: argparse.ArgumentParser) -> None:
    """``--exclude`` of ``report`` and ``compare``: runs of one cell are never pooled."""
    p.add_argument("--exclude", action="append", default=[], metavar="DIR",
                   help="leave out this results directory, or every one below DIR "
                   "(repeatable). Two results directories holding the same cell (model, "
                   "language, space, layers, level, context, measure: a rerun, a copy, two "
                   "models of one name) are never pooled: the command refuses, naming both, "
                   "until one is left out")


def say(line: str) -> None:
    """One line of progress on stderr (``--quiet`` leaves it out); stdout stays for results."""
    print(line, file=sys.stderr, flush=True)


# --- the options of `ncprobe report` and `ncprobe compare` that a probe declares ---------------


@dataclasses.dataclass(frozen=True)
class Option:
    """One option of ``ncprobe report`` or ``ncprobe compare`` that a probe's report or
    comparison takes (:meth:`~ncprobe.probes.base.Probe.report_options`,
    :meth:`~ncprobe.probes.base.Probe.compare_options`): its flags and the keywords of
    ``argparse``'s ``add_argument`` (``help`` included; ``%(default)s`` in it is the
    default). Made by :func:`option`. Two probes that declare one flag declare one option:
    equal declarations (make it with one helper, e.g. :func:`compare_test_options`)."""

    #: The option's flags (``("--n-flips",)``), the first a long one.
    flags: tuple[str, ...]
    #: The keywords of ``add_argument``.
    settings: dict[str, Any] = dataclasses.field(default_factory=dict, hash=False)
    #: With it given, one results directory may be on both sides of ``ncprobe compare``: it
    #: selects each side's rows (NCIMP's ``--a`` and ``--b``).
    selects_side: bool = False

    @property
    def dest(self) -> str:
        """The attribute of the parsed options that holds its value."""
        return self.settings.get("dest") or self.flags[0].lstrip("-").replace("-", "_")

    @property
    def default(self) -> Any:
        """Its value when it is not given (what ``argparse`` gives it)."""
        parser = argparse.ArgumentParser(add_help=False)
        self.add(parser)
        return getattr(parser.parse_args([]), self.dest)

    def add(self, parser: argparse.ArgumentParser) -> None:
        """Add it to ``parser`` as declared (a command of one probe: ``reproduce``)."""
        parser.add_argument(*self.flags, **self.settings)

    def add_declared(self, parser: argparse.ArgumentParser, whose: Sequence[str] | None
                     ) -> None:
        """Add it to ``parser`` so that it is absent from the options parsed unless given
        (``default=argparse.SUPPRESS``), its help saying whose it is (``whose``: the probes
        that declare it; ``None``: every probe's)."""
        text = self.settings.get("help")
        if text is not None:
            text = text.replace("%(default)s", str(self.default))
            if whose is not None:
                text += f" [{', '.join(whose)} results only]"
        parser.add_argument(*self.flags, **{**self.settings, "default": argparse.SUPPRESS,
                                            "help": text})


def option(*flags: str, selects_side: bool = False, **settings: Any) -> Option:
    """An :class:`Option` of ``report`` or ``compare``: ``flags`` and ``settings`` as for
    ``argparse``'s ``add_argument``.

    >>> option("--n-flips", type=int, default=7, help="flips").default
    7
    """
    return Option(tuple(flags), dict(settings), selects_side)


#: The resamples of ``ncprobe compare``'s bootstrap by default: more than a run's intervals
#: use, because the least bootstrap p is 2 / (n_boot + 1) and a correction multiplies it by
#: the number of tests (a table of 44 cells needs n_boot > 1760 for any cell to be
#: significant after Holm's correction; below that a floored p is a bound, said and warned
#: about).
COMPARE_N_BOOT = 10_000


def compare_test_options() -> tuple[Option, ...]:
    """``--n-boot``, ``--seed`` and ``--correct`` of ``ncprobe compare``: the resamples, their
    seed and the correction of a comparison that tests pairs by resampling."""
    return (
        option("--n-boot", type=positive_int, default=COMPARE_N_BOOT, metavar="N",
               help=f"bootstrap resamples (default {COMPARE_N_BOOT}; the least p is 2/(N+1), "
               "so Holm over m rows needs N > 40 m for any row to be significant and N >= "
               "2000 m for ***; a p at that floor is shown as a bound, '< 0.0002', and warned "
               "about). Retrieval results: the resamples of the intervals only"),
        option("--seed", type=_argtypes.count, default=0, metavar="S",
               help="seed of the resamples (default 0): the same inputs give the same table"),
        option("--correct", choices=CORRECTIONS, default="holm",
               help="multiple-comparison correction of the bootstrap p-values across the "
               "rows (default holm)"))


def add_declared_options(parser: argparse.ArgumentParser,
                         declared: dict[str, Sequence[Option]]) -> dict[str, Option]:
    """Add to ``parser`` every option that the probes declare (``declared``: each probe's
    options by its name, in registry order), once each, absent from the options parsed
    unless given, its help naming the probes whose it is unless it is every probe's
    (:meth:`Option.add_declared`); returns them by ``dest``.

    A declaration that differs from an earlier probe's option of the same flag or ``dest``
    (a plugin's ``--seed`` of another default) is left out, with a warning on stderr naming
    both probes: that probe then takes the option at its own default.
    """
    found: dict[str, Option] = {}
    whose: dict[str, list[str]] = {}
    flags: dict[str, str] = {}
    for name, options in declared.items():
        for o in options:
            same = found.get(o.dest) or next(
                (found[flags[f]] for f in o.flags if f in flags), None)
            if same is not None and same != o:
                first = whose[same.dest][0]
                print(f"warning: the probe {name} declares {o.flags[0]} otherwise than the "
                      f"probe {first} (one option, two declarations): {name}'s is left out, "
                      "its results take it at its default; declare it as the other probe "
                      "does (the same helper), or under another name", file=sys.stderr)
                continue
            if same is None:
                found[o.dest] = o
                flags.update({f: o.dest for f in o.flags})
            whose.setdefault(o.dest, []).append(name)
    for dest, o in found.items():
        o.add_declared(parser, None if len(whose[dest]) == len(declared) else whose[dest])
    return found


def options_of(args: argparse.Namespace, probe: str, own: Sequence[Option],
               declared: dict[str, Option], command: str, *, strict: bool = True
               ) -> argparse.Namespace:
    """The options parsed (``args``, by a parser of :func:`add_declared_options`) as the
    ``command`` (``report``, ``compare``) of the results of the probe ``probe`` takes them:
    its own options (``own``) that were not given at their defaults, and none of the other
    ``declared`` options.

    Raises:
        UsageError: (``strict``) an option given that ``probe`` does not declare, naming it,
            the probe and its own options; without ``strict`` such an option is left out
            (the report of one probe's results among several probes').
    """
    mine = {o.dest for o in own}
    foreign = [o for dest, o in declared.items() if dest not in mine and hasattr(args, dest)]
    if foreign and strict:
        named = ", ".join(o.flags[0] for o in foreign)
        theirs = ", ".join(o.flags[0] for o in own) or "none"
        raise UsageError(f"{named}: not {'an option' if len(foreign) == 1 else 'options'} of "
                         f"{probe} results' {command} (its own options: {theirs})")
    values = {k: v for k, v in vars(args).items() if k not in declared or k in mine}
    for o in own:
        if o.dest not in values:
            values[o.dest] = o.default
    return argparse.Namespace(**values)
