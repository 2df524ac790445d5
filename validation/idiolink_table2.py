"""IdioLink's Table 2 rows that run offline: all-MiniLM-L6-v2 (``minilm``) in the four query
modes and BM25, on the test split (issue 21).

Runs ``ncprobe.retrieve(models=["minilm", "bm25"])`` and prints the paper's layout (percent, 2
decimals) for all queries, then literal and idiomatic ones, with the 95% idiom-cluster
intervals and, for BM25, the published figures beside the stable ones. The published
all-MiniLM-L6-v2 row is not in this script: compare the printed row with the paper's Table 2
("SBERT").

Writes nothing but the embedding cache (``--cache-dir``, default a new temporary directory;
a warm cache makes a rerun take seconds).

Run: ``NCPROBE_DATA=../shared/ncimp/raw python validation/idiolink_table2.py``
"""

from __future__ import annotations

import argparse
import tempfile
import time

from ncprobe.retrieval import retrieve
from ncprobe.retrieval.report import table2_markdown

#: The paper's BM25 rows (test split, zero-shot), percent.
PUBLISHED_BM25 = {("sentence", "r_precision"): 36.04, ("sentence", "ndcg@10"): 59.07,
                  ("span", "r_precision"): 49.22, ("span", "ndcg@10"): 49.87}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cache-dir", default=None, help="embedding cache (default: a new one)")
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--n-boot", type=int, default=1000)
    args = ap.parse_args()
    cache = args.cache_dir or tempfile.mkdtemp(prefix="idiolink-cache-")
    t0 = time.perf_counter()
    res = retrieve(models=["minilm", "bm25"], split="test", data_dir=args.data_dir,
                   cache_dir=cache, n_boot=args.n_boot, progress=False)
    took = time.perf_counter() - t0
    for usage in ("all", "literal", "idiomatic"):
        print(f"## {usage} queries\n")
        print(table2_markdown(res.overall, usage))
    print("## BM25 against the published figures (all queries)\n")
    print("| query | metric | stable ties | tie range | published | inside |")
    print("|---|---|---|---|---|---|")
    for (mode, metric), published in PUBLISHED_BM25.items():
        row = res.select(model="bm25", mode=mode, usage="all").iloc[0]
        lo, hi = 100 * row[metric + "_min"], 100 * row[metric + "_max"]
        inside = "yes" if round(lo, 2) <= published <= round(hi, 2) else "NO"
        print(f"| {mode} | {metric} | {100 * row[metric]:.2f} | [{lo:.2f}, {hi:.2f}] | "
              f"{published:.2f} | {inside} |")
    print(f"\n{took:.1f} s (embedding cache: {cache})")


if __name__ == "__main__":
    main()
