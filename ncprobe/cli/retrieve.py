"""``ncprobe retrieve``: the IdioLink retrieval probe for one or more models."""

from __future__ import annotations

import argparse
import json
import sys

from ..schema import CORRECTIONS
from ._argtypes import bm25_b, bm25_k1, comma_list, count, positive_int
from ._options import cache_options, data_dir_option, say


def add_retrieve_parser(sub, config: type) -> argparse.ArgumentParser:
    from ..retrieval.bm25 import K1, B

    p = sub.add_parser(
        "retrieve", help="IdioLink: does a model retrieve sentences of the same meaning?",
        description="Rank every document of an IdioLink split for every query, per model and "
        "query mode (sentence, span, instruction_sentence, instruction_span), and score the "
        "rankings: R-Precision and nDCG@10 overall, per query usage (literal / idiomatic), "
        "per idiom and per subject, with 95%% intervals resampling idioms and paired tests "
        "between modes and models. --model bm25 is the lexical control. Writes a results "
        "directory (parquet + run.json) and prints a summary (or --json rows).")
    p.add_argument("--model", dest="models", action="append", type=comma_list, metavar="M",
                   help="model(s): an alias (`ncprobe models --probe idiolink`), a "
                   "sentence-transformers hub id or directory, or bm25; a comma list or "
                   "repeated (default: minilm)")
    p.add_argument("--modes", default="all", metavar="MODES",
                   help="query modes, a comma list of sentence, span, instruction_sentence, "
                   "instruction_span, or all (default); bm25 runs sentence and span")
    p.add_argument("--split", default="test", choices=("test", "val", "train"),
                   help="the split (default test: the published figures)")
    p.add_argument("--idioms", type=comma_list, metavar="I1,I2",
                   help="only these idioms (their queries and documents; a quick look)")
    p.add_argument("--out", metavar="DIR",
                   help="results directory (default: results/idiolink-<split>-<models>)")
    p.add_argument("--overwrite", action="store_true",
                   help="replace a results directory that holds a different run; one that is "
                   "not ncprobe's never")
    p.add_argument("--json", action="store_true",
                   help="print the overall rows as JSON (model, mode, usage, r_precision, "
                   "ndcg@10 as fractions, n, intervals, tie ranges) instead of the summary")
    p.add_argument("--n-boot", type=count, default=1000, metavar="N",
                   help="idiom resamples of the intervals (default 1000; 0: none); the paired "
                   "tests draw their own sign flips, 1,000 per test of the run's family")
    p.add_argument("--seed", type=count, default=0, metavar="S", help="seed (default 0)")
    p.add_argument("--correct", choices=CORRECTIONS, default="holm",
                   help="multiple-comparison correction of the paired tests (default holm)")
    p.add_argument("--k1", type=bm25_k1, default=K1, metavar="K1",
                   help=f"BM25 k1, term-frequency saturation: a finite number >= 0 (default "
                   f"{K1}, the benchmark's)")
    p.add_argument("--b", type=bm25_b, default=B, metavar="B",
                   help=f"BM25 b, length normalisation: a finite number from 0 to 1 (default "
                   f"{B}, the benchmark's)")
    p.add_argument("--span-fallback", choices=("sentence",),
                   help="where a span cannot be pooled (no token overlaps it), use the "
                   "query's sentence vector, marked in the results (default: stop, naming "
                   "the queries)")
    p.add_argument("--batch-size", type=positive_int, default=64, metavar="N",
                   help="texts per forward pass (default 64)")
    p.add_argument("--device", help="cpu, cuda, cuda:1, mps (default: cuda when available)")
    p.add_argument("--dtype", help="float32 (default), float16 or bfloat16 (GPU)")
    p.add_argument("--allow-remote-code", action="store_true",
                   help="run models whose hub repository holds Python code (it runs on this "
                   "machine: only for models you trust)")
    data_dir_option(p)
    p.add_argument("--accept-modified-data", action="store_true",
                   help="run on IdioLink files that differ from their pinned upstream copy "
                   "(edited on purpose) instead of stopping (exit 3); they are named in the "
                   "notes and recorded in run.json")
    cache_options(p)
    p.add_argument("--quiet", action="store_true",
                   help="no progress (bars, and each model and mode as it runs), no summary")
    return p


def run_retrieve(args: argparse.Namespace, config: type) -> int:
    from .._io import safe_name
    from ..retrieval.probe import retrieve
    from ..retrieval.queries import parse_modes

    models = [m for group in (args.models or [["minilm"]]) for m in group if m]
    modes = parse_modes(args.modes)
    out = args.out or f"results/idiolink-{args.split}-{'+'.join(safe_name(m) for m in models)}"
    # retrieve refuses, before any work, an --out that is not ncprobe's, holds another run
    # (without --overwrite) or cannot be written
    res = retrieve(models, modes, args.split, idioms=args.idioms, data_dir=args.data_dir,
                   accept_modified_data=args.accept_modified_data, out=out,
                   overwrite=args.overwrite, cache_dir=args.cache_dir,
                   use_cache=not args.no_cache, batch_size=args.batch_size,
                   device=args.device, dtype=args.dtype,
                   allow_remote_code=args.allow_remote_code, k1=args.k1, b=args.b,
                   n_boot=args.n_boot, seed=args.seed, correction=args.correct,
                   span_fallback=args.span_fallback, progress=not args.quiet,
                   on_step=None if args.quiet else say)
    if args.json:
        print(json.dumps(res.json_rows(), indent=1, ensure_ascii=False))
    elif not args.quiet:
        print(res.summary())
    encoded = [f"{m['config']['model']} {m['encoded']}" for m in res.meta if "encoded" in m]
    if encoded:
        print("texts encoded now (the others read from the embedding cache): "
              + ", ".join(encoded), file=sys.stderr)
    print(f"results written to {out}", file=sys.stderr)
    return 0
