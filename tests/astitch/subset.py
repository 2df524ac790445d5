"""A small copy of AStitch's data: a few rows of each label from every split, both context
variants with the same rows, the paraphrase files whole (the task files then differ from their
pins: runs on it pass ``accept_modified_data``)."""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

ROOT = Path("H-TayyarMadabushi+AStitchInLanguageModels/Dataset")
TASK = ROOT / "Task1/SubTaskA"
SENSES = ROOT / "Extended_Noun_Compound_Senses_Dataset"
SPLITS = ("train_zero_shot", "train_one_shot", "train_few_shot", "dev", "test")
VARIANTS = ("ContextExcluded_IdiomIncluded", "ContextIncluded_IdiomIncluded")


def read_rows(path: Path) -> list[dict]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def write_rows(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=["label", "sentence1", "sentence2"], lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")


def chosen(rows: list[dict], per_label: int) -> list[int]:
    """The indices of the first ``per_label`` rows of each label, in file order."""
    taken: dict[str, int] = {}
    keep = []
    for i, r in enumerate(rows):
        if taken.get(r["label"], 0) < per_label:
            taken[r["label"]] = taken.get(r["label"], 0) + 1
            keep.append(i)
    return keep


def make_subset(raw: Path, dest: Path, per_label: int = 6, langs=("en", "pt")) -> Path:
    """Write the small copy into ``dest`` (a data directory) and return it."""
    for lang in langs:
        for split in SPLITS:
            src = [read_rows(raw / TASK / lang.upper() / v / f"{split}.csv") for v in VARIANTS]
            keep = chosen(src[0], per_label)
            for v, rows in zip(VARIANTS, src, strict=True):
                write_rows(dest / TASK / lang.upper() / v / f"{split}.csv",
                           [rows[i] for i in keep])
        name = f"{lang.upper()}_Extended_Noun_Compound_Senses_Dataset.csv"
        (dest / SENSES).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(raw / SENSES / name, dest / SENSES / name)
    return dest
