"""``ncprobe board``: models across probes, from results directories of any probes
(:mod:`ncprobe.board` computes it, :mod:`ncprobe.board_files` writes it)."""

from __future__ import annotations

import argparse
import sys

from ..argtypes import number
from ..config import N_BOOT
from ..probes.options import accept_edited_option, exclude_option, say

_COUNT = number(int, minimum=1, name="count", message="expected a whole number >= 1, not {text!r}")
_SEED = number(int, minimum=0, name="seed", message="expected a whole number >= 0, not {text!r}")


def add_board_parser(sub, config: type) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "board", help="one table of models x probes, with rank intervals and tiers",
        description="One table of models x probes from results directories of any probes "
        "(NCIMP, NCC, AStitch, IdioLink): each probe's headline metric (declared by the probe) "
        "with its interval, each model's rank with a rank interval (the probe's unit "
        "resampled, the same draws for every model) and its tier (models the probe's paired "
        "tests cannot separate share one); a model a probe lacks is shown as missing. Writes "
        "board.md, board.tex, board.csv, tests.csv, the figure and a self-contained "
        "board.html into --out. Amnesic probing's results have no headline metric: they are "
        "refused (leave them out with --exclude).")
    p.add_argument("results", nargs="+", metavar="RESULTS",
                   help="results directories, or directories to search for them (every "
                   "directory below holding a run.json)")
    exclude_option(p)
    accept_edited_option(p)
    p.add_argument("--out", metavar="DIR", default="board",
                   help="output directory (default: board); never inside a results directory")
    p.add_argument("--overwrite", action="store_true",
                   help="replace another kind of report that --out holds; files ncprobe did "
                   "not write are never replaced")
    p.add_argument("--n-boot", type=_COUNT, default=N_BOOT, metavar="N",
                   help=f"draws of each probe's unit (default: {N_BOOT})")
    p.add_argument("--seed", type=_SEED, default=0, help="seed of the draws (default: 0)")
    p.add_argument("--format", default="png,pdf",
                   help="comma list of figure formats: png, pdf, svg, svgz, eps, ps, jpg, jpeg, "
                   "tif, tiff, webp (default: png,pdf; the HTML page holds a PNG whatever)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return p


def run_board(args: argparse.Namespace, config: type) -> int:
    from ..board import compute_board, load_headlines
    from ..board_files import check_board_dir, markdown, write_board
    from ..drawing import check_formats

    formats = check_formats(args.format)
    check_board_dir(args.out, formats, overwrite=args.overwrite)  # before anything is read
    headlines = load_headlines(args.results, exclude=args.exclude or (),
                               accept_edited=args.accept_edited_results)
    board = compute_board(headlines, n_boot=args.n_boot, seed=args.seed)
    written = write_board(board, args.out, formats=formats, overwrite=args.overwrite,
                          progress=None if args.quiet else say)
    sys.stdout.write(markdown(board))
    print(f"{len(written)} files written to {args.out}")
    return 0
