"""The AStitch probe layer by layer in bounded memory (issue 31): peak memory and time of
``ncprobe run astitch`` by model shape.

The synthetic encoder of ``benchmarks/layerwise_memory.py`` (random vectors of any dimension x
layer views, the same for an item every time) stands in for the model: the probe runs as the
command does (``ncprobe.run("astitch", ...)``: the uses, their minimal pairs, the embedding
cache, then one layer view at a time), on English, with an empty cache (cold) and again warm,
each in a fresh process (peak resident memory from ``wait4``; wall time).

A view's vectors of every stimulus are what the probe holds at once: 24,760 English stimuli
(every split) x dim x 2 parts. The paraphrase probe reads every stimulus; the linear probe
adds the training split's originals. ``--splits`` chooses the splits (default all five; for a
5120-d model the one- and few-shot settings, dev and test: 6,288 stimuli, as a 5120-feature
probe on the 3,327 zero-shot rows takes minutes per view on 2 cores; a view's memory grows
with the stimuli read, in proportion).

Shapes: 384 x 7 (minilm, all layers), 1024 x 25 (bert-large); ``--big`` adds 5120 x 41 (LLaMA-2
13B, all layers; stored as float16, 5.3 GB of scratch disk). Target: 5120 x 41 within 3 GB.

Run: ``NCPROBE_DATA=../shared/ncimp/raw python benchmarks/astitch_memory.py [--big]
[--splits ...] [--scratch DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from layerwise_memory import GB, SyntheticEncoder, du, measure  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SHAPES = [(384, 7, "minilm, all layers"), (1024, 25, "bert-large, all layers")]
BIG = [(5120, 41, "LLaMA-2 13B, all layers")]
ALL = "train_zero_shot,train_one_shot,train_few_shot,dev,test"
#: 5120-d: the one- and few-shot settings (a 5120-feature probe on 3,327 zero-shot rows
#: takes minutes per view on 2 cores); the memory of a view scales with the stimuli read
FEW = "train_one_shot,train_few_shot,dev,test"


def child(args: argparse.Namespace) -> None:
    """One measurement (a fresh process): the probe with the synthetic encoder."""
    import warnings

    import ncprobe
    import ncprobe.astitch.probe as probe

    enc = SyntheticEncoder(args.dim, args.views)
    probe._encoder = lambda model, lang, cfg, control=False: (enc, [])  # the stand-in
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = ncprobe.run("astitch", models=[enc.name], langs=["en"],
                          splits=args.splits.split(","), static="none", n_boot=0,
                          n_perm=0, store_dtype=args.store_dtype, cache_dir=args.cache,
                          progress=False, jobs=1)
    print(json.dumps({"run_s": time.perf_counter() - t0, "scores": len(res.scores),
                      "views": int(res.scores["layer"].nunique())}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true", help="also 5120 x 41 (float16, ~5 GB)")
    ap.add_argument("--shapes", help="DIMxVIEWS,... instead of the default list")
    ap.add_argument("--splits", default=None, help=f"the splits (default {ALL}; 5120-d: "
                    f"{FEW} unless given)")
    ap.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dim", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--views", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--store-dtype", default="float32", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    if not os.environ.get("NCPROBE_DATA"):
        sys.exit("set NCPROBE_DATA to the data directory (see docs/data.md)")
    shapes = SHAPES + (BIG if args.big else [])
    if args.shapes:
        shapes = [(d, v, "") for d, v in (tuple(int(x) for x in s.split("x"))
                                          for s in args.shapes.split(","))]
    work = Path(tempfile.mkdtemp(prefix="ncprobe-astitch-", dir=args.scratch))
    print(f"astitch memory, {os.cpu_count()} CPUs, scratch {work}, load average "
          f"{os.getloadavg()[0]:.2f}", flush=True)
    print("| shape | like | splits | store | disk | peak RSS cold / warm | time cold / warm |")
    print("|---|---|---|---|---|---|---|")
    try:
        for dim, views, like in shapes:
            splits = args.splits or (ALL if dim < 4096 else FEW)
            dtype = "float32" if dim < 4096 else "float16"
            cache = work / "cache"
            extra = ("--splits", splits)
            cold = measure(REPO, dim, views, cache, dtype, Path(__file__), extra)
            disk = du(cache)
            warm = measure(REPO, dim, views, cache, dtype, Path(__file__), extra)
            shutil.rmtree(cache)
            print(f"| {dim} x {views} | {like} | {splits} | {dtype} | {disk / GB:.2f} GB | "
                  f"{cold['peak_gb']:.2f} / {warm['peak_gb']:.2f} GB | "
                  f"{cold['wall_s']:.1f} / {warm['wall_s']:.1f} s |", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
