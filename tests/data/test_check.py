"""`ncprobe data check` where the probes meet (issue 38): a probe's missing extra files are notes
unless `--probe` asks for that probe, and a directory in place of a pinned file is said in one
way by `data check` and by every probe that reads the file."""

from __future__ import annotations

import shutil

import pytest

from ncprobe.cli import main
from ncprobe.data.sources import upstream_files

NCC_DATA = "jacklanda+SemanticQA"
ASTITCH_DATA = "H-TayyarMadabushi+AStitchInLanguageModels"
PREDICTIONS = (f"{NCC_DATA}/semantic_qa/results/noun_compound_compositionality/"
               "noun_compound_compositionality_0-shot_gpt-5.json")
ASTITCH_DEV = (f"{ASTITCH_DATA}/Dataset/Task1/SubTaskA/EN/ContextExcluded_IdiomIncluded/"
               "dev.csv")
DIRECTORY = "is a directory, not the pinned file; move it out of the way"


def _lines(text: str, start: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(start)]


def test_missing_extra_files_of_the_newer_probes_are_notes(data_copy, capsys) -> None:
    for folder in (NCC_DATA, ASTITCH_DATA):
        shutil.rmtree(data_copy / folder)
    assert main(["data", "check", "--data-dir", str(data_copy)]) == 0
    said = capsys.readouterr()
    assert not _lines(said.err, "error:"), _lines(said.err, "error:")[:3]
    notes = _lines(said.out + said.err, "note:")
    # the pins of each folder that are extra files: counted from the pinned list
    for probe, folder in (("ncc", NCC_DATA), ("astitch", ASTITCH_DATA)):
        line = next(n for n in notes if f"the {probe} probe needs them" in n)
        listed = line.split("fetches them: ", 1)[1].split(", ")
        assert listed and all(p.startswith(folder + "/") for p in listed)
        assert {f.local_path for f in upstream_files() if f.local_path in listed} == set(listed)
    # asked for, a probe's missing files are errors (exit 3)
    for probe in ("ncc", "astitch"):
        assert main(["data", "check", "--data-dir", str(data_copy), "--probe", probe]) == 3
        err = capsys.readouterr().err
        assert _lines(err, "error:") and all("missing" in e for e in _lines(err, "error:"))


@pytest.mark.parametrize("rel, command", [
    (PREDICTIONS, ["run", "ncc"]),
    (ASTITCH_DEV, ["run", "astitch", "--lang", "en"]),
])
def test_a_directory_in_place_of_a_pinned_file_is_one_message(data_copy, tmp_path, capsys, rel,
                                                              command) -> None:
    (data_copy / rel).unlink()
    (data_copy / rel).mkdir()
    assert main(["data", "check", "--data-dir", str(data_copy)]) == 3
    checked = _lines(capsys.readouterr().err, "error:")
    assert len(checked) == 1  # once, not once by its pin and again by its probe
    assert rel in checked[0] and DIRECTORY in checked[0]
    assert main([*command, "--data-dir", str(data_copy), "--out", str(tmp_path / "r"),
                 "--no-cache", "--quiet"]) == 3
    ran = _lines(capsys.readouterr().err, "error:")
    assert ran and rel in ran[0] and DIRECTORY in ran[0] and "file not found" not in ran[0]
    assert not (tmp_path / "r").exists()
