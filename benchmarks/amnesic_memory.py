"""The amnesic concept's erasers by model shape (issue 40): time and peak memory of
:func:`ncprobe.amnesic.fit.fit_concept`, one layer view at a time, on a synthetic concept of
AStitch's English size (282 training rows, 466 held out, two classes, 30 expressions).

Each (view, level) is read, fitted (the concept's eraser and the control's: two LEACE fits, a
``d x d`` covariance and its eigendecomposition each) and checked (the guarantee: a standardised
logistic regression before and after, on the training and held-out rows), then let go: the
memory held is one view's vectors and one fitter's statistics, whatever the number of views;
the time grows with the views, and with ``d`` as the eigendecomposition's ``d**3``.

Run: ``python benchmarks/amnesic_memory.py --dim 5120 --views 2`` (a 5120-d model, two views
of the 41 of LLaMA-2 13B, span level: about two minutes a fit on 2 CPU cores) or ``--dim 384
--views 7`` (minilm). Each measurement runs in a fresh process (peak resident memory from
``wait4``); prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
N_TRAIN, N_HELD, GROUPS = 282, 466, 30


def child(args: argparse.Namespace) -> None:
    import numpy as np

    from ncprobe.amnesic.fit import fit_concept
    from ncprobe.concept import Concept, Side

    rng = np.random.default_rng(0)
    n = N_TRAIN + N_HELD
    y = rng.integers(0, 2, n)
    groups = np.array([f"e{g}" for g in rng.integers(0, GROUPS, n)], dtype=object)
    direction = rng.normal(size=args.dim)

    def read(view: str, level: str) -> np.ndarray:  # one view's vectors, made when asked
        r = np.random.default_rng(int(view) * 2 + (level == "nc"))
        return (r.normal(size=(n, args.dim)) + np.outer(y, direction) * 0.05).astype(np.float32)

    side = {name: Side(np.arange(a, b), y[a:b], groups[a:b],
                       np.array([f"{name}:{i}" for i in range(a, b)], dtype=object))
            for name, (a, b) in (("train", (0, N_TRAIN)), ("held", (N_TRAIN, n)))}
    views = [(str(v), lv) for v in range(args.views) for lv in args.levels.split(",")]
    concept = Concept("synthetic", ("literal", "idiomatic"), views, read, side["train"],
                      side["held"], meta={"probe": "synthetic", "lang": "en"})
    t0 = time.perf_counter()
    fitted = fit_concept(concept, seed=0)
    secs = time.perf_counter() - t0
    g = fitted.guarantee
    after = g[(g["condition"] == "concept") & (g["split"] == "train") & (g["probe"] == "erased")]
    print(json.dumps({"seconds": round(secs, 1), "fits": 2 * len(views),
                      "train_after_max": float(after["accuracy"].max()),
                      "chance": float(after["chance"].max())}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dim", type=int, default=5120)
    ap.add_argument("--views", type=int, default=2)
    ap.add_argument("--levels", default="nc", help="levels per view: nc, sent or nc,sent")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    cmd = [sys.executable, __file__, "--child", "--dim", str(args.dim), "--views",
           str(args.views), "--levels", args.levels]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    out = proc.stdout.read() if proc.stdout else ""
    if status:
        sys.exit(f"the measurement failed ({status})")
    got = json.loads(out.strip().splitlines()[-1])
    print(json.dumps({"dim": args.dim, "views": args.views, "levels": args.levels, **got,
                      "wall_s": round(time.perf_counter() - t0, 1),
                      "peak_gb": round(usage.ru_maxrss / 2**20, 2),
                      "load_avg": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
