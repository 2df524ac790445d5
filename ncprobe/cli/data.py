"""``ncprobe data download | info | check | path``: the NCIMP files."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

from ..argtypes import comma_list, count, positive_seconds, seconds, url_template
from ..data.sources import DEFAULT_BACKOFF, DEFAULT_RETRIES, DEFAULT_TIMEOUT
from ..errors import DataError
from ..probes import probe_names
from ..probes.options import data_dir_option


def add_data_parser(sub, config: type) -> argparse.ArgumentParser:
    data = sub.add_parser("data", help="fetch, inspect and validate the NCIMP data",
                          description="Fetch, inspect and validate the NCIMP data files.")
    dsub = data.add_subparsers(dest="data_command", metavar="ACTION")

    p = dsub.add_parser("download", help="fetch the pinned upstream files and verify them",
                        description="Fetch every NCIMP file pinned in ncprobe's manifest from "
                        "its upstream commit, verify it by its git blob SHA-1 and write it "
                        "atomically. Files already verified are skipped; corrupt ones are "
                        "fetched again.")
    data_dir_option(p)
    p.add_argument("--url", metavar="URL", type=url_template,
                   help="base URL or template with {owner} {repo} {commit} {path} "
                   "(default: https://raw.githubusercontent.com/{owner}/{repo}/{commit}/{path})")
    p.add_argument("--retries", type=count, default=DEFAULT_RETRIES, metavar="N",
                   help="further attempts per file after a network error, a cut-off transfer, "
                   f"a timeout, HTTP 5xx or 429 (default {DEFAULT_RETRIES})")
    p.add_argument("--timeout", type=positive_seconds, default=DEFAULT_TIMEOUT,
                   metavar="SECONDS", help="seconds to wait for the server to connect or send "
                   f"more bytes, per request (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--deadline", type=positive_seconds, default=None,
                   metavar="SECONDS", help="seconds each file may take in all, retries "
                   "included: stops a server that sends a byte now and then (default: 60, or "
                   "the file's pinned size at 50 kB/s when longer)")
    p.add_argument("--backoff", type=seconds, default=DEFAULT_BACKOFF,
                   metavar="SECONDS", help="wait before the first retry, doubled for each next "
                   f"one (default {DEFAULT_BACKOFF:g})")

    p = dsub.add_parser("info", help="what is present, and the counts of NCs and stimuli",
                        description="Show which files are present and verified, and per "
                        "language the NCs, scores, classes, contexts and stimuli per context.")
    data_dir_option(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of text")

    p = dsub.add_parser("check", help="validate every file; non-zero exit with per-row errors",
                        description="Verify every file against its pinned git blob id, parse "
                        "every tag column and load every stimulus; print each problem with its "
                        "file, row and column. Exit 3 when anything is wrong.")
    data_dir_option(p)
    p.add_argument("--probe", metavar="P", type=comma_list, default=None,
                   help=f"check only the files of these probes ({', '.join(probe_names())}, or a "
                   "comma list), each of them required: a missing one is an error (default: "
                   "every pinned file; a missing extra file is a note naming its probe)")

    p = dsub.add_parser("path", help="print the data directory in use")
    data_dir_option(p)
    return data


def run_data(args: argparse.Namespace, config: type) -> int:
    """``ncprobe data ACTION``: the action's function, given the data directory in use."""
    from ..data import sources

    action = {"path": _path, "download": _download, "check": _check,
              "info": _info}[args.data_command]
    return action(sources.resolve_data_dir(args.data_dir), args)


def _path(root: Path, args: argparse.Namespace) -> int:
    print(root)
    return 0


def _download(root: Path, args: argparse.Namespace) -> int:
    from ..data import sources

    def progress(path: str, status: str) -> None:
        print(f"  {status:<12} {path}", file=sys.stderr)
    print(f"downloading NCIMP into {root}", file=sys.stderr)
    report = sources.download(root, url_template=args.url, retries=args.retries,
                              timeout=args.timeout, backoff=args.backoff,
                              deadline=args.deadline, progress=progress)
    print(report.summary())
    return 0


def _check(root: Path, args: argparse.Namespace) -> int:
    from ..data.check import check

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report = check(root, probes=args.probe)
    for w in caught:
        print(f"warning: {w.message}")
    for line in report.tolerated + report.notes:
        print(f"note: {line}")
    for err in report.errors:
        print(f"error: {err}", file=sys.stderr)
    print(f"{len(report.errors)} error(s) in {root}")
    return 0 if report.ok else DataError.exit_code


def _info(root: Path, args: argparse.Namespace) -> int:
    """Files and counts; exit 3 when a required file is missing or any file does not verify.

    The table of files is printed whatever happens; the counts are those of the files as
    they are (modified ones included), and every problem is listed as an error.
    """
    from ..data.summary import data_summary

    info = data_summary(root)
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False))
    else:
        _print_info(info)
    return DataError.exit_code if info["errors"] else 0


def _print_info(info: dict) -> None:
    print(f"data directory: {info['data_dir']}")
    for path, f in info["files"].items():
        # the probe that reads a file; "-": read by none (pinned for completeness or for a
        # probe to come)
        print(f"  {f['status']:<10} {f['need']:<9} {f['probe'] or '-':<9} {path}")
    from ..probes import probes

    for probe in probes():  # each probe's part: NCIMP's languages, IdioLink's splits
        for line in probe.data_info_lines(info):
            print(line)
    if info["notes"]:
        print("\nnotes:")
        for n in info["notes"]:
            print(f"  - {n}")
    for w in info["warnings"]:
        print(f"\nwarning: {w}")
    for e in info["errors"]:
        print(f"error: {e}", file=sys.stderr)
    if info["errors"]:
        print(f"{len(info['errors'])} problem(s) in {info['data_dir']}: run `ncprobe data "
              "download` to restore the pinned files, and `ncprobe data check` for every bad "
              "row", file=sys.stderr)
