"""IdioLink retrieval: the whole ``ncprobe retrieve`` command against its floor, in one run.

Measures, each in a fresh process (time and peak RSS of that process):

* floor: one bare batched forward pass of the model's sentence-transformers pipeline
  (``preprocess`` + ``forward``) over the unique texts the four query modes need (every
  document, every query sentence, every instructed query), sorted by length, in batches of
  ``--batch-size``; nothing pooled, nothing stored, no metrics; timed from the first batch
  (imports, data and model loading left out: the floor is the forward pass alone);
* cold: ``ncprobe retrieve --model M --modes all`` with an empty embedding cache (the whole
  command: loading the data, encoding, scoring, metrics, intervals, tests, the results
  directory);
* warm: the same command again (everything from the cache);
* bm25: ``ncprobe retrieve --model bm25`` (both its modes).

Run: ``NCPROBE_DATA=../shared/ncimp/raw python benchmarks/idiolink_retrieval.py``.
Targets on a 2-core CPU (issue 21): cold <= 1.2x the floor, warm < 10 s, bm25 < 30 s.
The load average before and after is printed: measure on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def floor(model: str, split: str, batch_size: int) -> dict:
    """One bare batched forward pass over the unique texts (this process): the seconds of
    the forward passes alone, and ``all_seconds`` with the imports, data and model load."""
    start = time.perf_counter()
    import torch

    from ncprobe.data.idiolink import load_idiolink
    from ncprobe.encoders import load_encoder
    from ncprobe.encoders.registry import query_format_of
    from ncprobe.retrieval.queries import document_text, query_text

    il = load_idiolink(split)
    fmt = query_format_of(model)
    texts = [document_text(fmt, d.sentence) for d in il.documents]
    for mode in ("span", "instruction_span"):
        texts += [query_text(fmt, mode, q.sentence, q.span, q.start, q.end).text
                  for q in il.queries]
    texts = sorted(set(texts), key=len)
    st = load_encoder(model, "en", layers="-1").st
    t0 = time.perf_counter()  # the forward passes alone: not the imports, data or model load
    with torch.inference_mode():
        for i in range(0, len(texts), batch_size):
            st.forward(st.preprocess(texts[i:i + batch_size]))
    end = time.perf_counter()
    return {"texts": len(texts), "seconds": end - t0, "all_seconds": end - start}


def command(args: list[str], cache: str) -> dict:
    """``ncprobe retrieve ARGS`` in this process."""
    from ncprobe.cli import main

    os.environ["NCPROBE_CACHE"] = cache
    t0 = time.perf_counter()
    code = main(["retrieve", "--quiet", *args])
    return {"exit": code, "seconds": time.perf_counter() - t0}


def child(what: str, payload: dict) -> dict:
    """Run one measurement in a fresh Python process; its result and its peak RSS."""
    code = ("import json, resource, sys; sys.path.insert(0, 'benchmarks');"
            "import idiolink_retrieval as b;"
            f"r = b.{what}(**json.loads(sys.argv[1]));"
            "r['peak_gb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20;"
            "print('RESULT ' + json.dumps(r))")
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, json.dumps(payload)], check=True,
                         capture_output=True, text=True)
    line = next(x for x in out.stdout.splitlines() if x.startswith("RESULT "))
    res = json.loads(line[len("RESULT "):])
    res["process_seconds"] = time.perf_counter() - t0  # with Python's and torch's imports
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="minilm")
    ap.add_argument("--split", default="test")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=1,
                    help="measure the floor and the cold run this many times, alternately, "
                    "and keep each one's fastest (the machine's noise is a few seconds)")
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        common = ["--split", args.split, "--batch-size", str(args.batch_size), "--overwrite"]
        floors, colds = [], []
        for k in range(args.repeat):
            cold_cache = os.path.join(tmp, f"cache{k}")
            floors.append(child("floor", {"model": args.model, "split": args.split,
                                          "batch_size": args.batch_size}))
            colds.append(child("command", {"args": ["--model", args.model, "--modes", "all",
                                                    "--out", os.path.join(tmp, "r"), *common],
                                           "cache": cold_cache}))
        cache = cold_cache
        rows = {
            "floor": min(floors, key=lambda r: r["seconds"]),
            "cold": min(colds, key=lambda r: r["seconds"]),
            "warm": child("command", {"args": ["--model", args.model, "--modes", "all",
                                               "--out", os.path.join(tmp, "r"), *common],
                                      "cache": cache}),
            "bm25": child("command", {"args": ["--model", "bm25", "--out",
                                               os.path.join(tmp, "b"), *common],
                                      "cache": cache}),
        }
    print(f"load average after: {os.getloadavg()}")
    print(f"{'run':<6} {'seconds':>8} {'process s':>10} {'peak GB':>8}")
    for name, r in rows.items():
        print(f"{name:<6} {r['seconds']:>8.1f} {r['process_seconds']:>10.1f} "
              f"{r['peak_gb']:>8.2f}")
    floor = rows["floor"]
    strict = rows["cold"]["seconds"] / floor["seconds"]
    loaded = rows["cold"]["seconds"] / floor["all_seconds"]
    whole = rows["cold"]["process_seconds"] / floor["process_seconds"]
    print(f"\n{floor['texts']} unique texts, batches of {args.batch_size}; the floor's "
          f"imports, data and model load took {floor['all_seconds'] - floor['seconds']:.1f} s.\n"
          f"cold / floor: {loaded:.2f} (each from its imports of torch and the model's "
          f"library to its end); {whole:.2f} (whole processes); {strict:.2f} against the "
          f"forward passes alone. Target <= 1.2.\n"
          f"warm {rows['warm']['process_seconds']:.1f} s, whole process (target < 10); "
          f"bm25 {rows['bm25']['process_seconds']:.1f} s (target < 30)")


if __name__ == "__main__":
    main()
