"""Amnesic probing in the stored vectors (:func:`ncprobe.amnesic.run.run_amnesic`), GloVe with
AStitch's concept on a small copy of AStitch's data and NCIMP's files whole: the guarantee
holds on the concept's training rows, the control leaves the concept readable, each target
gives its conditions and changes, and bad requests are refused before any work."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncprobe.amnesic.run import RUN_COLUMNS, run_amnesic
from ncprobe.errors import UsageError
from ncprobe.intervention import CHANGES, TARGET_COLUMNS, TARGET_RUNS
from ncprobe.probes import PEERS

from ..astitch.subset import make_subset

GLOVE = "glove-6b-50d"
ASTITCH = "H-TayyarMadabushi+AStitchInLanguageModels"


@pytest.fixture(scope="module")
def data(raw_dir, tmp_path_factory) -> Path:
    """AStitch's data cut to 10 uses of each label per split; every other probe's files as
    they are (links)."""
    dest = make_subset(raw_dir, tmp_path_factory.mktemp("amnesic-data"), per_label=10,
                       langs=("en",))
    for entry in raw_dir.iterdir():
        if entry.name != ASTITCH:
            (dest / entry.name).symlink_to(entry, target_is_directory=True)
    return dest


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_glove_without_astitchs_concept(data, tmp_path):
    steps: list[str] = []
    run = run_amnesic(GLOVE, peers=PEERS, concept="astitch", targets=["ncimp", "astitch"],
                      n_boot=50, compare_n_boot=50,
                      data_dir=data, cache_dir=tmp_path / "cache", on_step=steps.append,
                      concept_options={"accept_modified_data": True},
                      target_options={"astitch": {"accept_modified_data": True,
                                                  "within_draws": 1, "static": "none",
                                                  "c_grid": (0.01, 1.0)}})
    assert list(run.rows.columns) == [*RUN_COLUMNS, *TARGET_COLUMNS]
    assert set(run.rows["target"]) == {"ncimp", "astitch"}
    for target, part in run.rows.groupby("target"):
        assert set(part["condition"]) == set(TARGET_RUNS) | set(CHANGES), target
    g = run.guarantee.set_index(["level", "condition", "split", "probe"])
    for level in ("nc", "sent"):
        chance = g.loc[(level, "concept", "train", "erased"), "chance"]
        # LEACE's guarantee on the rows the eraser was fitted on: the majority class
        assert g.loc[(level, "concept", "train", "erased"), "accuracy"] == pytest.approx(
            chance, abs=1 / g.loc[(level, "concept", "train", "erased"), "n"] + 1e-12)
    # the concept was readable before, and erasing a random direction leaves it so
    assert g.loc[("nc", "concept", "train", "plain"), "accuracy"] > chance
    assert g.loc[("nc", "control", "train", "erased"), "accuracy"] > chance
    assert run.meta["erased"] != run.meta["control"]
    assert run.meta["compare_n_boot"] == 50  # resolved once, the number every target used
    # the concept is fitted on the few-shot training split (its default): AStitch's few-shot
    # linear probe trains on those rows, and only its rows say so
    shares = run.rows["shares_concept_rows"].astype(bool)
    assert set(run.rows.loc[shares, "metric"]) == {"macro-F1 few-shot"}
    assert shares.eq((run.rows["target"] == "astitch")
                     & (run.rows["metric"] == "macro-F1 few-shot")).all()
    rows = run.json_rows()
    assert {r["target"] for r in rows} == {"ncimp", "astitch", "concept"}
    assert any(s.startswith("target ncimp") for s in steps)


@pytest.mark.parametrize("kwargs, message", [
    ({"targets": ["ncimp", "ncimp"]}, "given twice"),
    ({"targets": ["idiolink"]}, "cannot be a target"),
    ({"targets": []}, "at least one target"),
    ({"targets": ["ncimp"], "where": "forward"}, "where='forward'"),
    ({"targets": ["ncimp"], "target_options": {"astitch": {}}}, "no target of this run"),
    ({"targets": ["ncimp"], "concept": "ncc"}, "offers no concept"),
])
def test_bad_requests_are_refused_before_any_work(kwargs, message, tmp_path):
    with pytest.raises(UsageError, match=message):
        run_amnesic(GLOVE, peers=PEERS, **{"concept": "astitch", **kwargs},
                    cache_dir=tmp_path)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_the_command_writes_its_results_prints_json_and_reports(tmp_path, capsys):
    import json

    from ncprobe.cli import main

    from ..command import exit_code

    out = tmp_path / "amnesic"
    # NCIMP's concept (folds by compound) erased, NCIMP measured: the whole files, quickly
    argv = ["run", "amnesic", "--model", GLOVE, "--concept", "ncimp", "--targets", "ncimp",
            "--n-boot", "20", "--compare-n-boot", "20", "--cache-dir", str(tmp_path / "cache"),
            "--out", str(out), "--json", "--quiet"]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["target"] for r in rows} == {"ncimp", "concept"}
    folds = {r["fold"] for r in rows if r["target"] == "concept"}
    assert folds == {"1", "2", "3", "4", "5"}  # no held-out split: five folds of compounds
    assert (out / "run.json").is_file() and (out / "changes.parquet").is_file()
    # the directory holds another run (another seed): refused before any work
    assert main([*argv, "--seed", "1"]) == 2
    assert "overwrite" in capsys.readouterr().err
    report = tmp_path / "report"
    assert main(["report", str(out), "--out", str(report), "--format", "png", "--quiet"]) == 0
    names = {p.name for p in report.iterdir()}
    assert {"changes.md", "guarantee.md", "README.md"} <= names
    assert any(n.startswith("fig_amnesic_changes") for n in names)
    # an option amnesic probing does not have is refused (exit 2), never ignored
    assert exit_code(["run", "amnesic", "--where", "forward"]) == 2
