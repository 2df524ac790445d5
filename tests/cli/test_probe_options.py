"""Each probe declares its own options of `ncprobe report` and `ncprobe compare` (issue 39): an
option given for results of a probe that does not declare it is exit 2, naming the option and
the probe; each probe's own options are honoured; an option two probes declare is one option.

The results directories are small: a synthetic NCIMP run (tests/synthetic.py), NCC and AStitch
results written by hand (tests/ncc/handmade.py, tests/astitch/handmade_results.py) and BM25
retrieval runs on two IdioLink idioms.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import pandas as pd
import pytest

from ncprobe import probes as registry
from ncprobe.cli import main
from ncprobe.errors import UsageError
from ncprobe.probes.options import Option, add_declared_options, option, options_of

from .. import synthetic
from ..astitch import handmade_results as astitch_handmade
from ..command import exit_code
from ..ncc import handmade as ncc_handmade


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Two results directories of NCC and of AStitch (two models each), one of NCIMP."""
    root = tmp_path_factory.mktemp("runs")
    return {
        "ncimp": synthetic.one_run(synthetic.build(), "model-a", "en",
                                   layers="-").to_parquet(root / "model-a-en"),
        "ncc": ncc_handmade.results("glove-6b-50d").to_parquet(root / "ncc-glove-6b-50d"),
        "ncc2": ncc_handmade.results("minilm").to_parquet(root / "ncc-minilm"),
        "astitch": astitch_handmade.results("m").to_parquet(root / "astitch-m-en"),
        "astitch2": astitch_handmade.results("m2").to_parquet(root / "astitch-m2-en"),
    }


def _refused(argv: list[str], capsys) -> str:
    """The stderr of ``ncprobe ARGV``, which must exit 2."""
    capsys.readouterr()
    assert exit_code(argv) == 2
    return capsys.readouterr().err


# --- compare ------------------------------------------------------------------------------------


@pytest.mark.parametrize("probe", ["ncc", "astitch"])
def test_n_flips_is_refused_for_results_whose_comparison_has_no_sign_flips(runs, probe, capsys,
                                                                           tmp_path):
    out = tmp_path / "cmp.md"
    err = _refused(["compare", str(runs[probe]), str(runs[f"{probe}2"]), "--n-flips", "5",
                    "--out", str(out), "--quiet"], capsys)
    assert "--n-flips" in err and f"{probe} results' compare" in err
    # the message lists what the probe's comparison does take
    assert "--n-boot" in err and "--seed" in err and "--correct" in err
    assert "--n-flips" not in err.split("own options")[1]
    assert not out.exists()  # refused before any work


def test_ncimp_selections_are_refused_for_another_probe(runs, capsys) -> None:
    err = _refused(["compare", str(runs["ncc"]), str(runs["ncc2"]), "--a", "model=x"], capsys)
    assert "--a: not an option of ncc results' compare" in err


def test_n_flips_is_refused_for_ncimp_results(runs, capsys) -> None:
    d = str(runs["ncimp"])
    err = _refused(["compare", d, "--a", "context=nat", "--b", "context=neut", "--n-flips",
                    "5"], capsys)
    assert "--n-flips: not an option of ncimp results' compare" in err
    assert "--a" in err and "--b" in err  # its own options


def test_ncc_compare_honours_its_own_options(runs, tmp_path, capsys) -> None:
    # --correct none: each row's corrected p is its raw p; holm never lowers a p and raises
    # the least one of m rows m-fold (capped at 1)
    tables = {}
    for correct in ("none", "holm"):
        out = tmp_path / f"{correct}.csv"
        assert main(["compare", str(runs["ncc"]), str(runs["ncc2"]), "--n-boot", "50",
                     "--correct", correct, "--out", str(out), "--quiet"]) == 0
        tables[correct] = pd.read_csv(out)
    none, holm = tables["none"], tables["holm"]
    pd.testing.assert_series_equal(none["p_corrected"], none["p"], check_names=False)
    assert (holm["p_corrected"] >= holm["p"] - 1e-12).all()
    m = int(holm["p"].notna().sum())
    least = holm["p"].min()
    assert m > 1 and least * m < 1  # a case where Holm changes the least p
    assert holm.loc[holm["p"].idxmin(), "p_corrected"] == pytest.approx(m * least)


@pytest.fixture(scope="module")
def idiolink(raw_dir, tmp_path_factory) -> tuple[Path, Path]:
    """Two IdioLink results directories of two idioms: a BM25 run, and the same run under
    another model name (so that the sides hold different models)."""
    from ncprobe.data.idiolink import load_idiolink
    from ncprobe.retrieval.probe import retrieve
    from ncprobe.retrieval.results import RetrievalResults

    root = tmp_path_factory.mktemp("idiolink")
    val = load_idiolink("val", raw_dir).subset(["in the dock", "make tracks"])
    res = retrieve(models=["bm25"], idiolink=val, n_boot=50, progress=False)

    def renamed(df: pd.DataFrame) -> pd.DataFrame:
        df = df.copy()
        for col in ("model", "model_a", "model_b"):
            if col in df:
                df[col] = df[col].replace({"bm25": "bm25-b"})
        return df

    other = RetrievalResults(**{name: renamed(df) for name, df in res.tables.items()},
                             meta=[{**m, "config": {**m["config"], "model": "bm25-b"}}
                                   for m in res.meta])
    return res.to_parquet(root / "a"), other.to_parquet(root / "b")


def test_n_flips_is_honoured_for_idiolink_results(idiolink, tmp_path, capsys) -> None:
    # two idioms: 2^2 = 4 sign patterns. auto asks for 1,000 per test, more than 4: every
    # pattern is enumerated; --n-flips 1 asks for fewer than 4: one random flip
    a, b = map(str, idiolink)
    tests = {}
    for flips in ("auto", "1"):
        out = tmp_path / f"flips-{flips}.csv"
        argv = ["compare", a, b, "--n-boot", "20", "--out", str(out), "--quiet"]
        assert main(argv + (["--n-flips", flips] if flips != "auto" else [])) == 0
        tests[flips] = set(pd.read_csv(out)["test"])
    assert tests["auto"] == {"sign-flip over idioms (exact, all 4 sign patterns)"}
    assert tests["1"] == {"sign-flip over idioms (1 random flips)"}
    # and refused for a report, which has no such option
    err = _refused(["report", a, "--n-flips", "5", "--out", str(tmp_path / "r")], capsys)
    assert "unrecognized arguments: --n-flips" in err


# --- report -------------------------------------------------------------------------------------


@pytest.mark.parametrize("given", [["--compact-tables"], ["--correct", "none"], ["--jobs", "2"],
                                   ["--examples", "a,b"], ["--level", "nc"]])
def test_ncimp_report_options_are_refused_for_ncc_results(runs, given, tmp_path, capsys) -> None:
    out = tmp_path / "report"
    err = _refused(["report", str(runs["ncc"]), "--out", str(out), *given], capsys)
    assert f"{given[0]}: not an option of ncc results' report (its own options: none)" in err
    assert not out.exists()  # refused before anything is written


def test_an_option_of_a_probe_absent_from_a_mixed_folder_is_refused(runs, tmp_path,
                                                                    capsys) -> None:
    folder = tmp_path / "mixed"
    folder.mkdir()
    for probe in ("ncc", "astitch"):
        shutil.copytree(runs[probe], folder / runs[probe].name)
    out = tmp_path / "report"
    err = _refused(["report", str(folder), "--out", str(out), "--compact-tables", "--jobs",
                    "1"], capsys)
    assert "--compact-tables" in err and "--jobs" in err and "ncimp" in err
    assert "ncc" in err and "astitch" in err  # whose results are there
    assert not out.exists()


def test_the_help_says_whose_each_option_is(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    # --n-flips is IdioLink's alone; --seed every probe's that compares by resampling (the
    # registry says which: a probe that compares nothing declares none)
    assert "are fewer) [idiolink results only]" in text
    seeded = [p.name for p in registry.probes()
              if any("--seed" in o.flags for o in p.compare_options())]
    assert {"ncimp", "idiolink", "ncc", "astitch"} <= set(seeded)
    mark = ("" if len(seeded) == len(registry.probe_names())
            else f" [{', '.join(seeded)} results only]")
    assert f"the same table{mark} --correct" in text
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "rho alone, as in the study; default: 0.59 [0.50, 0.66]) [ncimp results only]" in text


# --- the declarations themselves --------------------------------------------------------------


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    return [s for a in parser._actions for s in a.option_strings if s != "-h" and s != "--help"]


def test_one_option_declared_by_two_probes_is_added_once(capsys) -> None:
    seed = option("--seed", type=int, default=0, help="seed (default %(default)s)")
    flips = option("--flips", type=int, default=7, help="flips")
    parser = argparse.ArgumentParser()
    found = add_declared_options(parser, {"p": (seed,), "q": (seed, flips)})
    assert _flags(parser) == ["--seed", "--flips"] and set(found) == {"seed", "flips"}
    helps = {a.option_strings[0]: a.help for a in parser._actions}
    assert helps["--seed"] == "seed (default 0)"  # every probe's: no owner named
    assert helps["--flips"] == "flips [q results only]"
    # not given: absent, so a probe that does not declare it can tell
    assert vars(parser.parse_args([])) == {}
    assert vars(parser.parse_args(["--flips", "3"])) == {"flips": 3}
    assert capsys.readouterr().err == ""


def test_two_declarations_of_one_flag_keep_the_first_and_name_both(capsys) -> None:
    parser = argparse.ArgumentParser()
    found = add_declared_options(parser, {
        "p": (option("--seed", type=int, default=0, help="seed"),),
        "plug": (option("--seed", type=int, default=5, help="seed"),)})
    assert found["seed"].default == 0 and _flags(parser) == ["--seed"]
    err = capsys.readouterr().err
    assert "plug" in err and "p " in err and "--seed" in err


def test_options_of_refuses_another_probes_option_and_fills_its_own_defaults() -> None:
    seed = option("--seed", type=int, default=0, help="seed")
    flips = option("--flips", type=int, default=7, help="flips")
    every = {"seed": seed, "flips": flips}
    args = argparse.Namespace(results=["r"], flips=3)
    with pytest.raises(UsageError, match=r"^--flips: not an option of p results' compare "
                                         r"\(its own options: --seed\)$"):
        options_of(args, "p", (seed,), every, "compare")
    # without strict (one probe's report among several): left out
    assert vars(options_of(args, "p", (seed,), every, "compare", strict=False)) == {
        "results": ["r"], "seed": 0}
    assert vars(options_of(args, "q", (seed, flips), every, "compare")) == {
        "results": ["r"], "flips": 3, "seed": 0}


def test_an_option_knows_its_dest_and_default() -> None:
    o = option("--a", dest="select_a", action="append", default=[], selects_side=True)
    assert isinstance(o, Option) and o.dest == "select_a" and o.default == [] and o.selects_side
    assert option("--compact-tables", action="store_true").dest == "compact_tables"
    assert option("--compact-tables", action="store_true").default is False


def test_a_fresh_report_command_names_another_probes_report_by_its_label(runs, tmp_path):
    # the owner of report directories asks no registry; the command line declares every
    # probe's label first, so a fresh process names an IdioLink report found in --out as the
    # retrieval probe declares it, not by the probe's name alone
    import os
    import subprocess
    import sys

    rep = tmp_path / "rep"
    index = synthetic.retrieval_report(rep)
    done = subprocess.run([sys.executable, "-m", "ncprobe", "report", str(runs["ncc"]),
                           "--out", str(rep), "--quiet"], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "MPLBACKEND": "Agg"})
    assert done.returncode == 2, done.stderr
    assert "holds a retrieval report (IdioLink)" in done.stderr, done.stderr
    assert (rep / "README.md").read_bytes() == index  # nothing replaced
