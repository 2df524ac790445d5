"""``--mdl``: the minimum description length (online code, :mod:`ncprobe.mdl`) of the AStitch
linear probe and its controls. The rows' codelength is :func:`ncprobe.mdl.online_code` called
here on the cell's training rows rebuilt from the data (the GloVe encoder's span vectors of
each training use) with the probe's classifier and C; the rows exist only with ``mdl``; they
round-trip through a results directory, and a run without them writes what it always did."""

from __future__ import annotations

import io
import json
import math
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ncprobe.astitch.linear import classifier, control_labels, mdl_rows
from ncprobe.astitch.probe import run_astitch
from ncprobe.astitch.results import AStitchResults
from ncprobe.cli import main
from ncprobe.errors import UsageError
from ncprobe.mdl import codelength_interval, online_code

from .subset import make_subset

GLOVE = "glove-6b-50d"
#: the zero-shot setting's splits: the linear probe runs once per feature
SPLITS = ("train_zero_shot", "dev", "test")
N_BOOT = 50


@pytest.fixture(scope="module")
def subset(raw_dir, tmp_path_factory) -> Path:
    return make_subset(raw_dir, tmp_path_factory.mktemp("astitch-mdl-data"), per_label=5,
                       langs=("en",))


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("astitch-mdl-cache")


def _run(subset, cache, **options):
    return run_astitch(models=[GLOVE], langs=["en"], static="none", splits=SPLITS,
                       n_boot=N_BOOT, within_draws=2, data_dir=subset,
                       accept_modified_data=True, cache_dir=cache, progress=False, **options)


@pytest.fixture(scope="module")
def plain(subset, cache):
    return _run(subset, cache)


@pytest.fixture(scope="module")
def with_mdl(subset, cache, plain):  # after plain: the vectors are cached
    return _run(subset, cache, mdl=True)


def _training_rows(subset):
    """The zero-shot training uses rebuilt from the data: each use's nc span vector (GloVe,
    the target sentence alone; a use without a vector as zeros, as the probe has it), its
    label and its expression."""
    from ncprobe.data.astitch import load_astitch
    from ncprobe.encoders import load_encoder

    data = load_astitch("en", subset, accept_modified=True)
    recs = [r for r in data.records if r.split == "train_zero_shot"]
    enc = load_encoder(GLOVE, "en")
    spans = enc.encode([list(r.tokens) for r in recs], [tuple(r.span) for r in recs]).span
    x = np.array(np.asarray(spans)[:, 0], dtype=np.float64)
    x[~np.isfinite(x).all(axis=1)] = 0.0
    return (x, np.array([r.label for r in recs], np.int64), [r.expression for r in recs],
            sorted({r.expression for r in data.records if r.split in SPLITS}))


def test_the_codelength_is_the_online_code_of_the_training_rows(with_mdl, subset):
    x, y, expr, every = _training_rows(subset)
    lin = with_mdl.linear
    cell = lin[(lin["probe_kind"] == "linear") & (lin["level"] == "nc")
               & (lin["context"] == "excluded") & (lin["subset"] == "all")]
    assert len(cell) == 1
    C = float(cell["C"].iloc[0])
    rows = with_mdl.mdl[(with_mdl.mdl["level"] == "nc")
                        & (with_mdl.mdl["context"] == "excluded")].set_index("control")
    assert set(rows.index) <= {"", "type", "within"} and "" in rows.index
    own = rows.loc[""]
    assert float(own["C"]) == C and int(own["n"]) == len(y)
    code = online_code(x, y, lambda: classifier(C), seed=0, classes=(0, 1))
    assert float(own["codelength_bits"]) == pytest.approx(code.bits, rel=1e-9)
    assert float(own["uniform_bits"]) == pytest.approx(len(y) * 1.0)  # log2(2) a row
    assert float(own["compression"]) == pytest.approx(len(y) / code.bits, rel=1e-9)
    ci = codelength_interval(code, expr, n_boot=N_BOOT, seed=0)
    assert (float(own["bits_low"]), float(own["bits_high"])) == pytest.approx(
        (ci.bits_low, ci.bits_high), rel=1e-9)
    assert (float(own["ci_low"]), float(own["ci_high"])) == pytest.approx(
        (ci.compression_low, ci.compression_high), rel=1e-9)
    assert int(own["n_expressions"]) == len(set(expr))
    # the type control: one random label per expression (the task's own draw), coded alike
    ctrl = control_labels(every, y, seed=0)
    yc = np.array([ctrl[e] for e in expr], np.int64)
    if len(set(yc.tolist())) == 2:
        code = online_code(x, yc, lambda: classifier(C), seed=0, classes=(0, 1))
        assert float(rows.loc["type", "codelength_bits"]) == pytest.approx(code.bits,
                                                                           rel=1e-9)
    else:
        assert "type" not in rows.index
    assert int(rows.loc["within", "n_draws"]) == 2


def test_compression_above_one_where_the_labels_are_learnable() -> None:
    """Planted: the label is the sign of the first coordinate (each expression holding uses of
    both labels), so the probe compresses; the type control's labels (one per expression)
    cannot be read from that coordinate and compress less."""
    rng = np.random.default_rng(3)
    n = 240
    expr = np.array([f"e{i % 24}" for i in range(n)])
    x = rng.normal(size=(n, 5))
    y = (x[:, 0] > 0).astype(np.int64)
    ctrl = np.array([int(e[1:]) % 2 for e in expr], np.int64)
    rows = mdl_rows({"model": "m", "lang": "en", "setting": "zero-shot", "layer": "0",
                     "level": "nc", "context": "excluded", "control": ""}, 1.0, x, y, expr,
                    control_labels=ctrl, n_boot=200, seed=0)
    by = {r["control"]: r for r in rows}
    assert set(by) == {"", "type"}
    assert by[""]["compression"] > 1.5 and by[""]["ci_low"] > 1.0
    assert by["type"]["compression"] < by[""]["compression"]
    # the compression is the uniform code (1 bit a row) over the online codelength
    assert by[""]["compression"] == pytest.approx(n / by[""]["codelength_bits"])


def test_rows_only_with_mdl_and_nothing_else_moves(plain, with_mdl):
    assert plain.mdl.empty
    assert len(with_mdl.mdl) and set(with_mdl.mdl["probe_kind"]) == {"mdl"}
    for name in plain.layout.tables:
        if name != "mdl":
            pd.testing.assert_frame_equal(with_mdl.tables[name], plain.tables[name],
                                          check_exact=True)
    rows = with_mdl.json_rows()
    assert [r for r in rows if r["probe_kind"] != "mdl"] == plain.json_rows()
    assert not any(r["probe_kind"] == "mdl" for r in plain.json_rows())
    mdl_json = [r for r in rows if r["probe_kind"] == "mdl"]
    assert len(mdl_json) == len(with_mdl.mdl)
    for r in mdl_json:
        for key in ("codelength_bits", "uniform_bits", "compression", "ci_low", "ci_high",
                    "bits_low", "bits_high", "n", "uniform_blocks"):
            assert key in r, key
    text, block = with_mdl.summary(), "\n".join(with_mdl._mdl_lines("en"))
    assert block.startswith("MDL (online code") and block in text
    assert "MDL (online code" not in plain.summary()
    assert text.replace("\n" + block, "") == plain.summary()


def test_round_trip_and_a_plain_directory_without_the_table(plain, with_mdl, tmp_path,
                                                           monkeypatch):
    with_mdl.to_parquet(tmp_path / "m")
    plain.to_parquet(tmp_path / "p")
    assert (tmp_path / "m" / "mdl.parquet").is_file()
    assert not (tmp_path / "p" / "mdl.parquet").exists()
    assert "mdl" not in json.loads((tmp_path / "p" / "run.json").read_text())["tables"]
    back = AStitchResults.load(tmp_path / "m")
    pd.testing.assert_frame_equal(back.mdl, with_mdl.mdl, check_dtype=False)
    assert back.run_id == with_mdl.run_id
    again = AStitchResults.load(tmp_path / "p")
    assert again.mdl.empty and again.run_id == plain.run_id
    # the report: a table of the MDL rows (a plain run's report has none: its table files
    # are those it always wrote); its figures are another test's
    import ncprobe.astitch.report as report

    monkeypatch.setattr(report, "FIGURES", ())
    made = {p.name for p in with_mdl.report(tmp_path / "rm")}
    assert not any("mdl" in p.name for p in plain.report(tmp_path / "rp"))
    assert {"table_astitch_mdl.md", "table_astitch_mdl.tex"} <= made
    md = (tmp_path / "rm" / "table_astitch_mdl.md").read_text()
    assert md.count("| en | zero-shot |") == len(with_mdl.mdl)
    assert "table_astitch_mdl.md" in (tmp_path / "rm" / "README.md").read_text()


def test_mdl_on_the_command_line(with_mdl, subset, tmp_path, monkeypatch):
    """``--mdl`` reaches the run's config, and ``--json`` prints the MDL rows (the run itself
    is the fixture's: the same options, computed once)."""
    import ncprobe.astitch.probe as probe

    given = []

    def run(config=None, /, **options):
        given.append((config, options))
        return with_mdl

    monkeypatch.setattr(probe, "run_astitch", run)
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = main(["run", "astitch", "--model", GLOVE, "--lang", "en", "--static", "none",
                     "--splits", ",".join(SPLITS), "--n-boot", str(N_BOOT),
                     "--within-draws", "2", "--mdl", "--json", "--quiet", "--data-dir",
                     str(subset), "--accept-modified-data", "--out", str(tmp_path / "r")])
    assert code == 0 and len(given) == 1
    config, options = given[0]
    assert (config.mdl if config is not None else options["mdl"]) is True
    rows = [r for r in json.loads(out.getvalue()) if r["probe_kind"] == "mdl"]
    assert len(rows) == len(with_mdl.mdl)
    assert all(r["split"] == "train" and r["setting"] == "zero-shot" for r in rows)
    assert all(math.isfinite(r["codelength_bits"]) for r in rows)


def test_mdl_must_be_a_bool():
    from ncprobe.astitch.config import AStitchConfig

    with pytest.raises(UsageError, match="--mdl"):
        AStitchConfig(mdl="yes")  # type: ignore[arg-type]
