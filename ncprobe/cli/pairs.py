"""``ncprobe pairs generate``: a user's own compounds -> a pairs file of probe sentences."""

from __future__ import annotations

import argparse
import sys

from ..argtypes import count, finite_number, positive_number
from ..errors import UsageError


def add_pairs_parser(sub, config: type) -> argparse.ArgumentParser:
    pairs = sub.add_parser("pairs", help="your own compounds: generate their probe sentences",
                           description="Work with your own compounds in the minimal-pairs "
                           "format of ncprobe.load_pairs.")
    psub = pairs.add_subparsers(dest="pairs_command", metavar="ACTION")
    p = psub.add_parser(
        "generate", help="generate P_Comp, P_Rand (and P_Syn/P_WordsSyn from given synonyms)",
        description="Read compounds in context (CSV or JSON Lines: nc, sentence, start/end "
        "or span, head, modifier; optional comp, class, syn, wordssyn, context, lang) and "
        "write a pairs file for review: the original, P_Comp (head alone, modifier alone), "
        "--k frequency-matched random phrases (P_Rand: wordfreq Zipf frequency within "
        "--band of each word they replace, seeded), and P_Syn/P_WordsSyn from the synonyms "
        "given (';' between several). Every word outside the compound is kept. A row "
        "without a context column (or with it empty) is context S1, the first naturalistic "
        "sentence: results and reports count it as naturalistic (nat); give S1/S2/S3 for "
        "several sentences of one compound, N for a neutral one. head and modifier must be "
        "whole words of the compound and a given span must hold exactly its words; every "
        "offending row is named and nothing is written (exit 3). Needs the generate extra: "
        'pip install "ncprobe[generate]" (exit 5 without it).')
    p.add_argument("input", metavar="IN", help="the compounds in context (.csv or .jsonl)")
    p.add_argument("--lang", help="language of rows without a lang column (a language code "
                   "wordfreq covers: en, pt, fr, de, es, it, nl, ...)")
    p.add_argument("--out", required=True, metavar="FILE", help="the pairs file to write "
                   "(.csv)")
    p.add_argument("--k", type=count, default=5, metavar="N",
                   help="random phrases per sentence (default %(default)s, as the study)")
    p.add_argument("--seed", type=count, default=0, help="seed of the random draw "
                   "(default %(default)s)")
    p.add_argument("--band", type=positive_number, default=0.5, metavar="ZIPF",
                   help="half-width of the Zipf band around each word (default %(default)s)")
    p.add_argument("--head", choices=("first", "last", "ask"), default=None,
                   help="for rows without head/modifier: the first or last part of a "
                   "two-part compound is the head, or ask for each compound on the terminal")
    p.add_argument("--scale", type=finite_number, nargs=2, default=(0, 5), metavar=("LOW", "HIGH"),
                   help="the range of the comp gold scores (default 0 5, as NCIMP); a score "
                   "outside it is a bad row (exit 3)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file")
    p.add_argument("--quiet", action="store_true", help="no progress (on stderr), no summary")
    return pairs


def run_pairs(args: argparse.Namespace, config: type) -> int:
    """``ncprobe pairs generate`` (the one action)."""
    from ..data.generate import generate_pairs

    # progress on stderr: on a terminal one line that rewrites itself and is cleared at the
    # end (as a progress bar), elsewhere (a log file) one line per step
    tty = sys.stderr.isatty()
    shown = False

    def progress(line: str) -> None:
        nonlocal shown
        shown = True
        print(f"\r\x1b[Kpairs generate: {line}" if tty else f"pairs generate: {line}",
              end="" if tty else "\n", file=sys.stderr, flush=True)

    def clear() -> None:
        if tty and shown:
            print("\r\x1b[K", end="", file=sys.stderr, flush=True)

    def ask(nc: str, parts: tuple[str, ...]) -> str:
        clear()  # the question on a line of its own
        return _ask_head(nc, parts)

    try:
        report = generate_pairs(args.input, args.out, args.lang, k=args.k, seed=args.seed,
                                band=args.band, overwrite=args.overwrite,
                                head=None if args.head == "ask" else args.head,
                                ask=ask if args.head == "ask" else None,
                                scale=tuple(args.scale),
                                progress=None if args.quiet else progress)
    finally:
        clear()
    if not args.quiet:
        print(report.summary())
    return 0


def _ask_head(nc: str, parts: tuple[str, ...]) -> str:
    """Ask on the terminal which part of ``nc`` is its head (``--head ask``)."""
    choices = "/".join(parts)
    while True:
        try:
            answer = input(f"head of {nc!r} [{choices}]: ").strip()
        except EOFError:
            raise UsageError(f"no answer for the head of {nc!r} (input ended); give head and "
                             "modifier columns, or --head first|last") from None
        if answer in parts:
            return answer
        print(f"  answer one of {choices}", file=sys.stderr)
