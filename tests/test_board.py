"""``ncprobe board`` (issue 41): rank intervals and tiers against a hand computation, a model a
probe lacks shown as missing, bad input refused with nothing written, and the HTML page in a
real headless browser (Debian's chromium)."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ncprobe.board import compute_board
from ncprobe.board_files import html_page, markdown, wide_table
from ncprobe.cli import main
from ncprobe.errors import UsageError
from ncprobe.headline import UNIT, Headline
from ncprobe.ncc.results import NCC_COLUMNS, NccResults
from ncprobe.probes import get_probe

from .by_hand import holm

# --- a small case by hand ------------------------------------------------------------------

#: 3 models x 6 units, two rows per unit for m1 (a cluster), one for the others.
VALUES = {"m1": {"u1": [0.9, 0.7], "u2": [0.5, 0.4], "u3": [0.8, 0.6], "u4": [0.2, 0.3],
                 "u5": [0.6, 0.9], "u6": [0.4, 0.5]},
          "m2": {"u1": [0.5], "u2": [0.6], "u3": [0.4], "u4": [0.6], "u5": [0.5], "u6": [0.3]},
          "m3": {"u1": [0.1], "u2": [0.2], "u3": [0.0], "u4": [0.3], "u5": [0.1], "u6": [0.2]}}
N_BOOT, SEED = 200, 7


def _rows(values: dict) -> pd.DataFrame:
    return pd.DataFrame([{UNIT: u, "x": x} for u, xs in values.items() for x in xs])


def _mean(df: pd.DataFrame) -> float:
    return float(df["x"].mean()) if len(df) else math.nan


def _headline(probe: str, models: dict, higher: bool = True) -> Headline:
    return Headline(probe, probe.upper(), "mean x", higher, "units",
                    {m: _rows(v) for m, v in models.items()}, _mean)


def _by_hand(models: dict, higher: bool, n_boot: int, seed: int, alpha: float = 0.05) -> dict:
    """The board of one probe by a separate, plain loop: the draws by the board's rule (units
    sorted; ``default_rng(seed).integers(0, K, (n_boot, K))``), each draw's means, ranks by
    counting the better ones, percentile intervals, bootstrap p, Holm, greedy tiers."""
    units = sorted({u for v in models.values() for u in v})
    draws = np.random.default_rng(seed).integers(0, len(units), size=(n_boot, len(units)))
    names = list(models)
    sign = 1.0 if higher else -1.0

    def mean_of(m: str, drawn) -> float:
        xs = [x for i in drawn for x in models[m].get(units[i], [])]
        return sum(xs) / len(xs)

    stats = {m: [mean_of(m, d) for d in draws] for m in names}
    point = {m: mean_of(m, range(len(units))) for m in names}

    def ranks(vals: dict) -> dict:
        return {m: 1 + sum(1 for o in names if sign * vals[o] > sign * vals[m]) for m in names}

    draw_ranks = [ranks({m: stats[m][b] for m in names}) for b in range(n_boot)]
    out = {}
    for m in names:
        rs = sorted(r[m] for r in draw_ranks)
        lo = rs[math.ceil(0.025 * n_boot) - 1]
        hi = rs[math.ceil(0.975 * n_boot) - 1]
        out[m] = {"value": point[m], "rank": ranks(point)[m], "rank_low": lo, "rank_high": hi,
                  "ci": tuple(np.percentile(stats[m], [2.5, 97.5]))}
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]]
    ps = []
    for a, b in pairs:
        d = [stats[a][k] - stats[b][k] for k in range(n_boot)]
        k = min(sum(x <= 0 for x in d), sum(x >= 0 for x in d))
        ps.append(min(1.0, 2 * (k + 1) / (n_boot + 1)))
    sig = {frozenset(pair): pc <= alpha for pair, pc in zip(pairs, holm(ps), strict=True)}
    tier, best = 0, None
    for m in sorted(names, key=lambda m: -sign * point[m]):
        if best is None or sig[frozenset((best, m))]:
            tier, best = tier + 1, m
        out[m]["tier"] = tier
    return out


@pytest.fixture(scope="module")
def small():
    return compute_board([_headline("p", VALUES)], n_boot=N_BOOT, seed=SEED)


def test_values_rank_intervals_and_tiers_match_a_hand_computation(small) -> None:
    want = _by_hand(VALUES, True, N_BOOT, SEED)
    got = small.cells.set_index("model")
    for m, w in want.items():
        c = got.loc[m]
        assert c["value"] == pytest.approx(w["value"])
        assert (c["ci_low"], c["ci_high"]) == pytest.approx(w["ci"])
        assert (c["rank"], c["rank_low"], c["rank_high"]) == (w["rank"], w["rank_low"],
                                                              w["rank_high"])
        assert c["tier"] == w["tier"]
    # the case is not degenerate: m1 and m2 overlap (a rank interval of width > 0), m3 is last
    assert got.loc["m3", "rank"] == 3 and got.loc["m1", "rank_high"] >= 2


def test_lower_is_better_reverses_the_ranks() -> None:
    b = compute_board([_headline("p", VALUES, higher=False)], n_boot=N_BOOT, seed=SEED)
    want = _by_hand(VALUES, False, N_BOOT, SEED)
    got = b.cells.set_index("model")
    assert {m: (got.loc[m, "rank"], got.loc[m, "rank_low"], got.loc[m, "rank_high"],
                got.loc[m, "tier"]) for m in want} == {
        m: (w["rank"], w["rank_low"], w["rank_high"], w["tier"]) for m, w in want.items()}


def test_forced_ranks_give_point_intervals_and_one_tier_each() -> None:
    # every unit orders the models a > b > c by far: every draw ranks them so
    forced = {"a": {f"u{i}": [10.0 + i] for i in range(8)},
              "b": {f"u{i}": [5.0 + 0.1 * i] for i in range(8)},
              "c": {f"u{i}": [0.0 + 0.1 * i] for i in range(8)}}
    b = compute_board([_headline("p", forced)], n_boot=300, seed=1).cells.set_index("model")
    assert [tuple(b.loc[m, ["rank", "rank_low", "rank_high", "tier"]]) for m in "abc"] == [
        (1, 1, 1, 1), (2, 2, 2, 2), (3, 3, 3, 3)]


def test_a_model_a_probe_lacks_is_missing_never_last(small) -> None:
    other = _headline("q", {"m1": VALUES["m1"], "m2": VALUES["m2"]})
    b = compute_board([_headline("p", VALUES), other], n_boot=N_BOOT, seed=SEED)
    q = b.cells[b.cells["probe"] == "q"].set_index("model")
    assert bool(q.loc["m3", "missing"]) and math.isnan(q.loc["m3", "rank"])
    assert math.isnan(q.loc["m3", "tier"]) and set(q["n_models"]) == {2}
    assert sorted(q.loc[["m1", "m2"], "rank"]) == [1, 2]
    wide = wide_table(b)
    assert list(wide.loc["m3", ["Q mean x", "Q rank", "Q tier"]]) == ["missing"] * 3
    assert "| m3 |" in markdown(b) and "missing" in markdown(b)
    assert 'data-missing="1"' in html_page(b, b"png")


# --- the command on results directories -----------------------------------------------------

def _ncc(model: str, correct: list[bool]) -> NccResults:
    n = len(correct)
    items = pd.DataFrame({"system": model, "kind": "selected", "setting": "nested", "layer": "",
                          "level": "", "measure": "", "item": [f"i{i}" for i in range(n)],
                          "nc": [f"nc{i}" for i in range(n)], "gold": "C", "predicted": "C",
                          "correct": correct})
    empty = {k: pd.DataFrame(columns=list(c)) for k, c in NCC_COLUMNS.items() if k != "items"}
    return NccResults(items=items, **empty, meta=[{"config": {"model": model},
                                                   "fingerprint": {"name": model},
                                                   "data_sources": {}, "notes": []}])


@pytest.fixture(scope="module")
def dirs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("board")
    _ncc("alpha", [True] * 9 + [False]).to_parquet(root / "ncc-alpha")
    _ncc("beta", [True, False] * 5).to_parquet(root / "ncc-beta")
    return root


def _files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir())} if path.is_dir() else {}


def test_the_command_writes_every_output(dirs, tmp_path, capsys) -> None:
    out = tmp_path / "board"
    assert main(["board", str(dirs / "ncc-alpha"), str(dirs / "ncc-beta"), "--out", str(out),
                 "--n-boot", "50", "--format", "png", "--quiet"]) == 0
    assert {"board.md", "board.tex", "board.csv", "tests.csv", "board.png",
            "board.html"} <= set(_files(out))
    cells = pd.read_csv(out / "board.csv")
    assert list(cells["model"]) == ["alpha", "beta"]
    assert list(cells["value"]) == pytest.approx([0.9, 0.5])
    assert "| alpha | 0.900 [" in capsys.readouterr().out
    html = (out / "board.html").read_text()
    assert "http://" not in html and "https://" not in html and "src=\"data:image/png" in html


def _refused(argv: list[str], capsys) -> str:
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    return err


def test_one_model_twice_is_refused_naming_both(dirs, tmp_path, capsys) -> None:
    shutil.copytree(dirs / "ncc-alpha", tmp_path / "copy")
    out = tmp_path / "board"
    err = _refused(["board", str(dirs / "ncc-alpha"), str(tmp_path / "copy"), "--out",
                    str(out)], capsys)
    assert "'alpha'" in err and "ncc-alpha" in err and "copy" in err
    assert not out.exists()


def test_edited_results_are_refused(dirs, tmp_path, capsys) -> None:
    edited = tmp_path / "edited"
    shutil.copytree(dirs / "ncc-beta", edited)
    meta = json.loads((edited / "run.json").read_text())
    meta["runs"][0]["notes"] = ["a note added by hand"]
    (edited / "run.json").write_text(json.dumps(meta))
    out = tmp_path / "board"
    code = main(["board", str(dirs / "ncc-alpha"), str(edited), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 3 and "edited" in err and str(edited) in err, err
    assert not out.exists()


def test_a_probe_without_a_headline_is_refused(dirs, tmp_path, capsys) -> None:
    amnesic = tmp_path / "amnesic"
    amnesic.mkdir()
    (amnesic / "run.json").write_text(json.dumps({"probe": "amnesic", "runs": []}))
    out = tmp_path / "board"
    err = _refused(["board", str(dirs / "ncc-alpha"), str(amnesic), "--out", str(out)], capsys)
    assert "amnesic" in err and "no headline metric" in err and "--exclude" in err
    assert not out.exists()
    with pytest.raises(UsageError, match="no headline"):
        get_probe("amnesic").headline(None)  # type: ignore[arg-type]


def test_out_inside_a_results_directory_is_refused(dirs, capsys) -> None:
    before = _files(dirs / "ncc-alpha")
    err = _refused(["board", str(dirs / "ncc-alpha"), "--out", str(dirs / "ncc-alpha" / "b")],
                   capsys)
    assert "results directory" in err
    assert _files(dirs / "ncc-alpha") == before


def test_out_holding_files_ncprobe_did_not_write_is_refused(dirs, tmp_path, capsys) -> None:
    out = tmp_path / "board"
    out.mkdir()
    (out / "board.md").write_text("mine\n")
    err = _refused(["board", str(dirs / "ncc-alpha"), "--out", str(out)], capsys)
    assert "did not write" in err
    assert _files(out) == {"board.md": b"mine\n"}


# --- the HTML page in a real browser --------------------------------------------------------

def _browser() -> str | None:
    return next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")
                 if shutil.which(n)), None)


def _run_browser(browser: str, profile: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0",
                           f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120)


def _console_errors(stderr: str) -> list[str]:
    """The page's console errors and uncaught exceptions in chromium's log."""
    return [line for line in stderr.splitlines() if "CONSOLE" in line
            and re.search(r"Uncaught|Error|error", line)]


def _models_in_order(dom: str) -> list[str]:
    return re.findall(r'<tr data-model="([^"]+)"', dom)


@pytest.mark.slow
def test_the_html_page_sorts_in_a_headless_browser(tmp_path) -> None:
    browser = _browser()
    if browser is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but no chromium was found: .ci/run installs Debian's "
                        "chromium (apt-get install chromium) when it runs as root")
        pytest.skip("no chromium (or chromium-browser, google-chrome) on PATH: the HTML page "
                    "cannot be checked in a browser here (apt-get install chromium)")
    profile = tmp_path / "profile"
    three = {"m2": VALUES["m2"], "m1": VALUES["m1"], "m3": VALUES["m3"]}
    board = compute_board([_headline("p", three)], n_boot=50, seed=0)
    page = tmp_path / "board.html"
    page.write_text(html_page(board, b"\x89PNG\r\n\x1a\n"), encoding="utf-8")
    assert _models_in_order(page.read_text()) == ["m2", "m1", "m3"]  # board order
    url = page.as_uri()
    # sorted by the value, best first (the same function a click on the header calls)
    done = _run_browser(browser, profile, "--dump-dom", url + "#sort=p-value:desc")
    assert done.returncode == 0, done.stderr[-2000:]
    assert _models_in_order(done.stdout) == ["m1", "m2", "m3"], done.stdout[-2000:]
    assert 'data-sorted="p-value:desc"' in done.stdout
    assert not _console_errors(done.stderr), _console_errors(done.stderr)
    done = _run_browser(browser, profile, "--dump-dom", url + "#sort=model:desc")
    assert _models_in_order(done.stdout) == ["m3", "m2", "m1"]
    assert not _console_errors(done.stderr), _console_errors(done.stderr)
    shot = tmp_path / "shot.png"
    done = _run_browser(browser, profile, f"--screenshot={shot}", "--window-size=1000,700", url)
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", done.stderr[-2000:]
    # the console check sees an error where there is one
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><html><head><link rel=\"icon\" href=\"data:,\"></head>"
                      "<body><script>throw new Error('on purpose')</script></body></html>")
    done = _run_browser(browser, profile, "--dump-dom", broken.as_uri())
    assert _console_errors(done.stderr), done.stderr[-2000:]


def test_model_rows_name_languages_and_keep_the_first_view() -> None:
    from ncprobe.headline import model_rows

    df = pd.DataFrame({"model": ["a", "a", "a", "a", "b"], "lang": ["en", "en", "pt", "en", "en"],
                       "layer": ["12", "12", "12", "6", "-"], "nc": ["x", "y", "x", "x", "x"],
                       "value": [1.0, 2.0, 3.0, 4.0, 5.0]})
    rows, views = model_rows(df, model="model", lang="lang", view="layer", unit="nc",
                             columns=["value"])
    assert list(rows) == ["a", "a (pt)", "b"]
    assert views == {"a": "12", "a (pt)": "12", "b": "-"}
    assert rows["a"].to_dict("list") == {UNIT: ["x", "y"], "value": [1.0, 2.0]}
