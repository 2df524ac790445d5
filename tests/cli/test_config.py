"""The run options of `ncprobe compute` and `reproduce` come from RunConfig: one source for
their names, defaults, choices, help and value checks; the exit codes come from the error
classes; the provenance section of a reproduced report is part of its index."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import typing
from pathlib import Path

import pytest

from ncprobe import cli, errors, owned
from ncprobe.ncimp import figures as plots
from ncprobe.ncimp import report
from ncprobe.ncimp.config import RunConfig

from ..command import exit_code
from ..synthetic import build


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices[name]


def _options(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """Every long option of a parser, by its name."""
    return {s: a for a in parser._actions for s in a.option_strings if s.startswith("--")}




# the option of each field, as the CLI reference (docs/cli.md) names them
OPTION_OF = {"model": "--model", "lang": "--lang", "contexts": "--context", "levels": "--level",
             "layers": "--layers", "device": "--device", "dtype": "--dtype",
             "batch_size": "--batch-size", "batch_tokens": "--batch-tokens",
             "store_dtype": "--store-dtype",
             "standardise": "--standardise",
             "wordssyn": "--wordssyn", "gold": "--gold", "per_sentence": "--per-sentence",
             "n_boot": "--n-boot", "seed": "--seed", "top_k": "--top-k",
             "en_naturalistic": "--en-naturalistic",
             "accept_modified_data": "--accept-modified-data"}


def test_every_runconfig_field_is_a_compute_option_with_its_default() -> None:
    assert set(OPTION_OF) == {f.name for f in dataclasses.fields(RunConfig)}
    compute = _subparser(cli.build_parser(), "compute")
    options = _options(compute)
    for f in dataclasses.fields(RunConfig):
        action = options[OPTION_OF[f.name]]
        assert action.dest == f.name
        assert action.default == f.default, f.name
    # parsed with no option, they make the default RunConfig
    args = cli.build_parser().parse_args(["compute"])
    assert RunConfig(**{f.name: getattr(args, f.name)
                        for f in dataclasses.fields(RunConfig)}) == RunConfig()


def test_compute_help_shows_the_field_defaults_and_choices(capsys) -> None:
    with pytest.raises(SystemExit):
        cli.main(["compute", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default 1000; 0: none)" in out and "bootstrap seed (default 0)" in out
    assert "sentences per forward pass (default 32)" in out
    assert "--top-k TOP_K rogue dimensions listed per condition (default 5)" in out
    assert "--en-naturalistic {auto,official,reference}" in out
    assert "--lang {en,pt} language (default: en)" in out
    assert "(default: glove-6b-50d, offline)" in out
    assert "--wordssyn {first,all}" in out and "--gold {comp,type}" in out


def test_reproduce_takes_the_same_run_options() -> None:
    compute = _options(_subparser(cli.build_parser(), "compute"))
    reproduce = _options(_subparser(cli.build_parser(), "reproduce"))
    for name in ("--context", "--n-boot", "--seed"):
        assert reproduce[name].default == compute[name].default
        assert reproduce[name].help == compute[name].help
    assert reproduce["--n-boot"].default == 1000 and reproduce["--context"].default == "nat,neut"
    assert "--batch-size" not in reproduce and "--top-k" not in reproduce


@dataclasses.dataclass(frozen=True)
class Extended(RunConfig):
    """RunConfig with three more fields: each must become an option of compute."""

    window: int = dataclasses.field(default=7, metadata={
        "help": "words on each side (default %(default)s)"})
    mode: typing.Literal["fast", "slow"] = "fast"
    log_vectors: bool = False

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.window < 1:
            raise ValueError("window must be 1 or more")


def test_a_new_field_is_a_new_compute_option(monkeypatch, capsys) -> None:
    parser = cli.build_parser(config=Extended)
    options = _options(_subparser(parser, "compute"))
    assert options["--window"].default == 7 and options["--mode"].choices == ("fast", "slow")
    assert options["--log-vectors"].default is False
    assert "--window" not in _options(_subparser(parser, "reproduce"))
    args = parser.parse_args(["compute", "--window", "3", "--mode", "slow", "--log-vectors",
                              "--n-boot", "0"])
    assert cli.config_from_args(args, Extended) == Extended(window=3, mode="slow",
                                                            log_vectors=True, n_boot=0)
    assert cli.config_from_args(parser.parse_args(["compute"]), Extended) == Extended()
    # a patched config class: main's parser and its checks follow it
    monkeypatch.setattr(cli, "default_config", lambda: Extended)
    assert exit_code(["compute", "--window", "0"]) == 2
    assert "--window 0: window must be 1 or more" in capsys.readouterr().err
    assert exit_code(["compute", "--mode", "medium"]) == 2
    assert "--mode" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["compute", "--help"])
    assert "words on each side (default 7)" in " ".join(capsys.readouterr().out.split())


def _reason(**values) -> str:
    """What RunConfig itself says about these values."""
    with pytest.raises(ValueError) as e:
        RunConfig(**values)
    return str(e.value)


@pytest.mark.parametrize("argv, option, values", [
    (["compute", "--batch-size", "0"], "--batch-size", {"batch_size": 0}),
    (["compute", "--n-boot", "-1"], "--n-boot", {"n_boot": -1}),
    (["compute", "--level", "word"], "--level", {"levels": "word"}),
    (["compute", "--context", "S4"], "--context", {"contexts": "S4"}),
    (["reproduce", "--n-boot", "-1"], "--n-boot", {"n_boot": -1}),
    (["reproduce", "--context", "nat,S9"], "--context", {"contexts": "nat,S9"}),
])
def test_a_bad_value_exits_2_naming_the_option(argv, option, values, tmp_path, monkeypatch,
                                               capsys) -> None:
    monkeypatch.chdir(tmp_path)  # reproduce's default --out and --results-dir
    if argv[0] == "reproduce":
        argv = argv + ["--models", "glove-6b-50d", "--langs", "en", "--jobs", "1",
                       "--data-dir", str(tmp_path / "nowhere")]
    assert exit_code(argv) == 2
    err = capsys.readouterr().err
    assert option in err and _reason(**values) in err  # RunConfig's own reason
    assert not any(tmp_path.iterdir())  # refused before any work


@dataclasses.dataclass(frozen=True)
class Paired(RunConfig):
    """A check of two fields together: each value passes alone."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.n_boot == 0 and self.top_k == 0:
            raise ValueError("n_boot and top_k cannot both be 0")


def test_values_refused_together_exit_2_naming_the_options(monkeypatch, capsys) -> None:
    monkeypatch.setattr(cli, "default_config", lambda: Paired)
    assert exit_code(["compute", "--n-boot", "0", "--top-k", "0", "--seed", "0"]) == 2
    err = capsys.readouterr().err
    assert "--n-boot 0" in err and "--top-k 0" in err and "cannot both be 0" in err
    assert "--seed" not in err  # at its default: not one of the culprits


def test_exit_codes_come_from_the_error_classes(raw_dir, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(errors.ModelUnavailableError, "exit_code", 55)
    monkeypatch.setattr(errors.DataError, "exit_code", 33)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("NCPROBE_CACHE", str(tmp_path / "cache"))
    assert cli.main(["reproduce", "--models", "elmo", "--langs", "en", "--jobs", "1", "--quiet",
                     "--out", str(tmp_path / "o"), "--results-dir", str(tmp_path / "r"),
                     "--data-dir", str(raw_dir)]) == 55
    assert cli.main(["data", "info", "--data-dir", str(tmp_path / "nowhere")]) == 33
    assert cli.main(["data", "check", "--data-dir", str(tmp_path / "nowhere")]) == 33


@pytest.mark.slow
def test_reproduce_writes_its_provenance_inside_the_report_lock(tmp_path, monkeypatch,
                                                                capsys) -> None:
    import ncprobe.ncimp.reproduce as reproduce_module
    from ncprobe._version import VERSION

    results = build()  # model-a and model-b, en and pt

    def fake_reproduce(models, langs, **kw):
        ran = [(m, lg, f"results/{m}-{lg}") for m in ("model-a", "model-b") for lg in langs]
        return reproduce_module.Reproduction(
            results, ran, [("elmo", "en", "no weights here"), ("elmo", "pt", "none either")])

    def no_figures(results, formats, dpi, workers, options=None):  # the index is tested here
        for name in plots.FIGURES:
            yield name, (None, ["not drawn in this test"])

    readme_at_unlock = []
    real_lock = owned.dir_lock

    @contextlib.contextmanager
    def watched_lock(path, **kw):
        with real_lock(path, **kw) as locked:
            yield locked
            # still locked: what the index holds when the lock is given up
            readme_at_unlock.append((Path(path) / "README.md").read_text(encoding="utf-8"))

    monkeypatch.setattr(reproduce_module, "reproduce", fake_reproduce)
    monkeypatch.setattr(report, "_figures", no_figures)
    monkeypatch.setattr(owned, "dir_lock", watched_lock)
    out = tmp_path / "figs"
    assert cli.main(["reproduce", "--langs", "en,pt", "--out", str(out), "--jobs", "1",
                     "--quiet"]) == 0
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert readme_at_unlock == [readme]  # nothing was added after the lock was released
    head, section = readme.split("\n\n## How these files were made\n\n")
    assert head.startswith("# ncprobe report\n") and "## Tables" in head
    lines = section.split("\n")
    assert lines[0] == (f"`ncprobe reproduce --models model-a,model-b --langs en,pt` "
                        f"(ncprobe {VERSION}).")
    assert "Skipped here:\n\n- elmo (en): no weights here\n- elmo (pt): none either\n" in section
    assert "The study's own models (" in section and "are not in these files" in section
    assert readme.endswith("add their panels.\n")
    manifest = json.loads((out / owned.MANIFEST).read_text())
    assert "README.md" in manifest["files"]


# --- the retrieval probe's options: RetrievalConfig, through the same machinery ------------

# the option of each RetrievalConfig field, as `ncprobe retrieve --help` has always named them
RETRIEVE_OPTION_OF = {
    "models": "--model", "modes": "--modes", "split": "--split", "idioms": "--idioms",
    "n_boot": "--n-boot", "seed": "--seed", "correction": "--correct", "k1": "--k1",
    "b": "--b", "span_fallback": "--span-fallback", "batch_size": "--batch-size",
    "device": "--device", "dtype": "--dtype", "allow_remote_code": "--allow-remote-code",
    "accept_modified_data": "--accept-modified-data"}


def test_every_retrievalconfig_field_is_a_retrieve_option_with_its_default() -> None:
    from ncprobe.retrieval.config import RetrievalConfig

    assert set(RETRIEVE_OPTION_OF) == {f.name for f in dataclasses.fields(RetrievalConfig)}
    options = _options(_subparser(cli.build_parser(), "retrieve"))
    for f in dataclasses.fields(RetrievalConfig):
        action = options[RETRIEVE_OPTION_OF[f.name]]
        assert action.dest == f.name and action.default == f.default, f.name
    # in the order --help has always listed them, the command's own options between
    order = [a.option_strings[-1] for a in _subparser(cli.build_parser(), "retrieve")._actions]
    assert order == ["--help", "--model", "--modes", "--split", "--idioms", "--out",
                     "--overwrite", "--json", "--n-boot", "--seed", "--correct", "--k1", "--b",
                     "--span-fallback", "--batch-size", "--device", "--dtype",
                     "--allow-remote-code", "--data-dir", "--accept-modified-data",
                     "--no-cache", "--cache-dir", "--quiet"]
    # no option given: the default config, one model (minilm) and the four query modes
    args = cli.build_parser().parse_args(["retrieve"])
    default = cli.config_from_args(args, RetrievalConfig)
    assert default == RetrievalConfig()
    assert default.models == ("minilm",) and default.split == "test"
    assert default.modes == ("sentence", "span", "instruction_sentence", "instruction_span")


def test_retrieve_options_become_the_config() -> None:
    from ncprobe.retrieval.config import RetrievalConfig

    args = cli.build_parser().parse_args([
        "retrieve", "--model", "minilm, bm25", "--model", ",e5-base", "--modes", "span,sentence",
        "--split", "val", "--idioms", "in the dock, make tracks", "--n-boot", "0", "--seed",
        "7", "--correct", "none", "--k1", "1.2", "--b", "1", "--span-fallback", "sentence",
        "--batch-size", "8", "--device", "cpu", "--dtype", "float16", "--allow-remote-code",
        "--accept-modified-data"])
    got = cli.config_from_args(args, RetrievalConfig)
    # each --model a comma list; the empty items left out; the lists joined in order
    assert got == RetrievalConfig(
        models=("minilm", "bm25", "e5-base"), modes=("span", "sentence"), split="val",
        idioms=("in the dock", "make tracks"), n_boot=0, seed=7, correction="none", k1=1.2,
        b=1.0, span_fallback="sentence", batch_size=8, device="cpu", dtype="float16",
        allow_remote_code=True, accept_modified_data=True)
    assert isinstance(got.k1, float) and isinstance(got.seed, int)


@pytest.mark.parametrize("argv, words", [
    (["--k1", "nan"], "argument --k1: expected a finite number >= 0"),
    (["--b", "inf"], "argument --b: expected a finite number from 0 to 1"),
    (["--b", "-0.5"], "argument --b: expected a finite number from 0 to 1"),
    (["--n-boot", "-1"], "argument --n-boot: must be >= 0, not -1"),
    (["--seed", "1.5"], "argument --seed: expected a whole number >= 0, not '1.5'"),
    (["--batch-size", "0"], "argument --batch-size: '0' is not a whole number of 1 or more"),
    (["--split", "dev"], "argument --split: invalid choice: 'dev'"),
    (["--correct", "bonferroni"], "argument --correct: invalid choice: 'bonferroni'"),
    (["--span-fallback", "zeros"], "argument --span-fallback: invalid choice: 'zeros'"),
    (["--modes", "spam"], "--modes spam: unknown query mode 'spam'"),
    (["--model", "bm25", "--model", "bm25"], "--model bm25,bm25: model 'bm25' is named twice"),
    (["--model", ","], "--model '': no model given"),
])
def test_a_bad_retrieve_value_exits_2_naming_the_option(argv, words, tmp_path, monkeypatch,
                                                        capsys) -> None:
    monkeypatch.chdir(tmp_path)  # the default --out
    assert exit_code(["retrieve", "--data-dir", str(tmp_path / "nowhere"), *argv]) == 2
    assert words in " ".join(capsys.readouterr().err.split())
    assert not any(tmp_path.iterdir())  # refused before any work


@dataclasses.dataclass(frozen=True)
class Toy:
    """A config class of a probe to come: every kind of field config_options reads."""

    names: typing.Sequence[str] = dataclasses.field(default=("a",), metadata={
        "option": "--name", "type": "comma_list", "repeatable": True,
        "help": "names (default: a)"})
    rate: float = dataclasses.field(default=0.5, metadata={"type": "bm25_b", "help": "rate"})
    width: int = dataclasses.field(default=3, metadata={"help": "width (default %(default)s)"})
    scale: float = 1.0
    kind: typing.Literal["x", "y"] = "x"
    fallback: typing.Literal["z"] | None = dataclasses.field(default=None,
                                                             metadata={"choices": ("z",)})
    loud: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(self.names))
        if self.width < 1:
            raise ValueError("width must be 1 or more")


def _toy_parser(**kw) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toy", add_help=False, exit_on_error=False)
    cli.config_options(parser, Toy, **kw)
    return parser


def test_config_options_take_any_config_class(capsys) -> None:
    parser = _toy_parser()
    assert list(_options(parser)) == ["--name", "--rate", "--width", "--scale", "--kind",
                                      "--fallback", "--loud"]
    args = parser.parse_args(["--name", "b,,c", "--name", "d", "--rate", "1", "--width", "2",
                              "--scale", "-2.5", "--kind", "y", "--fallback", "z", "--loud"])
    assert cli.config_from_args(args, Toy) == Toy(names=("b", "c", "d"), rate=1.0, width=2,
                                                  scale=-2.5, kind="y", fallback="z",
                                                  loud=True)
    assert cli.config_from_args(parser.parse_args([]), Toy) == Toy()
    # the type named in the metadata reads and checks the text; a float field refuses nan;
    # the choices of the metadata and of a Literal
    for argv in (["--rate", "1.5"], ["--scale", "nan"], ["--fallback", "y"], ["--kind", "z"],
                 ["--width", "two"]):
        with pytest.raises(argparse.ArgumentError):
            parser.parse_args(argv)
    with pytest.raises(errors.UsageError, match="--width 0: width must be 1 or more"):
        cli.config_from_args(parser.parse_args(["--width", "0"]), Toy)
    parser.print_help()
    assert "width (default 3)" in " ".join(capsys.readouterr().out.split())


def test_config_options_add_a_slice_of_the_fields() -> None:
    assert list(_options(_toy_parser(stop="width"))) == ["--name", "--rate"]
    assert list(_options(_toy_parser(start="width", stop="fallback"))) == [
        "--width", "--scale", "--kind"]
    assert list(_options(_toy_parser(start="fallback"))) == ["--fallback", "--loud"]
    assert list(_options(_toy_parser(names=("loud", "rate")))) == ["--rate", "--loud"]


def test_a_new_retrievalconfig_field_is_a_new_retrieve_option() -> None:
    from ncprobe.retrieval.cli import add_retrieve_arguments
    from ncprobe.retrieval.config import RetrievalConfig

    @dataclasses.dataclass(frozen=True)
    class More(RetrievalConfig):
        top: int = dataclasses.field(default=10, metadata={"type": "positive_int",
                                                           "help": "documents kept"})

    parser = argparse.ArgumentParser(exit_on_error=False)
    add_retrieve_arguments(parser, More)
    assert _options(parser)["--top"].default == 10
    args = parser.parse_args(["--top", "3", "--model", "bm25"])
    assert cli.config_from_args(args, More) == More(models=("bm25",), top=3)
    with pytest.raises(argparse.ArgumentError):
        parser.parse_args(["--top", "0"])


@dataclasses.dataclass(frozen=True)
class Probed:
    """A config whose check of two fields involves a default: the control must not be the
    probed model (default: the control's value of the test below)."""

    model: str = "glove"
    static: str = "none"
    width: int = 3

    def __post_init__(self) -> None:
        if self.width < 1:
            raise ValueError("width must be 1 or more")
        if self.static == self.model:
            raise ValueError(f"the control {self.static!r} is also the probed model")


def test_cross_field_checks_see_the_values_given_together() -> None:
    """Issue 38: `--model other --static glove` was refused because --static was first checked
    alone, against the default model glove."""
    parser = argparse.ArgumentParser(exit_on_error=False)
    cli.config_options(parser, Probed)
    args = parser.parse_args(["--model", "other", "--static", "glove"])
    assert cli.config_from_args(args, Probed) == Probed(model="other", static="glove")
    # refused against the default model: only the option the refusal depends on is named
    with pytest.raises(errors.UsageError) as e:
        cli.config_from_args(parser.parse_args(["--static", "glove", "--width", "2"]), Probed)
    assert str(e.value).startswith("--static glove: the control 'glove' is also")
    assert "--width" not in str(e.value) and "--model" not in str(e.value)
    # two values refused together: both named
    with pytest.raises(errors.UsageError) as e:
        cli.config_from_args(parser.parse_args(["--static", "x", "--model", "x"]), Probed)
    assert "--model x" in str(e.value) and "--static x" in str(e.value)
    # a value out of its own domain beside good ones: that option alone
    with pytest.raises(errors.UsageError) as e:
        cli.config_from_args(parser.parse_args(["--static", "x", "--width", "0"]), Probed)
    assert str(e.value) == "--width 0: width must be 1 or more"


def test_astitch_takes_another_model_with_the_default_static_control() -> None:
    from ncprobe.astitch.config import AStitchConfig

    args = cli.build_parser().parse_args(["run", "astitch", "--model", "minilm", "--static",
                                          "glove-6b-50d"])
    got = cli.config_from_args(args, AStitchConfig)
    assert got.models == ("minilm",) and got.static == "glove-6b-50d"
