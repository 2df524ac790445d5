"""Every NcprobeError path of the CLI ends with the exit code the CLI reference promises."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import socket
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import ncprobe
from ncprobe import cli, errors
from ncprobe.cli import main

from ..command import exit_code

REPO = Path(__file__).resolve().parents[2]


def _readme_exit_codes() -> dict[int, str]:
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    table = text[text.index("## Exit codes\n"):].split("\n\n")[1]
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^\| (\d+) \| (.+) \|$", table,
                                                             re.M)}


def _error_classes() -> list[type]:
    for mod in pkgutil.walk_packages(ncprobe.__path__, "ncprobe."):
        if mod.name.endswith("__main__"):  # importing it runs the CLI
            continue
        try:
            importlib.import_module(mod.name)
        except ImportError:  # an optional extra that is not installed: nothing of ours lost
            pass
    found, todo = [], [errors.NcprobeError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def test_every_error_class_has_a_readme_exit_code() -> None:
    table = _readme_exit_codes()
    assert {0, 1, 2, 3, 4, 5, 130, 141} <= set(table)
    classes = _error_classes()
    assert len(classes) >= 6
    for cls in classes:
        assert cls.exit_code in table and cls.exit_code != 0, cls
    expected = {errors.UsageError: "usage error", errors.DataError: "data error",
                errors.DataErrors: "data error", errors.DownloadError: "download failed",
                errors.ModelUnavailableError: "model not available"}
    for cls, meaning in expected.items():
        assert table[cls.exit_code].startswith(meaning), (cls, table[cls.exit_code])


def _instance(cls: type) -> Exception:
    if issubclass(cls, errors.DataErrors):
        return cls([errors.DataError("boom", file="f.csv", row=3)])
    try:
        return cls("boom")
    except TypeError:  # a subclass with its own required arguments: only its class matters here
        err = cls.__new__(cls)
        Exception.__init__(err, "boom")
        return err


def test_main_exits_with_each_error_class_code(monkeypatch, capsys) -> None:
    for cls in _error_classes():
        err = _instance(cls)

        def fail(*_, err=err):
            raise err
        monkeypatch.setitem(cli.COMMANDS, "models", cli.COMMANDS["models"]._replace(run=fail))
        assert main(["models"]) == cls.exit_code, cls
        assert "error: " in capsys.readouterr().err

    def interrupted(*_):
        raise KeyboardInterrupt
    monkeypatch.setitem(cli.COMMANDS, "models",
                        cli.COMMANDS["models"]._replace(run=interrupted))
    assert main(["models"]) == 130




@pytest.mark.parametrize("argv", [
    ["nosuch"],                                   # unknown command
    ["compute", "--nosuch"],                      # unknown option
    ["data", "info", "--json", "extra"],          # stray argument
    ["compute", "--lang", "de"],                  # not a choice
    ["compute", "--n-boot", "many"],              # not a number
    ["compute", "--level", "word"],               # checked by RunConfig
    ["data", "download", "--retries", "-1"],
    ["data", "download", "--timeout", "0"],
    ["data", "download", "--url", "http://127.0.0.1:9/{branch}/{path}"],
    ["report", "results", "--jobs", "0"],
    ["reproduce", "--jobs", "two"],
])
def test_usage_errors_exit_2(argv, capsys) -> None:
    assert exit_code(argv) == 2
    assert "error" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["data", "info"], ["data", "check"],
                                  ["compute", "--n-boot", "0", "--no-cache", "--quiet"]])
def test_missing_data_directory_exits_3(argv, tmp_path: Path, capsys) -> None:
    out = ["--out", str(tmp_path / "out")] if argv[0] == "compute" else []
    assert main(argv + ["--data-dir", str(tmp_path / "nowhere"), *out]) == 3
    captured = capsys.readouterr()
    assert "nowhere" in captured.out + captured.err
    assert "ncprobe data download" in captured.err
    assert not (tmp_path / "out").exists()


def test_bad_row_exits_3_naming_file_row_and_column(data_copy: Path, tmp_path: Path,
                                                    capsys) -> None:
    rel = "marcospln+nctti/data/data_en.tsv"
    df = pd.read_csv(data_copy / rel, sep="\t", dtype=str, keep_default_na=False)
    df.loc[11, "MeanS2"] = "n/a"
    df.to_csv(data_copy / rel, sep="\t", index=False)
    # the edited file differs from its pin: exit 3 before anything is read
    assert main(["data", "info", "--data-dir", str(data_copy)]) == 3
    assert rel in capsys.readouterr().err
    # accepted as modified on purpose, its bad row is the error: exit 3 naming row and column
    assert main(["compute", "--accept-modified-data", "--n-boot", "0", "--no-cache", "--quiet",
                 "--data-dir", str(data_copy), "--out", str(tmp_path / "out")]) == 3
    err = capsys.readouterr().err
    assert rel in err and "row 12" in err and "'MeanS2'" in err
    assert not (tmp_path / "out").exists()


def test_download_failure_exits_4(tmp_path: Path, capsys) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    assert main(["data", "download", "--data-dir", str(tmp_path), "--url",
                 f"http://127.0.0.1:{port}", "--retries", "0"]) == 4
    err = capsys.readouterr().err
    assert f"http://127.0.0.1:{port}/" in err and "offline" in err


@pytest.mark.parametrize("model,lang", [("elmo", "en"), ("glove", "en")])
def test_model_whose_weights_are_not_here_exits_5(model, lang, raw_dir: Path, tmp_path: Path,
                                                  capsys, monkeypatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    rc = main(["compute", "--model", model, "--lang", lang, "--n-boot", "0", "--no-cache",
               "--quiet", "--data-dir", str(raw_dir), "--out", str(tmp_path / "out")])
    assert rc == 5
    assert model in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def _into_closed_pipe(argv: list[str], env: dict) -> subprocess.CompletedProcess:
    """Run ncprobe with stdout a pipe whose reader has gone (as `| head` after its lines)."""
    r, w = os.pipe()
    os.close(r)
    try:
        return subprocess.run([sys.executable, "-m", "ncprobe", *argv], stdout=w,
                              stderr=subprocess.PIPE, text=True, env=env, timeout=120)
    finally:
        os.close(w)


@pytest.mark.parametrize("argv", [["data", "info", "--json"], ["models"]])
def test_closed_stdout_pipe_exits_141_without_a_traceback(argv, raw_dir: Path) -> None:
    env = {**os.environ, "NCPROBE_DATA": str(raw_dir)}
    run = _into_closed_pipe(argv, env)
    assert run.returncode == 141
    assert "Traceback" not in run.stderr and "BrokenPipeError" not in run.stderr
    assert run.stderr == ""
