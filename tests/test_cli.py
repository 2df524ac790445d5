"""The command line: help, version, module entry point, README/CI agreement."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import ncprobe
from ncprobe.cli import main

REPO = Path(__file__).resolve().parents[1]


def test_python_m_version() -> None:
    out = subprocess.run([sys.executable, "-m", "ncprobe", "--version"], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == f"ncprobe {ncprobe.__version__}"


@pytest.mark.parametrize("argv", [[], ["data"], ["data", "info"], ["data", "download"],
                                  ["data", "check"], ["data", "path"], ["models"], ["cache"],
                                  ["cache", "info"], ["cache", "clear"]])
def test_every_help_is_useful(argv, capsys) -> None:
    with pytest.raises(SystemExit) as e:
        main(argv + ["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "usage: ncprobe" in out and len(out) > 150


def test_no_command_prints_help(capsys) -> None:
    assert main([]) == 2
    assert "data" in capsys.readouterr().out


def test_data_path(tmp_path: Path, capsys) -> None:
    assert main(["data", "path", "--data-dir", str(tmp_path)]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path)


def test_ci_runs_the_readme_test_command() -> None:
    readme = (REPO / "README.md").read_text()
    m = re.search(r"### Run the tests\s*```bash\n(.+?)\n```", readme)
    assert m, "README has no '### Run the tests' bash block"
    command = m.group(1).strip()
    ci = (REPO / ".ci" / "run").read_text().splitlines()
    assert command in [line.strip() for line in ci]


def test_models_lists_every_alias_per_language(capsys) -> None:
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    for alias in ("word2vec", "glove", "elmo", "sbert-ml", "bert-large", "bert-ml",
                  "distilbert-ml", "llama2", "openai", "glove-6b-50d", "minilm"):
        assert f"\n{alias} " in out
    assert "neuralmind/bert-large-portuguese-cased" in out and "GPU" in out


def test_cache_info_and_clear(tmp_path: Path, capsys) -> None:
    from ncprobe.cache import EmbeddingStore

    EmbeddingStore({"name": "m1", "x": 1}, root=tmp_path)
    assert main(["cache", "info", "--cache-dir", str(tmp_path)]) == 0
    assert "m1" in capsys.readouterr().out
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 0
    assert "removed 1" in capsys.readouterr().out
