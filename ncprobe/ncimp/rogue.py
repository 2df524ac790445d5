"""Rogue dimensions (Timkey & van Schijndel 2021): who dominates the cosine, and standardisation.

The expected cosine between two random vectors of a set X is the mean over
pairs ``i != j`` of ``u_i . u_j`` with ``u = x / |x|``; it splits into one term
per dimension k::

    C_k = mean over i != j of u_ik u_jk = ((sum_i u_ik)^2 - sum_i u_ik^2) / (n (n - 1))

so ``sum_k C_k`` is the expected cosine. A few dimensions with large ``C_k``
("rogue" dimensions) can dominate every similarity. The cure studied by
Timkey & van Schijndel is z-scoring each dimension, ``z = (x - mu) / sigma``,
with mu and sigma estimated over a reference set (here: the vectors of the
original NC sentences of one language, level, layer view and context group).
"""

from __future__ import annotations

import numpy as np


def dimension_contributions(x: np.ndarray) -> np.ndarray:
    """``C_k`` for every dimension of the rows of ``x`` (rows with NaN or zero norm are dropped).

    The sum of the result is the mean cosine over all pairs of distinct rows.
    """
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=1)
    keep = np.isfinite(norms) & (norms > 0)
    u = x[keep] / norms[keep, None]
    n = len(u)
    if n < 2:
        return np.full(x.shape[1], np.nan)
    total = u.sum(0)
    return (total * total - (u * u).sum(0)) / (n * (n - 1))


def top_dimensions(x: np.ndarray, k: int = 5) -> list[tuple[int, float, float]]:
    """The ``k`` dimensions with the largest contribution: ``(dim, C_k, C_k / expected cosine)``."""
    return rank_dimensions(dimension_contributions(x), k)


def rank_dimensions(c: np.ndarray, k: int = 5) -> list[tuple[int, float, float]]:
    """:func:`top_dimensions` from contributions ``c`` already computed."""
    if np.isnan(c).all():
        return []
    total = float(c.sum())
    order = np.argsort(-c, kind="stable")[:k]
    return [(int(d), float(c[d]), float(c[d] / total) if total != 0 else float("nan"))
            for d in order]


def fit_standardiser(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """mu and sigma per dimension over the rows of ``x`` without NaN.

    A dimension that is constant over the reference set (sigma = 0) gets
    sigma = 1: it is centred to 0 and carries no information after standardisation.
    """
    x = np.asarray(x, dtype=np.float64)
    x = x[~np.isnan(x).any(axis=1)]
    if len(x) == 0:
        raise ValueError("no vectors to estimate mu and sigma from")
    mu = x.mean(0)
    sigma = x.std(0)
    sigma[sigma == 0] = 1.0
    return mu, sigma


def standardise(x: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    """``(x - mu) / sigma`` (NaN rows stay NaN)."""
    return (np.asarray(x, dtype=np.float64) - mu) / sigma
