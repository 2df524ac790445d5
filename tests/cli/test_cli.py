"""The command line: help, version, module entry point, README/CI agreement."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

import pytest

import ncprobe
from ncprobe.cli import build_parser, main

REPO = Path(__file__).resolve().parents[2]


def test_python_m_version() -> None:
    out = subprocess.run([sys.executable, "-m", "ncprobe", "--version"], capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == f"ncprobe {ncprobe.__version__}"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return {name: sub for a in parser._actions if isinstance(a, argparse._SubParsersAction)
            for name, sub in a.choices.items()}


def _command_paths(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Every command of the parser, depth first: (), ("data",), ("data", "download") ..."""
    yield path
    for name, sub in _subcommands(parser).items():
        yield from _command_paths(sub, path + (name,))


def _squash(text: str) -> str:
    """Text without whitespace: help is compared across argparse's line wrapping."""
    return "".join(text.split())


def _what_help_must_say(parser: argparse.ArgumentParser) -> list[str]:
    """Each option string, each option's help and each subcommand with its one-line help, as
    the parser declares them (help strings expanded the way argparse documents: ``%(name)s``
    from the action's fields, ``%%`` for a percent sign)."""
    want = []
    for a in parser._actions:
        if a.help == argparse.SUPPRESS:
            continue
        params = {k: v for k, v in vars(a).items() if v is not argparse.SUPPRESS}
        if params.get("choices") is not None:
            params["choices"] = ", ".join(map(str, params["choices"]))
        params["prog"] = parser.prog
        if isinstance(a, argparse._SubParsersAction):
            for choice in a._choices_actions:
                assert choice.help, f"{parser.prog} {choice.dest}: a subcommand without help"
                want += [choice.dest, choice.help % params]
            continue
        assert a.help, f"{parser.prog}: {a.option_strings or a.dest} has no help"
        want += [*a.option_strings, a.help % params]
    return want


@pytest.mark.parametrize("argv", [list(p) for p in _command_paths(build_parser())], ids=" ".join)
def test_every_help_is_useful(argv, capsys) -> None:
    """`--help` of every command (taken from the parser, so a new command is checked too)
    names the command, and lists every option and subcommand with its help."""
    with pytest.raises(SystemExit) as e:
        main(argv + ["--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(" ".join(["usage: ncprobe", *argv]))
    parser = build_parser()
    for name in argv:
        parser = _subcommands(parser)[name]
    missing = [w for w in _what_help_must_say(parser) if _squash(w) not in _squash(out)]
    assert not missing, missing


def test_no_command_prints_help(capsys) -> None:
    assert main([]) == 2
    out = capsys.readouterr().out
    assert out.startswith("usage: ncprobe")
    assert all(_squash(w) in _squash(out) for w in _what_help_must_say(build_parser()))


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


def test_models_table_columns_line_up(capsys) -> None:
    from ncprobe.encoders.registry import MODELS

    assert main(["models"]) == 0
    header, *rows = capsys.readouterr().out.split("\n\n")[0].splitlines()
    starts = [header.index(h) for h in ("alias", "family", "model (en / pt)", "pip install",
                                        "needs")]
    ncimp = [s for s in MODELS.values() if "ncimp" in s.probes]
    assert len(rows) == len(ncimp)
    for row, spec in zip(rows, ncimp, strict=True):
        cells = [row[a:b] for a, b in zip(starts, starts[1:] + [len(row)], strict=True)]
        # every cell starts at its header's offset and ends, blank, before the next one
        assert all(c.endswith(" ") and not c.startswith(" ") for c in cells[:-1]), row
        assert row == row.rstrip()
        en, pt = (spec.ids.get(lg, spec.ids.get("*", "-")) for lg in ("en", "pt"))
        assert [c.strip() for c in cells] == [spec.alias, spec.family, cells[2].strip(),
                                              spec.install, spec.requirements]
        assert cells[2].startswith(en) and pt in cells[2]


def test_cache_info_and_clear(tmp_path: Path, capsys) -> None:
    from ncprobe.cache.store import EmbeddingStore

    EmbeddingStore({"name": "m1", "x": 1}, root=tmp_path)
    assert main(["cache", "info", "--cache-dir", str(tmp_path)]) == 0
    assert "m1" in capsys.readouterr().out
    assert main(["cache", "clear", "--cache-dir", str(tmp_path)]) == 0
    assert "removed 1" in capsys.readouterr().out


def test_ncprobe_warnings_are_plain_lines_on_stderr() -> None:
    """Issue 28: a warning of ncprobe's reads `warning: ...` (as errors read `error: ...`),
    without the path, line and source of ncprobe's code; other packages' warnings as Python
    shows them. In a process of its own: pytest records warnings instead of showing them."""
    code = """if True:
        import warnings
        from ncprobe.cli import _plain_warnings
        from ncprobe.significance import ResolutionWarning
        warnings.simplefilter("always")
        with _plain_warnings():
            warnings.warn("2 rows limited by 200 resamples", ResolutionWarning)
            warnings.warn("someone else's", DeprecationWarning)
        warnings.warn("after the command", ResolutionWarning)
    """
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stderr
    assert "warning: 2 rows limited by 200 resamples\n" in err
    assert "DeprecationWarning: someone else's" in err
    # outside a command, Python's own format again
    assert "ResolutionWarning: after the command" in err
    assert err.count("ResolutionWarning") == 1
