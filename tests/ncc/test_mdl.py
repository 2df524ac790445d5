"""``ncprobe run ncc --mdl``: the minimum description length of the NCC classifiers.

Each codelength row is checked against :func:`ncprobe.mdl.online_code` and
:func:`ncprobe.mdl.codelength_interval` called here by hand on the same features and gold
classes (a scikit-learn pipeline of a scaler and a logistic regression built here, not the
probe's), the uniform code as ``n log2 3``; a planted measure must compress the classes, a
noise measure must not; without ``mdl`` no row, no key in the metadata and the same JSON rows.
The items are synthetic (no data files, no model): the classifiers' own function
(``_classified``) is run on a handmade feature table.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from ncprobe.mdl import codelength_interval, online_code
from ncprobe.ncc.config import NccConfig, run_dir
from ncprobe.ncc.probe import _classified
from ncprobe.ncc.results import NccResults

from .handmade import items_table, meta

CLASSES = ("NC", "PC", "C")
KEY = ("system", "kind", "setting", "layer", "level", "measure")
N = 90
N_BOOT = 40


@dataclass(frozen=True)
class Item:
    id: str
    nc: str
    gold: str


def _items() -> list[Item]:
    return [Item(f"{k:03d}", f"nc {k}", CLASSES[k % 3]) for k in range(N)]


def _features(items: list[Item]) -> pd.DataFrame:
    """``planted``: the class index plus a little noise (above chance); ``noise``: none of
    the class."""
    rng = np.random.default_rng(7)
    cls = np.array([CLASSES.index(it.gold) for it in items], dtype=float)
    return pd.DataFrame({"planted": cls + rng.normal(0, 0.4, len(items)),
                         "noise": rng.normal(0, 1, len(items))})


def _by_hand(x: np.ndarray, gold: list[str], groups: list[str], C: float, seed: int):
    def model():
        return make_pipeline(StandardScaler(),
                             LogisticRegression(C=C, solver="lbfgs", max_iter=10_000))
    code = online_code(x, gold, model, seed=seed, classes=CLASSES)
    return code, codelength_interval(code, groups, n_boot=N_BOOT, seed=seed)


def _rows(mdl: bool, C: float = 0.5, seed: int = 3):
    items = _items()
    cfg = NccConfig(mdl=mdl, folds=3, repeats=1, n_boot=N_BOOT, seed=seed, regularisation=C)
    rows: list[dict] = []
    out = _classified("m", "representation", "-", "nc", _features(items), items, cfg, [], [],
                      [], rows)
    return items, out, rows


def test_each_classifier_row_is_the_online_code_of_its_features_by_hand() -> None:
    items, out, rows = _rows(True)
    feats = _features(items)
    gold, ids = [it.gold for it in items], [it.id for it in items]
    # one row per classifier: each measure alone (single), both together (all)
    assert [(r["setting"], r["measure"]) for r in rows] == [
        ("single", "planted"), ("single", "noise"), ("all", "all")]
    assert len(out) == len(rows)
    for r in rows:
        cols = [r["measure"]] if r["setting"] == "single" else ["planted", "noise"]
        code, ci = _by_hand(feats[cols].to_numpy(float), gold, ids, 0.5, 3)
        assert r["codelength_bits"] == pytest.approx(code.bits, rel=1e-9)
        assert r["uniform_bits"] == pytest.approx(N * math.log2(3))
        assert r["compression"] == pytest.approx(N * math.log2(3) / code.bits, rel=1e-9)
        assert (r["bits_low"], r["bits_high"]) == pytest.approx((ci.bits_low, ci.bits_high))
        assert (r["compression_low"], r["compression_high"]) == pytest.approx(
            (ci.compression_low, ci.compression_high))
        assert r["n"] == N and r["n_groups"] == N  # one item a group
        assert r["uniform_blocks"] == len(code.uniform_blocks)
        assert (r["system"], r["kind"], r["layer"], r["level"]) == ("m", "representation", "-",
                                                                    "nc")
    by = {r["measure"]: r for r in rows}
    assert by["planted"]["compression"] > 1.3 and by["planted"]["compression_low"] > 1
    assert by["noise"]["compression"] < 1.05
    assert by["all"]["compression"] > 1


def test_no_rows_without_mdl_and_the_same_classifier_rows() -> None:
    _, plain, rows = _rows(False)
    assert rows == []
    _, with_mdl, _ = _rows(True)
    for a, b in zip(plain, with_mdl, strict=True):
        pd.testing.assert_frame_equal(a, b)


def _results(with_mdl: bool) -> NccResults:
    """The handmade results, with the codelength rows of the synthetic classifiers (as
    run_ncc gives them) when ``with_mdl``."""
    return NccResults.from_items(items_table(), meta(), n_boot=50,
                                 mdl=_rows(True)[2] if with_mdl else None)


def test_results_json_summary_and_round_trip(tmp_path) -> None:
    plain, res = _results(False), _results(True)
    assert plain.mdl.empty and list(plain.mdl.columns) == list(res.mdl.columns)
    assert len(res.mdl) == 3
    # --json: the accuracy rows as before, then the codelength rows
    rows = res.json_rows()
    assert rows[:len(plain.json_rows())] == plain.json_rows()
    extra = rows[len(plain.json_rows()):]
    assert [r["probe_kind"] for r in extra] == ["mdl"] * 3
    assert json.loads(json.dumps(extra))[0]["codelength_bits"] == pytest.approx(
        res.mdl["codelength_bits"].iloc[0])
    # the summary: a line with the best compression (the planted measure's) and what it is
    best = res.mdl.loc[res.mdl["compression"].idxmax()]
    assert best["measure"] == "planted"
    line = [s for s in res.summary().splitlines() if s.startswith("MDL")]
    assert len(line) == 1 and "m single - nc planted" in line[0]
    assert f"compression {best['compression']:.2f}" in line[0]
    assert not any(s.startswith("MDL") for s in plain.summary().splitlines())
    assert plain.summary() == res.summary().replace("\n\n" + line[0], "")
    # written and read back: the same rows, in a table of their own (not in run.json)
    res.to_parquet(tmp_path / "r")
    back = NccResults.load(tmp_path / "r")
    pd.testing.assert_frame_equal(back.mdl, res.mdl)
    assert back.json_rows() == rows
    assert (tmp_path / "r" / "mdl.parquet").is_file()
    assert all("mdl" not in run for run in json.loads((tmp_path / "r" / "run.json")
                                                      .read_text())["runs"])
    # without --mdl: no mdl file, and the other files and the run id those of a run that
    # never knew of the table
    plain.to_parquet(tmp_path / "p")
    assert not (tmp_path / "p" / "mdl.parquet").exists()
    assert "mdl" not in json.loads((tmp_path / "p" / "run.json").read_text())["tables"]
    assert NccResults.load(tmp_path / "p").mdl.empty


def test_report_has_the_table_only_with_mdl(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("ncprobe.ncc.report.FIGURES", ())  # the tables only: fast
    res, plain = _results(True), _results(False)
    files = {p.name for p in res.report(tmp_path / "a", formats=("png",))}
    assert {"table_ncc_mdl.md", "table_ncc_mdl.tex"} <= files
    text = (tmp_path / "a" / "table_ncc_mdl.md").read_text()
    assert "m single - nc planted" in text and "table_ncc_mdl.md" in (
        tmp_path / "a" / "README.md").read_text()
    files = {p.name for p in plain.report(tmp_path / "b", formats=("png",))}
    assert not any("mdl" in f for f in files)


def test_the_option_on_the_command_line(tmp_path) -> None:
    from ncprobe.cli import build_parser
    from ncprobe.probes.options import config_from_args

    args = build_parser().parse_args(["run", "ncc", "--mdl"])
    cfg = config_from_args(args, NccConfig)
    assert cfg.mdl is True
    assert config_from_args(build_parser().parse_args(["run", "ncc"]), NccConfig).mdl is False
    assert run_dir(cfg).name == "ncc-glove-6b-50d-mdl"
    assert run_dir(NccConfig()).name == "ncc-glove-6b-50d"


class _Data:
    """What run_ncc reads of the loaded items: no published system, the synthetic items."""

    def __init__(self, items: list[Item]) -> None:
        self.items = items
        self.systems: list = []
        self.prompts: dict[str, str] = {}
        self.sources: dict[str, str] = {}
        self.modified: dict[str, dict] = {}
        self.notes: tuple[str, ...] = ()

    def gold_counts(self) -> dict[str, int]:
        return {c: sum(it.gold == c for it in self.items) for c in CLASSES}


@dataclass(frozen=True)
class _Nc:
    comp: float


class _Measures:
    meta = [{"fingerprint": {"model": "x"}, "data_sources": {}, "notes": []}]


@pytest.mark.parametrize("mdl", [True, False])
def test_run_ncc_puts_each_models_rows_and_the_ceilings_in_its_run(monkeypatch, mdl) -> None:
    """run_ncc end to end on the synthetic items (data, encoders and measures stand-ins):
    each model's run holds its own classifiers' rows and the ceiling's; none without mdl."""
    import ncprobe.ncc.probe as probe

    items = _items()
    feats = _features(items)
    stim = type("Stim", (), {"ncs": {("en", it.nc): _Nc(float(v))
                                     for it, v in zip(items, feats["planted"], strict=True)}})
    monkeypatch.setattr("ncprobe.data.semanticqa.load_ncc", lambda *a, **k: _Data(items))
    monkeypatch.setattr("ncprobe.data.semanticqa.ncc_stimuli",
                        lambda *a, **k: (stim, {it.nc: it for it in items}, []))
    monkeypatch.setattr("ncprobe.encoders.load_encoder", lambda *a, **k: None)
    monkeypatch.setattr(probe, "_measures", lambda *a, **k: _Measures())
    monkeypatch.setattr(probe, "_views", lambda res: [("-", "nc")])
    monkeypatch.setattr(probe, "_features", lambda *a: feats[["noise"]])
    res = probe.run_ncc(models=["a", "b"], mdl=mdl, folds=3, repeats=1, n_boot=N_BOOT,
                        progress=False)
    # never in the runs' metadata (the table holds them)
    assert all("mdl" not in run for run in res.meta)
    if not mdl:  # no rows, and the option recorded only when on (run.json as before)
        assert res.mdl.empty
        assert all("mdl" not in run["config"] for run in res.meta)
        return
    assert all(run["config"]["mdl"] is True for run in res.meta)
    got = [(r["system"], r["kind"], r["setting"], r["measure"])
           for r in res.mdl.to_dict("records")]
    # each model's classifiers, then the ceiling's once
    assert got == [("a", "representation", "single", "noise"),
                   ("a", "representation", "all", "all"),
                   ("b", "representation", "single", "noise"),
                   ("b", "representation", "all", "all"),
                   ("gold score", "ceiling", "single", "gold"),
                   ("gold score", "ceiling", "all", "all")]
    # its code is the planted score's, by hand
    ceiling = res.mdl[res.mdl["kind"] == "ceiling"].iloc[0]
    code, _ = _by_hand(feats[["planted"]].to_numpy(float), [it.gold for it in items],
                       [it.id for it in items], 1.0, 0)
    assert ceiling["codelength_bits"] == pytest.approx(code.bits, rel=1e-9)
    assert ceiling["compression"] > 1.3


def test_results_joined_keep_each_models_rows_and_the_ceilings_once() -> None:
    row = _rows(True)[2][0]
    ceiling = {**row, "system": "gold score", "kind": "ceiling", "layer": "", "level": "",
               "measure": "gold"}
    a, b = (NccResults.from_items(items_table(m), meta(m), n_boot=50,
                                  mdl=[{**row, "system": m}, ceiling]) for m in ("a", "b"))
    joined = NccResults.concat([a, b])
    # as the other tables of joined results: the ceiling's rows once, where the first had them
    assert list(joined.mdl["system"]) == ["a", "gold score", "b"]
    assert joined.mdl["codelength_bits"].tolist() == pytest.approx([row["codelength_bits"]] * 3)
