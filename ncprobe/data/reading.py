"""Reading raw files: the load context, tables, tags and scores, with errors that say where."""

from __future__ import annotations

import ast
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..errors import ErrorSink
from .sources import git_blob_sha1


@dataclass
class LoadContext:
    """What a loader carries: where the files are, where problems go, what it noted and read."""

    data_dir: Path
    sink: ErrorSink = field(default_factory=ErrorSink)
    notes: list[str] = field(default_factory=list)
    read: dict[str, str] = field(default_factory=dict)
    tolerated: Counter = field(default_factory=Counter)

    def tolerate(self, what: str) -> None:
        """Count a known, harmless anomaly; :meth:`flush_tolerated` turns counts into notes."""
        self.tolerated[what] += 1

    def flush_tolerated(self) -> None:
        for what, n in sorted(self.tolerated.items()):
            self.notes.append(f"{what}: {n} tolerated")
        self.tolerated.clear()

    def exists(self, rel: str) -> bool:
        return (self.data_dir / rel).is_file()

    def table(self, rel: str, sep: str = ",", columns=(), excel: bool = False
              ) -> pd.DataFrame | None:
        """Read a file as strings (no NA parsing) and check its columns.

        Returns ``None`` (after reporting) when the file or a column is missing.
        """
        path = self.data_dir / rel
        if not path.is_file():
            self.sink.error("file not found; run `ncprobe data download`, or point --data-dir / "
                            "$NCPROBE_DATA at a directory that holds it", file=str(path))
            return None
        if excel:
            df = pd.read_excel(path, dtype=str, keep_default_na=False)
        else:
            df = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False)
        self.read[rel] = git_blob_sha1(path.read_bytes())
        missing = [c for c in columns if c not in df.columns]
        for c in missing:
            self.sink.error("missing column; the file does not have the expected layout",
                            file=rel, column=c)
        return None if missing else df

    def score(self, value: str, *, file: str, row: int, column: str, key: str,
              allow_empty: bool = False) -> float:
        """A 0-5 score; a decimal comma is accepted. Empty gives NaN where allowed."""
        text = value.strip().replace(",", ".")
        if not text:
            if not allow_empty:
                self.sink.error("empty score", file=file, row=row, column=column, key=key)
            return math.nan
        try:
            x = float(text)
        except ValueError:
            self.sink.error(f"{value!r} is not a number", file=file, row=row, column=column,
                            key=key)
            return math.nan
        if not 0.0 <= x <= 5.0:
            self.sink.error(f"score {x} outside the 0-5 scale", file=file, row=row,
                            column=column, key=key)
        return x

    def tag_span(self, sentence: str, tag: str, *, file: str, row: int, column: str,
                 key: str) -> tuple[int, int] | None:
        """The ``[start, end)`` word span of a boolean tag list, validated against the sentence.

        The tag must be a Python list literal of booleans with one entry per
        whitespace word of the sentence, and its True entries must be non-empty
        and contiguous. Returns ``None`` after reporting a problem.
        """
        where = dict(file=file, row=row, column=column, key=key)
        try:
            flags = ast.literal_eval(tag.strip())
        except (ValueError, SyntaxError):
            self.sink.error(f"unparsable tag {tag[:60]!r}: expected a list such as "
                            "[False, True, True]", **where)
            return None
        if not isinstance(flags, list) or not all(isinstance(f, bool) for f in flags):
            self.sink.error(f"tag {tag[:60]!r} is not a list of booleans", **where)
            return None
        n_words = len(sentence.split())
        if len(flags) != n_words:
            self.sink.error(f"tag has {len(flags)} entries but the sentence has {n_words} words: "
                            f"{sentence[:80]!r}", **where)
            return None
        idx = [i for i, f in enumerate(flags) if f]
        if not idx:
            self.sink.error("empty span: the tag has no True entry", **where)
            return None
        if idx[-1] - idx[0] + 1 != len(idx):
            self.sink.error(f"non-contiguous span: True at word positions {idx}", **where)
            return None
        return idx[0], idx[-1] + 1
