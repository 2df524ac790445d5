"""The ``ncprobe`` command line.

Exit codes a script can rely on: 0 success, 1 unexpected ncprobe error, 2 bad
usage, 3 data error (missing file, bad row), 4 download failed, 5 model not
available here (weights, optional package, GPU or network missing), 130
interrupted (the embedding cache keeps what was encoded: rerun to resume), 141
stdout closed early by its reader (``ncprobe data info --json | head``).

One module per command group (:mod:`.data`, :mod:`.run` for ``probes``, ``run`` and its
shorthands ``compute`` and ``retrieve``, ``report`` and ``reproduce``, :mod:`.compare`,
:mod:`.board`, :mod:`.pairs`, :mod:`.models`, :mod:`.cache`; a probe's own options and run are
the probe's, :mod:`ncprobe.probes`), each giving
every command an ``add_<command>_parser(subparsers, config)`` and a ``run_<command>(args,
config)``; :data:`COMMANDS` registers them, in the order ``--help`` lists them. A new
command is a new module and one entry there. The domain work is in the modules that own
it; these modules parse, call and print.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import logging
import os
import sys
import warnings
from functools import partial
from typing import Callable, Iterator, NamedTuple, Sequence

from .._io import UNWRITABLE_ERRNOS, output_error
from .._version import VERSION as __version__
from ..errors import DataErrors, NcprobeError, UsageError
from ..probes.options import config_from_args, config_options
from . import board, cache, compare, data, models, pairs, run

__all__ = ["COMMANDS", "Command", "EXIT_BROKEN_PIPE", "EXIT_INTERRUPTED", "EXIT_USAGE",
           "build_parser", "config_from_args", "config_options", "default_config", "main"]

#: Exit code of a bad option or argument, or of no command (help printed).
EXIT_USAGE = UsageError.exit_code
#: Exit code when interrupted (Ctrl-C), as for a process killed by SIGINT (128 + 2).
EXIT_INTERRUPTED = 130
#: Exit code when stdout is a pipe closed early, as for a process killed by SIGPIPE.
EXIT_BROKEN_PIPE = 141

_DESCRIPTION = """\
Probe the embedding spaces of language models for idiomaticity, on the NCIMP
noun-compound minimal pairs of He et al. (Computational Linguistics, 2025).

Start with:
  ncprobe data download        fetch the NCIMP files (pinned, verified)
  ncprobe data info            what is there: NCs, classes, contexts, probes
  ncprobe compute              every measure for one model and language
                               (default: {model} on English, offline)
"""


def default_config() -> type:
    """The config class the run options of the command line are made from: that of the
    probe whose shorthand is ``compute`` (its :meth:`~ncprobe.probes.base.Probe.config_class`,
    NCIMP's :class:`~ncprobe.ncimp.config.RunConfig`), found through the registry."""
    from ..probes import probes

    return next(p for p in probes() if p.shorthand == "compute").config_class()


class Command(NamedTuple):
    """One command of :data:`COMMANDS`."""

    #: ``add_parser(subparsers, config)`` adds the command's parser (and its actions) and
    #: returns it; ``config`` is the config class the run options are made from
    #: (:func:`default_config`, or a subclass of it).
    add_parser: Callable[..., argparse.ArgumentParser]
    #: ``run(args, config)`` runs it and returns the exit code; a command with actions
    #: (``data download``) is only run with one (without, its help is printed: exit 2).
    run: Callable[[argparse.Namespace, type], int]


#: Every command, by name, in the order ``ncprobe --help`` lists them.
COMMANDS: dict[str, Command] = {
    "data": Command(data.add_data_parser, data.run_data),
    "probes": Command(run.add_probes_parser, run.run_probes),
    "run": Command(run.add_run_parser, run.run_run),
    # the shorthands of `run ncimp` and `run idiolink`: the same options, output and codes
    "compute": Command(partial(run.add_shorthand_parser, "compute"),
                       partial(run.run_shorthand, "compute")),
    "report": Command(run.add_report_parser, run.run_report),
    # NCIMP's own command (the probe declares it: Probe.commands)
    "reproduce": Command(partial(run.add_probe_command_parser, "reproduce"),
                         partial(run.run_probe_command, "reproduce")),
    "compare": Command(compare.add_compare_parser, compare.run_compare),
    "board": Command(board.add_board_parser, board.run_board),
    "pairs": Command(pairs.add_pairs_parser, pairs.run_pairs),
    "retrieve": Command(partial(run.add_shorthand_parser, "retrieve"),
                        partial(run.run_shorthand, "retrieve")),
    "models": Command(models.add_models_parser, models.run_models),
    "cache": Command(cache.add_cache_parser, cache.run_cache),
}


def build_parser(config: type | None = None) -> argparse.ArgumentParser:
    """The ``ncprobe`` parser; the run options of ``compute`` and ``reproduce`` are the fields
    of ``config`` (default :func:`default_config`, see :func:`config_options`)."""
    import dataclasses

    from ..config import field_default

    config = config or default_config()
    model = next((field_default(f) for f in dataclasses.fields(config) if f.name == "model"),
                 None)
    parser = argparse.ArgumentParser(
        prog="ncprobe", description=_DESCRIPTION.format(model=model),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"ncprobe {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more log output (-vv for debug)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS.values():
        command.add_parser(sub, config)
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


@contextlib.contextmanager
def _plain_warnings() -> Iterator[None]:
    """ncprobe's own warnings (their categories are ncprobe's) as ``warning: <message>`` on
    stderr while a command runs, as its errors are ``error: <message>``: no file name, line
    number or source line of ncprobe's code. Other packages' warnings as Python shows them."""
    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if category.__module__.split(".")[0] == "ncprobe":
            print(f"warning: {message}", file=sys.stderr if file is None else file)
            return
        shown(message, category, filename, lineno, file, line)
    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = shown


def _run(argv: Sequence[str] | None) -> int:
    config = default_config()  # looked up here: a test may patch the module's default_config
    parser = build_parser(config)
    args = _parse(parser, argv)
    level = [logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    command_parser = _subparser(parser, args.command)
    if _no_action(command_parser, args):  # `ncprobe data`: the group's help
        command_parser.print_help()
        return EXIT_USAGE
    try:
        with _plain_warnings():
            return COMMANDS[args.command].run(args, config)
    except DataErrors as e:
        for err in e.errors:
            print(f"error: {err}", file=sys.stderr)
        return e.exit_code
    except NcprobeError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except OSError as e:
        # the last net for a write that no writer named itself: a read-only or full disk,
        # no permission. Anything else is a bug and keeps its traceback (exit 1).
        if e.errno not in UNWRITABLE_ERRNOS:
            raise
        unwritable = output_error(e)
        print(f"error: {unwritable}", file=sys.stderr)
        return unwritable.exit_code


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)``, with an unknown option refused by the command it was
    given to: that command's usage, and the options closest to it (``--standardize``: did
    you mean --standardise?), as argparse's own message names only the top-level usage."""
    args, extras = parser.parse_known_args(argv)
    if not extras:
        return args
    words = list(sys.argv[1:] if argv is None else argv)
    owner = parser
    # the command (and its action) the unknown words came after; words before the command
    # are the top-level parser's
    first = words.index(extras[0]) if extras[0] in words else len(words)
    command = getattr(args, "command", None)
    if command is not None and command in words[:first]:
        owner = _subparser(parser, command)
        action = _subparsers(owner)
        name = getattr(args, action.dest, None) if action is not None else None
        if name is not None and name in words[:first]:
            owner = _subparser(owner, name)
    known = [s for a in owner._actions for s in a.option_strings if s.startswith("--")]
    shown = []
    for word in extras:
        close = (difflib.get_close_matches(word.split("=", 1)[0], known, n=3, cutoff=0.6)
                 if word.startswith("--") else [])
        shown.append(f"{word} (did you mean {' or '.join(close)}?)" if close else word)
    owner.error(f"unrecognized arguments: {' '.join(shown)}")
    raise AssertionError("unreachable")  # error() exits (SystemExit 2)


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)),
                None)


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The parser of the command (or action) ``name`` of ``parser``."""
    action = _subparsers(parser)
    assert action is not None, "a parser without commands"
    return action.choices[name]


def _no_action(parser: argparse.ArgumentParser, args: argparse.Namespace) -> bool:
    """Whether ``parser`` is a group of actions (``data``, ``pairs``, ``cache``) given none."""
    action = _subparsers(parser)
    return action is not None and getattr(args, action.dest) is None
