"""Reference computations written out by hand, for tests to check the package against.

Each follows the textbook definition with a plain loop, independently of the code under
test (which uses statsmodels); NaN p-values are left out of the family and stay NaN.
"""

from __future__ import annotations

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
