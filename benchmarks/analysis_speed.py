"""What a researcher feels: whole-command wall times of reruns, and the ratios of issue 10.

Every figure is the wall time of a whole ``ncprobe`` command in a fresh process
(imports, data loading and verification, the model if it is loaded, the
analysis and the writing of the results), the median of ``--repeat`` runs,
with the peak resident memory of the slowest child process. The embedding
cache and the results go to a temporary directory, so nothing of the user's is
read or written.

Targets on a 2-core CPU:

* ``compute`` (glove-6b-50d, English, 1000 bootstrap resamples), every vector
  cached: at most 3x the wall time of ``ncprobe data info --json``;
* ``compute --model minilm``, cached rerun: at most 10% of the cold run;
* ``compute --model minilm --per-sentence --layers all``, cached: at most 15 s;
* ``reproduce --models glove-6b-50d,minilm --langs en``, warm: at most 15 s.

Run: ``NCPROBE_DATA=../shared/ncimp/raw python benchmarks/analysis_speed.py``
(``--skip-cold`` leaves out the cold minilm run, about a minute).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Runs one command and prints the peak RSS (KB, Linux) of that command alone.
_MEASURE = ("import resource, subprocess, sys; rc = subprocess.run(sys.argv[1:]).returncode; "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, rc)")


def run(args: list[str], env: dict) -> tuple[float, int]:
    """Wall seconds and peak memory (MB) of ``ncprobe ARGS``; stops on a non-zero exit."""
    cmd = [sys.executable, "-c", _MEASURE, sys.executable, "-m", "ncprobe", *args]
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True, check=True).stdout
    wall = time.perf_counter() - t0
    rss_kb, rc = out.split()[-2:]
    if rc != "0":
        sys.exit(f"ncprobe {' '.join(args)} exited {rc}")
    return wall, int(rss_kb) // 1024


def timed(label: str, args: list[str], env: dict, repeat: int) -> float:
    runs = [run(args, env) for _ in range(repeat)]
    wall = statistics.median(w for w, _ in runs)
    peak = max(m for _, m in runs)
    print(f"  {label:<52} {wall:7.2f} s  (runs: {', '.join(f'{w:.2f}' for w, _ in runs)}; "
          f"peak {peak} MB)", flush=True)
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per figure (median)")
    ap.add_argument("--skip-cold", action="store_true", help="no cold minilm run")
    args = ap.parse_args()
    if not os.environ.get("NCPROBE_DATA"):
        sys.exit("set NCPROBE_DATA to the NCIMP data directory (see docs/data.md)")
    work = Path(tempfile.mkdtemp(prefix="ncprobe-bench-"))
    env = {**os.environ, "NCPROBE_CACHE": str(work / "cache")}
    out = ["--quiet", "--overwrite"]
    glove = ["compute", "--out", str(work / "glove"), *out]
    minilm = ["compute", "--model", "minilm", "--out", str(work / "minilm"), *out]
    layers = ["compute", "--model", "minilm", "--per-sentence", "--layers", "all",
              "--out", str(work / "minilm-all"), *out]
    repro = ["reproduce", "--models", "glove-6b-50d,minilm", "--langs", "en", "--quiet",
             "--out", str(work / "report"), "--results-dir", str(work / "results"),
             "--overwrite"]
    print(f"ncprobe analysis speed, {os.cpu_count()} CPUs, scratch {work}")

    info = timed("data info --json", ["data", "info", "--json"], env, args.repeat)
    run(glove, env)  # fill the cache
    g = timed("compute (glove-6b-50d, en), cached", glove, env, args.repeat)
    if args.skip_cold:
        run(minilm, env)
        cold = float("nan")
    else:
        cold = timed("compute --model minilm, cold (empty cache)", minilm, env, 1)
    warm = timed("compute --model minilm, cached", minilm, env, args.repeat)
    run(layers, env)
    lay = timed("compute --model minilm --per-sentence --layers all, cached", layers, env,
                args.repeat)
    run(repro, env)
    rep = timed("reproduce --models glove-6b-50d,minilm --langs en, warm", repro, env,
                args.repeat)

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    print("\ntargets")
    print(f"  glove cached / data info        {g / info:5.2f}x   (<= 3x: {verdict(g <= 3 * info)})")
    if cold == cold:  # not NaN
        print(f"  minilm cached / cold            {warm / cold:5.1%}   "
              f"(<= 10%: {verdict(warm <= 0.1 * cold)})")
    print(f"  minilm --per-sentence --layers all, cached  {lay:5.1f} s "
          f"(<= 15 s: {verdict(lay <= 15)})")
    print(f"  reproduce warm                  {rep:5.1f} s   (<= 15 s: {verdict(rep <= 15)})")


if __name__ == "__main__":
    main()
