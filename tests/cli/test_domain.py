"""Exit codes and messages as the CLI reference documents them (issue 28, section 3), and
option values outside their domain: every case is a command run in-process through
``ncprobe.cli.main``, its exit code, and what its message must name."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from ncprobe import cli
from ncprobe.cli import main
from ncprobe.data import sources
from ncprobe.ncimp.config import RunConfig
from ncprobe.ncimp.pipeline import run_dir
from ncprobe.ncimp.results import NCIMP_LAYOUT
from ncprobe.results.store import run_identity

from ..command import exit_code

IDIOLINK = "Intellexus-DSI+IdioLink/data"




def _pin(local_path: str) -> sources.UpstreamFile:
    return next(f for f in sources.upstream_files() if f.local_path == local_path)


# --- data check / data info: a pinned file that is no regular file --------------------------

def _break(data: Path) -> dict[str, str]:
    """Three IdioLink files made unusable in three ways; path -> what the message must say."""
    as_dir = f"{IDIOLINK}/test/queries.json"
    (data / as_dir).unlink()
    (data / as_dir).mkdir()
    loop = f"{IDIOLINK}/val/queries.json"
    (data / loop).unlink()
    os.symlink("queries.json", data / loop)  # a link to itself
    dangling = f"{IDIOLINK}/train/indexes.json"
    (data / dangling).unlink()
    os.symlink("gone.json", data / dangling)
    return {as_dir: "is a directory", loop: "symbolic-link loop",
            dangling: "symbolic link to 'gone.json', which does not exist"}


def test_file_status_tells_no_file_from_missing(tmp_path):
    f = _pin(f"{IDIOLINK}/test/queries.json")
    path = tmp_path / f.local_path
    assert sources.file_status(tmp_path, f) == "missing"
    path.mkdir(parents=True)
    assert sources.file_status(tmp_path, f) == "not-file"
    path.rmdir()
    os.mkfifo(path)  # never opened: reading a FIFO would wait for a writer
    assert sources.file_status(tmp_path, f) == "not-file"
    path.unlink()
    os.symlink(path.name, path)
    assert sources.file_status(tmp_path, f) == "bad-link"
    path.unlink()
    os.symlink("elsewhere.json", path)
    assert sources.file_status(tmp_path, f) == "bad-link"
    (path.parent / "elsewhere.json").write_bytes(b"[]")  # now it leads to a file
    assert sources.file_status(tmp_path, f) == "mismatch"


def test_data_check_fails_on_idiolink_files_that_are_no_files(data_copy, capsys):
    broken = _break(data_copy)
    assert main(["data", "check", "--data-dir", str(data_copy)]) == 3
    captured = capsys.readouterr()
    errors = [ln for ln in captured.err.splitlines() if ln.startswith("error: ")]
    for path, why in broken.items():
        line = next((ln for ln in errors if path in ln), None)
        assert line is not None, path
        assert why in line and "ncprobe data download" in line
    assert f"{len(broken)} error(s) in {data_copy}" in captured.out


def test_data_info_fails_on_idiolink_files_that_are_no_files(data_copy, capsys):
    broken = _break(data_copy)
    assert main(["data", "info", "--data-dir", str(data_copy)]) == 3
    captured = capsys.readouterr()
    status = {ln.split()[-1]: ln.split()[0] for ln in captured.out.splitlines()
              if ln.startswith("  ") and IDIOLINK in ln}
    assert [status[p] for p in broken] == ["not-file", "bad-link", "bad-link"]
    for path, why in broken.items():
        assert any(path in ln and why in ln for ln in captured.err.splitlines()), path


@pytest.mark.slow
def test_a_missing_extra_file_fails_only_the_check_of_its_probe(data_copy, capsys):
    gone = f"{IDIOLINK}/val/indexes.json"
    (data_copy / gone).unlink()
    assert main(["data", "check", "--data-dir", str(data_copy)]) == 0  # NCIMP's files: fine
    out = capsys.readouterr().out
    note = next(ln for ln in out.splitlines() if gone in ln)
    assert note.startswith("note: ") and "idiolink" in note
    assert main(["data", "check", "--data-dir", str(data_copy), "--probe", "idiolink"]) == 3
    err = capsys.readouterr().err
    assert f"error: {gone}: missing" in err and "ncprobe data download" in err
    assert main(["data", "check", "--data-dir", str(data_copy), "--probe", "ncimp"]) == 0
    assert gone not in capsys.readouterr().out  # not a file of the probe asked for
    assert exit_code(["data", "check", "--data-dir", str(data_copy), "--probe", "idiolnk"]) == 2


# --- an --out below a file: exit 6, naming the file in the way ------------------------------

def test_compare_out_below_a_file_is_exit_6_naming_it(tmp_path, capsys):
    blocker = tmp_path / "afile"
    blocker.write_text("mine\n")
    rc = main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out",
               str(blocker / "cmp.md")])
    err = capsys.readouterr().err
    assert rc == 6
    assert f"not a directory: {blocker};" in err
    assert blocker.read_text() == "mine\n"
    # a folder that is merely not there stays a usage error (nothing is in the way)
    assert main(["compare", str(tmp_path / "a"), "--out", str(tmp_path / "no" / "c.md")]) == 2


@pytest.mark.parametrize("argv", [
    ["compute", "--quiet", "--n-boot", "0", "--out", "{blocker}/sub"],
    pytest.param(["report", "{tmp}/results", "--quiet", "--out", "{blocker}/rep"],
                 marks=pytest.mark.slow),
    ["pairs", "generate", "{tmp}/in.csv", "--lang", "en", "--out", "{blocker}/p.csv"],
    ["retrieve", "--model", "bm25", "--quiet", "--out", "{blocker}/r"],
])
def test_every_out_below_a_file_is_exit_6_naming_it(argv, tmp_path, capsys, monkeypatch):
    blocker = tmp_path / "afile"
    blocker.write_text("mine\n")
    (tmp_path / "in.csv").write_text("nc,sentence\nacid rain,acid rain fell\n")
    monkeypatch.setenv("NCPROBE_DATA", str(tmp_path / "nowhere"))  # refused before any read
    monkeypatch.setenv("NCPROBE_CACHE", str(tmp_path / "cache"))
    argv = [a.format(blocker=blocker, tmp=tmp_path) for a in argv]
    if argv[0] == "report":  # a results directory to report on
        from .. import synthetic

        synthetic.one_run(synthetic.build(), "model-a", "en").to_parquet(tmp_path / "results")
    assert main(argv) == 6
    assert f"not a directory: {blocker};" in capsys.readouterr().err
    assert blocker.read_text() == "mine\n"


# --- retrieve with a model it cannot take ---------------------------------------------------

def test_retrieve_names_what_is_wrong_with_a_static_model(raw_dir, tmp_path, capsys):
    rc = main(["retrieve", "--model", "glove-6b-50d", "--split", "val", "--quiet",
               "--data-dir", str(raw_dir), "--out", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "glove-6b-50d is not a sentence-transformers model" in err
    assert "--layers" not in err  # an option the user never gave
    assert not (tmp_path / "r").exists()


# --- an option typo: the command's usage and the closest options ----------------------------

@pytest.mark.parametrize("argv, usage, meant", [
    (["compute", "--standardize"], "usage: ncprobe compute", "--standardise"),
    (["compare", "a", "b", "--n-boots", "5"], "usage: ncprobe compare", "--n-boot"),
    (["data", "check", "--dta-dir", "x"], "usage: ncprobe data check", "--data-dir"),
    (["pairs", "generate", "in.csv", "--out", "p.csv", "--seeds=3"],
     "usage: ncprobe pairs generate", "--seed"),
])
def test_an_option_typo_gives_the_commands_usage_and_a_suggestion(argv, usage, meant, capsys):
    assert exit_code(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(usage)
    assert f"(did you mean {meant}" in err  # the closest first


def test_an_unknown_option_before_the_command_is_the_top_levels(capsys):
    assert exit_code(["--standardise", "compute"]) == 2
    assert capsys.readouterr().err.startswith("usage: ncprobe [-h]")


# --- context aliases name the same run ------------------------------------------------------

@pytest.mark.parametrize("spelling", ["nat,neutral", "naturalistic,neutral", "neut,nat",
                                      "NAT, Neut", "S3,S1,S2,N", "nat,neut,nat"])
def test_context_aliases_of_the_default_are_the_default_run(spelling):
    default, aliased = RunConfig(), RunConfig(contexts=spelling)
    assert aliased.contexts == "nat,neut" == default.contexts
    assert run_dir("results", "glove-6b-50d", "en", aliased) == Path("results/glove-6b-50d-en")
    assert (run_identity(aliased.to_dict(), NCIMP_LAYOUT)
            == run_identity(default.to_dict(), NCIMP_LAYOUT))


def test_context_aliases_give_the_same_run_id():
    from .. import synthetic

    full = synthetic.build()
    default = synthetic.one_run(full, "model-a", "en")
    for spelling in ("nat,neutral", "neutral,naturalistic"):
        assert synthetic.one_run(full, "model-a", "en", contexts=spelling).run_id \
            == default.run_id


def test_other_contexts_keep_one_name_each():
    # the same contexts however asked for: one directory; different contexts: different ones
    names = {spelling: run_dir("r", "m", "en", RunConfig(contexts=spelling)).name
             for spelling in ("plural,nat", "neut-pl,S1,S2,S3", "all", "nat,neut,neut-pl",
                              "S1", "s1")}
    assert names["plural,nat"] == names["neut-pl,S1,S2,S3"]
    assert names["all"] == names["nat,neut,neut-pl"] == "m-en-ctx_all"
    assert names["S1"] == names["s1"] != names["plural,nat"]


# --- options that have no effect for the model ----------------------------------------------

def test_batch_tokens_for_a_static_model_is_refused(tmp_path, capsys):
    rc = main(["compute", "--batch-tokens", "4096", "--quiet", "--n-boot", "0",
               "--data-dir", str(tmp_path / "nowhere"), "--cache-dir", str(tmp_path / "c"),
               "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "--batch-tokens 4096 has no effect for model glove-6b-50d" in err
    assert not (tmp_path / "out").exists()  # nothing recorded


def test_batch_tokens_zero_is_what_a_static_model_does(tmp_path):
    from ncprobe.encoders.registry import load_encoder
    from ncprobe.errors import UsageError
    from ncprobe.ncimp.reproduce import _run_config

    assert load_encoder("glove-6b-50d", batch_tokens=0).name == "glove-6b-50d"
    with pytest.raises(UsageError, match="--batch-tokens 1 has no effect"):
        load_encoder("glove-6b-50d", batch_tokens=1)
    # reproduce gives the budget only to the models that tokenise
    assert _run_config("glove-6b-50d", "en", {"batch_tokens": 4096}).batch_tokens is None
    assert _run_config("minilm", "en", {"batch_tokens": 4096}).batch_tokens == 4096


# --- values outside their domain: exit 2 naming the option ----------------------------------

#: Each command and what it needs besides the option tested (nothing it reads exists: every
#: refusal must come before any work).
COMMANDS = {
    ("compute",): [],
    ("report",): ["results"],
    ("reproduce",): ["--models", "glove-6b-50d", "--langs", "en"],
    ("compare",): ["a", "b"],
    ("pairs", "generate"): ["in.csv", "--out", "p.csv"],
    ("data", "download"): [],
    ("retrieve",): [],
}
#: Numeric options where a value below zero has a meaning (the ends of a scale).
SIGNED = {"--scale"}


def _numeric_options() -> list[tuple[tuple[str, ...], str, int]]:
    """Every option of the commands whose type reads a number: (command, option, nargs)."""
    parser = cli.build_parser()
    out = []
    for command in COMMANDS:
        sub = parser
        for word in command:
            sub = next(a for a in sub._actions
                       if isinstance(a, argparse._SubParsersAction)).choices[word]
        for action in sub._actions:
            if not action.option_strings or not callable(action.type):
                continue
            try:
                value = action.type("1")
            except (ValueError, TypeError, argparse.ArgumentTypeError):
                continue
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                long = next(s for s in action.option_strings if s.startswith("--"))
                out.append((command, long, action.nargs if isinstance(action.nargs, int)
                            else 1))
    return out


NUMERIC = _numeric_options()


def test_the_audit_sees_the_numeric_options():
    seen = {(" ".join(c), o) for c, o, _ in NUMERIC}
    assert {("compute", "--seed"), ("compute", "--top-k"), ("compute", "--batch-tokens"),
            ("report", "--jobs"), ("reproduce", "--n-boot"), ("compare", "--n-boot"),
            ("pairs generate", "--scale"), ("pairs generate", "--band"),
            ("data download", "--timeout"), ("retrieve", "--n-boot")} <= seen


OUTSIDE = [pytest.param(command, option, nargs, value, id=f"{' '.join(command)} {option} {value}")
           for command, option, nargs in NUMERIC for value in ("nan", "inf", "-1")
           if not (value == "-1" and option in SIGNED)]


@pytest.mark.parametrize("command, option, nargs, value", OUTSIDE)
def test_a_value_outside_the_domain_exits_2_naming_the_option(command, option, nargs, value,
                                                              tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # default outputs: nothing may be written
    monkeypatch.setenv("NCPROBE_DATA", str(tmp_path / "nowhere"))
    monkeypatch.setenv("NCPROBE_CACHE", str(tmp_path / "cache"))
    argv = [*command, *COMMANDS[command], option, *[value] * nargs]
    if option == "--scale" and value != "-1":
        argv = [*command, *COMMANDS[command], option, "0", value]  # one bad end is enough
    assert exit_code(argv) == 2
    assert option in capsys.readouterr().err
    assert not any(tmp_path.iterdir())  # refused before any work
