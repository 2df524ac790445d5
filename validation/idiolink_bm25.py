"""IdioLink's BM25 control on the test split against the published figures (issue 21).

Computes BM25 (k1 = 0.9, b = 0.4, the benchmark's tokenisation) with sentence and span
queries, and prints a Markdown table: R-Precision and nDCG@10 in percent with the stable tie
rule (ties broken by document position in ``indexes.json``), the range that reordering only
tied documents could give, the published figure, and the time taken. The benchmark's own
figures depend on numpy's (non-stable) sort path and the CPU: they are expected inside the
tie range, not equal to the stable figures.

Nothing is written: the table is printed.

Run: ``NCPROBE_DATA=../shared/ncimp/raw python validation/idiolink_bm25.py``
"""

from __future__ import annotations

import argparse
import time

import pandas as pd

from ncprobe.data.idiolink import load_idiolink
from ncprobe.retrieval import aggregate, bm25_scores, evaluate

#: The paper's Table 2 (test split, zero-shot), percent.
PUBLISHED = {("sentence", "r_precision"): 36.04, ("sentence", "ndcg@10"): 59.07,
             ("span", "r_precision"): 49.22, ("span", "ndcg@10"): 49.87}
LABELS = {"r_precision": "R-Precision", "ndcg@10": "nDCG@10"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-dir", help="the data directory (default: $NCPROBE_DATA)")
    ap.add_argument("--k1", type=float, default=0.9)
    ap.add_argument("--b", type=float, default=0.4)
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    il = load_idiolink("test", args.data_dir)
    t_load = time.perf_counter() - t0
    rows, frames = [], []
    for mode in ("sentence", "span"):
        t = time.perf_counter()
        per_query = evaluate(bm25_scores(il, mode, k1=args.k1, b=args.b), il, mode=mode)
        elapsed = time.perf_counter() - t
        frames.append(per_query)
        overall = aggregate(per_query).set_index("usage").loc["all"]
        for m in ("r_precision", "ndcg@10"):
            pub = PUBLISHED[(mode, m)]
            lo, hi = 100 * overall[m + "_min"], 100 * overall[m + "_max"]
            inside = "yes" if round(lo, 2) <= pub <= round(hi, 2) else "NO"
            rows.append(f"| BM25 | {mode} | {LABELS[m]} | {100 * overall[m]:.2f} | "
                        f"[{lo:.2f}, {hi:.2f}] | {pub:.2f} | {inside} | {elapsed:.2f} s |")
    print(f"# IdioLink BM25 (test split: {len(il.queries)} queries, {len(il.documents)} "
          f"documents; k1 = {args.k1}, b = {args.b}; loading {t_load:.2f} s)\n")
    print("| system | query | metric | stable ties | tie range | published | published in "
          "range | time (scores + metrics) |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    by_usage = aggregate(pd.concat(frames, ignore_index=True))
    print("\nPer query usage (percent, stable ties [tie range]):\n")
    print("| query | usage | R-Precision | nDCG@10 | n |")
    print("|---|---|---|---|---|")
    for _, r in by_usage.iterrows():
        cells = [f"{100 * r[m]:.2f} [{100 * r[m + '_min']:.2f}, {100 * r[m + '_max']:.2f}]"
                 for m in ("r_precision", "ndcg@10")]
        print(f"| {r['mode']} | {r['usage']} | {cells[0]} | {cells[1]} | {r['n']} |")
    print("\nTies are broken by document position (stable sort). The benchmark ranks with "
          "numpy's default argsort, whose order of tied documents depends on the numpy build "
          "and the CPU: its figures lie inside the tie range, not necessarily on the stable "
          "figure.")
    print(f"\nTotal time: {time.perf_counter() - t0:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
