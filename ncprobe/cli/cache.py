"""``ncprobe cache info | clear``: the embedding cache."""

from __future__ import annotations

import argparse
import sys


def add_cache_parser(sub, config: type) -> argparse.ArgumentParser:
    cache = sub.add_parser("cache", help="inspect or clear the embedding cache",
                           description="The embedding cache keeps pooled vectors per model "
                           "fingerprint ($NCPROBE_CACHE, else the user cache directory).")
    csub = cache.add_subparsers(dest="cache_command", metavar="ACTION")
    for action, text in (("info", "list cached models, items and sizes"),
                         ("clear", "delete cached vectors (all, or one model with --model)")):
        p = csub.add_parser(action, help=text, description=text)
        p.add_argument("--cache-dir", metavar="DIR", help="cache root (default: $NCPROBE_CACHE "
                       "or the user cache directory)")
        if action == "clear":
            p.add_argument("--model", help="only this model name (as `cache info` lists "
                           "it); exit 2 when none is cached")
        else:
            p.add_argument("--quick", action="store_true",
                           help="read the shards' headers only: damaged vectors (bytes "
                           "changed on disk) are not found. By default every vector is read "
                           "and checked against the CRC-32 recorded when it was written")
    return cache


def run_cache(args: argparse.Namespace, config: type) -> int:
    """``ncprobe cache ACTION``."""
    return {"info": _info, "clear": _clear}[args.cache_command](args)


def _info(args: argparse.Namespace) -> int:
    from .._io import cache_root
    from ..cache.maintenance import cache_info, scan

    entries = cache_info(args.cache_dir, verify=not args.quick)
    print(f"cache: {cache_root(args.cache_dir)}")
    for e in entries:
        # vectors kept in half precision (--store-dtype) are named; float32 is the default
        dtype = "" if e["store_dtype"] == "float32" else f"{e['store_dtype']}  "
        print(f"  {e['model']!s:<40} {e['items']:>8} items {e['bytes'] / 1e6:>9.1f} MB  "
              f"{dtype}{e['dir']}")
        for bad in e["corrupt"]:
            print(f"    corrupt shard (discarded by the next compute): {bad}")
    if not entries:
        print("  (empty)")
    for odd in scan(args.cache_dir).spoiled:  # ncprobe's entry, holding what it never writes
        print(f"  not listed (not an ncprobe cache entry any more: {odd.why}): {odd.path}")
    return 0


def _clear(args: argparse.Namespace) -> int:
    from .._io import cache_root
    from ..cache.maintenance import cache_clear

    report = cache_clear(args.cache_dir, args.model)
    for path, why in report.kept:
        print(f"kept {path}: {why}", file=sys.stderr)
    if report.foreign:
        print(f"left {len(report.foreign)} other item(s) in {cache_root(args.cache_dir)} "
              "untouched (not ncprobe's)", file=sys.stderr)
    print(f"removed {len(report.removed)} cached model(s)")
    return 0
