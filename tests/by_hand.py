"""Reference computations written out by hand, for tests to check the package against.

Each follows the textbook definition with a plain loop, independently of the code under
test (which uses statsmodels); NaN p-values are left out of the family and stay NaN. The
model-directory hash follows the documented formula with hashlib.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np


def _family(p) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """The p-values as floats, an all-NaN result, and the family in ascending order of p."""
    p = np.asarray(p, dtype=float)
    order = [int(i) for i in np.argsort(p, kind="stable") if not np.isnan(p[i])]
    return p, np.full(len(p), np.nan), order


def holm(p) -> np.ndarray:
    """Holm's step-down adjusted p-values: the i-th smallest p times (m - i + 1), made
    non-decreasing, at most 1."""
    p, out, order = _family(p)
    m, running = len(order), 0.0
    for rank, i in enumerate(order):  # rank 0 = smallest
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def benjamini_hochberg(p) -> np.ndarray:
    """Benjamini-Hochberg's step-up adjusted p-values: the i-th smallest p times m / i, made
    non-increasing from the largest down."""
    p, out, order = _family(p)
    m, running = len(order), 1.0
    for rank in range(m, 0, -1):  # rank m = largest
        i = order[rank - 1]
        running = min(running, p[i] * m / rank)
        out[i] = running
    return out


def tree_sha256_by_hand(root: Path) -> str:
    """The documented ``dir-sha256`` of a model directory, computed with hashlib over the files
    directly: sorted ``path NUL sha256`` lines of every file but hidden ones and a top-level
    README or LICENSE."""
    lines = []
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if p.is_file() and not any(x.startswith(".") for x in rel.parts) and not (
                len(rel.parts) == 1 and rel.name.upper().startswith(("README", "LICENSE"))):
            lines.append(f"{rel.as_posix()}\0{hashlib.sha256(p.read_bytes()).hexdigest()}\n")
    return hashlib.sha256("".join(sorted(lines)).encode()).hexdigest()
