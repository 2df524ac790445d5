"""Running ``ncprobe`` in the test's process: its exit code, argparse's refusals included."""

from __future__ import annotations

from ncprobe.cli import main


def exit_code(argv: list[str]) -> int:
    """The exit code of ``ncprobe ARGV``: what :func:`ncprobe.cli.main` returns, or the code
    of the SystemExit argparse raises for a bad option (2) or ``--help`` (0)."""
    try:
        return main(argv)
    except SystemExit as e:
        return int(e.code or 0)
