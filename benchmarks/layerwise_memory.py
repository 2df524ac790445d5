"""Layer-wise runs in bounded memory (issue 22): peak memory and time by model shape.

A synthetic encoder of any dimension x layer views (random vectors, the same for an item
every time: seeded by the item's words and span) goes through ``ncprobe.compute(encoder=...)``
on the English stimuli (naturalistic + neutral, 11,240 stimuli, 11,028 unique items),
``n_boot=0``, with an empty cache (cold) and again with the cache filled (warm). Each
measurement is a fresh Python process: its peak resident memory (``ru_maxrss`` of that
child alone, from ``wait4``) and its wall time (imports, stimuli, encoding, the analysis;
nothing is written but the cache).

Shapes: 384 x 7 (minilm, all layers), 1024 x 13, 1024 x 25 (bert-large, all layers); with
``--big`` also 5120 x 11, 5120 x 21, 4096 x 33 (LLaMA-2 7B) and 5120 x 41 (LLaMA-2 13B),
whose times per view show whether time is linear in the number of views. The free disk is
checked first: a shape whose vectors do not fit is stored as float16 (``--store-dtype``),
or skipped with a message when even those do not fit.

``--baseline DIR`` measures another ncprobe tree (e.g. a worktree of the main branch:
``git worktree add /tmp/base HEAD``) the same way, for the shapes whose vectors, at the
old code's four times their size, fit in memory.

Targets: 1024 x 25 peak <= 1.5 GB cold and warm, warm <= 15 s; 5120 x 41 peak <= 3 GB.

Run: ``NCPROBE_DATA=../shared/ncimp/raw python benchmarks/layerwise_memory.py [--big]
[--baseline /tmp/base]`` (scratch space: ``--scratch DIR``, default the system's temporary
directory; the caches are deleted after each shape).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STIMULI, UNIQUE = 11240, 11028  # English nat+neut: stimuli, unique (sentence, span) items
SHAPES = [(384, 7, "minilm, all layers"), (1024, 13, ""), (1024, 25, "bert-large, all layers")]
BIG = [(5120, 11, ""), (5120, 21, ""), (4096, 33, "LLaMA-2 7B, all layers"),
       (5120, 41, "LLaMA-2 13B, all layers")]
GB = 1e9


class SyntheticEncoder:
    """Random vectors of ``views`` x ``dim``, the same for an item every time."""

    levels = ("sent", "nc")

    def __init__(self, dim: int, views: int) -> None:
        self.dim, self.name = dim, f"synthetic-{dim}x{views}"
        self.views = tuple((i,) for i in range(views))

    def fingerprint(self) -> dict:
        return {"family": "benchmark", "name": self.name, "dim": self.dim,
                "views": [list(v) for v in self.views], "format": 1}

    def encode(self, sentences, spans):
        import numpy as np

        from ncprobe.encoders.base import Encoded

        n, shape = len(sentences), (2, len(self.views), self.dim)
        out = np.empty((n, *shape), dtype=np.float32)
        for i, (words, span) in enumerate(zip(sentences, spans, strict=True)):
            seed = hashlib.sha1(json.dumps([list(words), list(span)]).encode()).digest()[:8]
            rng = np.random.default_rng(int.from_bytes(seed, "little"))
            out[i] = rng.standard_normal(shape, dtype=np.float32)
        return Encoded(out[:, 0], out[:, 1], np.zeros(n, np.int32), np.zeros(n, np.int32))


def child(args: argparse.Namespace) -> None:
    """One measurement (run in a fresh process): compute with the synthetic encoder."""
    import warnings

    import ncprobe

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stim = ncprobe.load_stimuli("en", contexts="nat,neut")
    enc = SyntheticEncoder(args.dim, args.views)
    options = {} if args.store_dtype == "float32" else {"store_dtype": args.store_dtype}
    res = ncprobe.compute(stimuli=stim, encoder=enc, cache_dir=args.cache, n_boot=0,
                          progress=False, **options)
    print(json.dumps({"compute_s": time.perf_counter() - t0, "stimuli": len(stim),
                      "rows": len(res.cosines), "encoded": res.meta[0]["encoded"]}))


def measure(tree: Path, dim: int, views: int, cache: Path, store_dtype: str,
            script: Path | None = None, extra: tuple[str, ...] = ()) -> dict:
    """Wall time and peak RSS of one child process (``script --child``, default this one)
    running ``tree``'s ncprobe; its last line of output is JSON, returned with them."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, str((script or Path(__file__)).resolve()), "--child", "--dim",
           str(dim), "--views", str(views), "--cache", str(cache), "--store-dtype",
           store_dtype, *extra]
    with tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, env=env, cwd=tempfile.gettempdir(),
                                stdout=subprocess.PIPE, stderr=err, text=True)
        assert proc.stdout is not None
        out = proc.stdout.read()
        # reaped here, not by Popen: wait4 gives this child's own resource usage
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stdout.close()
        if proc.returncode:
            err.seek(0)
            sys.exit(f"{tree}: {dim}x{views} failed (exit {proc.returncode}):\n"
                     f"{err.read()[-2000:]}")
    got = json.loads(out.strip().splitlines()[-1])
    return {"wall_s": wall, "peak_gb": usage.ru_maxrss * 1024 / GB, **got}


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--big", action="store_true", help="also 5120/4096-d shapes (~60 GB "
                    "written in turn, one shape's cache at a time)")
    ap.add_argument("--baseline", type=Path, help="another ncprobe tree to measure as well")
    ap.add_argument("--shapes", help="DIMxVIEWS,... instead of the default list")
    ap.add_argument("--store-dtype", default="float32", choices=("float32", "float16",
                                                                 "bfloat16"))
    ap.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()))
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--dim", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--views", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    if not os.environ.get("NCPROBE_DATA"):
        sys.exit("set NCPROBE_DATA to the NCIMP data directory (see docs/data.md)")
    shapes = SHAPES + (BIG if args.big else [])
    if args.shapes:
        like = {(d, v): w for d, v, w in SHAPES + BIG}
        shapes = [(d, v, like.get((d, v), "")) for d, v in
                  (tuple(int(x) for x in s.split("x")) for s in args.shapes.split(","))]
    work = Path(tempfile.mkdtemp(prefix="ncprobe-layerwise-", dir=args.scratch))
    mem_gb = _available_memory_gb()
    print(f"layer-wise memory, {os.cpu_count()} CPUs, {mem_gb:.1f} GB available, scratch "
          f"{work}, load average {os.getloadavg()[0]:.2f}", flush=True)
    trees = [("now", REPO)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
    rows = []
    try:
        for dim, views, like in shapes:
            vectors = STIMULI * views * dim * 4 * 2 / GB   # sent + span, float32, per stimulus
            stored = UNIQUE * views * dim * 2 * 2 * (2 if args.store_dtype == "float32" else 1)
            free = shutil.disk_usage(work).free
            dtype = args.store_dtype
            if stored * 1.1 > free:
                half = stored / (2 if dtype == "float32" else 1)
                if dtype == "float32" and half * 1.1 <= free:
                    dtype = "float16"
                    print(f"  {dim}x{views}: {stored / GB:.1f} GB of float32 vectors do not "
                          f"fit in {free / GB:.1f} GB free: stored as float16", flush=True)
                else:
                    print(f"  {dim}x{views}: skipped, {stored / GB:.1f} GB of vectors do not "
                          f"fit in {free / GB:.1f} GB free", flush=True)
                    continue
            for label, tree in trees:
                if label == "baseline":
                    why = (f"~{4.2 * vectors:.0f} GB: not run" if 4.2 * vectors > 0.8 * mem_gb
                           else "float32 only: not run" if dtype != "float32" else None)
                    if why:  # the old code holds about four times the vectors
                        print(f"  {dim}x{views} baseline: skipped ({why})", flush=True)
                        rows.append({"shape": f"{dim} x {views}", "tree": label,
                                     "skipped": why})
                        continue
                cache = work / f"cache-{label}"
                cold = measure(tree, dim, views, cache, dtype)
                disk = du(cache)
                warm = measure(tree, dim, views, cache, dtype)
                shutil.rmtree(cache)
                row = {"shape": f"{dim} x {views}", "like": like, "tree": label,
                       "store": dtype, "vectors_gb": vectors, "disk_gb": disk / GB,
                       "cold": cold, "warm": warm}
                rows.append(row)
                print(f"  {label:<8} {dim:>5} x {views:<3} {dtype:<8} vectors {vectors:5.2f} GB"
                      f"  disk {disk / GB:6.2f} GB  cold {cold['peak_gb']:5.2f} GB "
                      f"{cold['wall_s']:6.1f} s  warm {warm['peak_gb']:5.2f} GB "
                      f"{warm['wall_s']:6.1f} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(rows)
    print(f"\nload average at the end {os.getloadavg()[0]:.2f}")


def _available_memory_gb() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024 / GB
    except OSError:
        pass
    return float("inf")


def report(rows: list[dict]) -> None:
    print("\n| model shape (dim x layer views) | like | vectors (sent + span, float32) | "
          "store | disk | peak RSS cold / warm | time cold / warm | baseline peak cold / "
          "warm | baseline time cold / warm |")
    print("|---|---|---|---|---|---|---|---|---|")
    base = {r["shape"]: r for r in rows if r["tree"] == "baseline"}
    for r in rows:
        if r["tree"] != "now":
            continue
        b = base.get(r["shape"])
        if b is None or "skipped" in b:
            bpeak, btime = (f"({b['skipped']})" if b else "(not measured)"), ""
        else:
            bpeak = f"{b['cold']['peak_gb']:.2f} / {b['warm']['peak_gb']:.2f} GB"
            btime = f"{b['cold']['wall_s']:.1f} / {b['warm']['wall_s']:.1f} s"
        print(f"| {r['shape']} | {r['like']} | {r['vectors_gb']:.2f} GB | {r['store']} | "
              f"{r['disk_gb']:.2f} GB | {r['cold']['peak_gb']:.2f} / "
              f"{r['warm']['peak_gb']:.2f} GB | {r['cold']['wall_s']:.1f} / "
              f"{r['warm']['wall_s']:.1f} s | {bpeak} | {btime} |")

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    now = {r["shape"]: r for r in rows if r["tree"] == "now"}
    print("\ntargets")
    if "1024 x 25" in now:
        r = now["1024 x 25"]
        peak = max(r["cold"]["peak_gb"], r["warm"]["peak_gb"])
        print(f"  1024 x 25 peak {peak:.2f} GB (<= 1.5 GB cold and warm: "
              f"{verdict(peak <= 1.5)}); warm {r['warm']['wall_s']:.1f} s (<= 15 s: "
              f"{verdict(r['warm']['wall_s'] <= 15)})")
    if "5120 x 41" in now:
        r = now["5120 x 41"]
        peak = max(r["cold"]["peak_gb"], r["warm"]["peak_gb"])
        print(f"  5120 x 41 peak {peak:.2f} GB (<= 3 GB: {verdict(peak <= 3)})")
    wide = [r for s, r in now.items() if s.startswith("5120 x")]
    if len(wide) > 1:
        for kind in ("cold", "warm"):
            per = [(int(r["shape"].split(" x ")[1]), r[kind]["compute_s"]) for r in wide]
            text = ", ".join(f"{v} views {t / v:.2f} s/view" for v, t in per)
            spread = max(t / v for v, t in per) / min(t / v for v, t in per)
            print(f"  5120-d {kind}, compute time per view: {text} (max/min {spread:.2f})")


if __name__ == "__main__":
    main()
