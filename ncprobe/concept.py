"""A concept: a probe's own labels of its rows, and their vectors one layer view at a time.

Amnesic probing (:mod:`ncprobe.amnesic`) fits an eraser per layer view and level on a concept's
training rows and checks LEACE's guarantee on its held-out rows. The labels are a probe's own
(AStitch's idiomatic or literal use, NCIMP's compositionality class): a probe that has such
labels offers them through the probe seam (:attr:`~ncprobe.probes.base.Probe.offers_concept`,
:meth:`~ncprobe.probes.base.Probe.concept`, :func:`ncprobe.probes.concept`) as a
:class:`Concept`, and nothing outside the probe's package knows where they come from.

A :class:`Concept` reads **one view at a time**: :meth:`Concept.rows` reads the vectors of one
(view, level) pair, takes the concept's rows of them and lets the rest go, so a 5120-d model's
41 views are never held together. It holds the source of its vectors (the embedding store's
files) open until :meth:`Concept.close`, or the end of its ``with`` block.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from .errors import UsageError

__all__ = ["Concept", "ConceptRows", "FittedOn", "Side"]


@dataclass(frozen=True)
class FittedOn:
    """The rows a concept's erasers were fitted on (:attr:`Concept.fitted_on`), named as the
    probe that offers the concept names them (:attr:`Side.ids`): a target probe that trains
    on rows of its own asks :meth:`shared` which of them the erasers saw. Where a target's
    classifier trains on those very rows, LEACE's guarantee alone sends it to chance: its
    change says nothing of what the model uses.

    Attributes:
        probe: the probe whose data the rows are (the concept's :attr:`Concept.meta`
            ``probe``).
        lang: their language.
        ids: the training rows' ids.
    """

    probe: str
    lang: str
    ids: frozenset[str]

    def shared(self, probe: str, lang: str, ids: Iterable[str]) -> frozenset[str]:
        """Those of ``ids`` (rows of ``probe``'s data in ``lang``, named as :attr:`Side.ids`
        names them) that the erasers were fitted on; none for another probe's data or
        language."""
        if (probe, lang) != (self.probe, self.lang):
            return frozenset()
        return self.ids & frozenset(ids)


@dataclass(frozen=True)
class Side:
    """The rows of one side of a concept (its training rows, or its held-out rows).

    Attributes:
        at: per row, where its vector is among the vectors a view's read gives (int64).
        y: per row, its label: an index into :attr:`Concept.classes` (int64).
        groups: per row, the unit it belongs to (AStitch's expression, NCIMP's compound):
            what folds keep together.
        ids: per row, what it is in the probe's data, as text (``dev:12``, ``S2:ivory tower``).
    """

    at: np.ndarray
    y: np.ndarray
    groups: np.ndarray
    ids: np.ndarray

    def __post_init__(self) -> None:
        at = np.asarray(self.at, dtype=np.int64)
        y = np.asarray(self.y, dtype=np.int64)
        groups = np.asarray(self.groups, dtype=object)
        ids = np.asarray(self.ids, dtype=object)
        arrays = (at, y, groups, ids)
        if any(a.ndim != 1 for a in arrays) or len({len(a) for a in arrays}) != 1:
            raise ValueError(f"rows {at.shape}, labels {y.shape}, groups {groups.shape} and "
                             f"ids {ids.shape}: give one of each per row, as sequences")
        for name, value in (("at", at), ("y", y), ("groups", groups), ("ids", ids)):
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class ConceptRows:
    """A concept's rows in one layer view and level (:meth:`Concept.rows`).

    Attributes:
        view, level: the view as the results tables name it (``"6"``, ``"own"``) and the level
            (``"nc"``: the span's vectors, ``"sent"``: the sentence's).
        x_train, y_train, groups_train: the training rows' vectors ``(n, dim)`` (float64), labels
            (indices into :attr:`Concept.classes`) and groups.
        x_held, y_held, groups_held: the held-out rows', or ``None`` each when the concept has
            no held-out split (then folds by group are the caller's to make).
        ids_train, ids_held: what each row is in the probe's data.
        dropped_train, dropped_held: rows left out of this view because they have no vector
            (a static model that knows none of the span's words), said, never silent.
    """

    view: str
    level: str
    x_train: np.ndarray
    y_train: np.ndarray
    groups_train: np.ndarray
    x_held: np.ndarray | None
    y_held: np.ndarray | None
    groups_held: np.ndarray | None
    ids_train: np.ndarray = field(default_factory=lambda: np.array([], dtype=object))
    ids_held: np.ndarray | None = None
    dropped_train: int = 0
    dropped_held: int = 0

    @property
    def has_held(self) -> bool:
        """Whether the concept has held-out rows."""
        return self.x_held is not None


def _side(x: np.ndarray, side: Side) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                int]:
    """The side's vectors (float64), labels, groups and ids, rows without a finite vector
    left out and counted."""
    got = np.array(x[side.at], dtype=np.float64)
    ok = np.isfinite(got).all(axis=1) if got.ndim == 2 else np.ones(len(got), bool)
    return got[ok], side.y[ok], side.groups[ok], side.ids[ok], int((~ok).sum())


class Concept:
    """A probe's labels of its rows, and their vectors read one (view, level) at a time.

    Args:
        name: what the concept is, in words (``astitch idiomatic/literal (en)``).
        classes: the labels' names; a row's label is an index into them.
        views: the (view, level) pairs it has, in order (views as the results tables name
            them: ``"0"`` ... ``"6"``, ``"own"``).
        read: ``read(view, level)`` -> the ``(n, dim)`` vectors of that one view and level, of
            which each side's :attr:`Side.at` picks its rows.
        train: the training rows (an eraser is fitted on them).
        held: the held-out rows (LEACE's guarantee is checked on them), or ``None``.
        close: what lets the vectors' source go (the embedding store's files).
        meta: what the concept was made of, JSON-ready (probe, model, language, options, the
            model's fingerprint, the data files read), for the run that uses it; its
            ``probe`` and ``lang`` name whose rows the training rows are
            (:attr:`fitted_on`).
        notes: what was noticed making it, one line each.

    Raises:
        ValueError: a label outside ``classes``, no training row, no view, a view twice.
    """

    def __init__(self, name: str, classes: Sequence[str], views: Sequence[tuple[str, str]],
                 read: Callable[[str, str], np.ndarray], train: Side, held: Side | None = None,
                 *, close: Callable[[], None] | None = None, meta: dict[str, Any] | None = None,
                 notes: Sequence[str] = ()) -> None:
        self.name, self.classes = str(name), tuple(str(c) for c in classes)
        self.views = tuple((str(v), str(lv)) for v, lv in views)
        if not self.views or len(set(self.views)) != len(self.views):
            raise ValueError(f"concept {self.name!r}: give each (view, level) once, at least one")
        if len(train.at) == 0:
            raise ValueError(f"concept {self.name!r}: no training row")
        for what, side in (("training", train), ("held-out", held)):
            if side is not None and len(side.y) and (side.y.min() < 0
                                                     or side.y.max() >= len(self.classes)):
                raise ValueError(f"concept {self.name!r}: a {what} label outside 0.."
                                 f"{len(self.classes) - 1} (classes {', '.join(self.classes)})")
        self.train, self.held = train, held
        self._read, self._close = read, close
        self.meta = dict(meta or {})
        self.notes = list(notes)

    def __repr__(self) -> str:
        return (f"Concept({self.name!r}, classes={self.classes}, {len(self.views)} views, "
                f"{len(self.train.at)} training rows, "
                f"{'no' if self.held is None else len(self.held.at)} held-out rows)")

    @property
    def fitted_on(self) -> FittedOn:
        """The rows its erasers are fitted on: its training rows, of the probe and language
        its :attr:`meta` names (``probe``, ``lang``).

        Raises:
            ValueError: a concept whose meta names no probe or language.
        """
        missing = [k for k in ("probe", "lang") if not self.meta.get(k)]
        if missing:
            raise ValueError(f"concept {self.name!r}: its meta names no {' or '.join(missing)}"
                             ": whose rows its erasers were fitted on is unknown")
        return FittedOn(str(self.meta["probe"]), str(self.meta["lang"]),
                        frozenset(str(i) for i in self.train.ids))

    @property
    def view_names(self) -> tuple[str, ...]:
        """The views, each once, in order."""
        return tuple(dict.fromkeys(v for v, _ in self.views))

    def rows(self, view: str, level: str) -> ConceptRows:
        """The rows of one view and level: that view's vectors read (one read), the training
        and held-out rows taken, the rest let go.

        Raises:
            UsageError: a (view, level) the concept does not have, naming those it has.
        """
        key = (str(view), str(level))
        if key not in self.views:
            have = "; ".join(f"{v} ({', '.join(lv for w, lv in self.views if w == v)})"
                             for v in self.view_names)
            raise UsageError(f"the concept {self.name!r} has no view {view!r} at level "
                             f"{level!r}; it has: {have}")
        x = np.asarray(self._read(*key))
        top = max(int(self.train.at.max()), int(self.held.at.max())
                  if self.held is not None and len(self.held.at) else -1)
        if x.ndim != 2 or len(x) <= top:
            raise ValueError(f"read({view!r}, {level!r}) gave {x.shape} vectors for rows up "
                             f"to {top}")
        xt, yt, gt, it, dt = _side(x, self.train)
        if self.held is None:
            del x
            return ConceptRows(key[0], key[1], xt, yt, gt, None, None, None, it, None, dt, 0)
        xh, yh, gh, ih, dh = _side(x, self.held)
        del x
        return ConceptRows(key[0], key[1], xt, yt, gt, xh, yh, gh, it, ih, dt, dh)

    def close(self) -> None:
        """Let the vectors' source go (a later :meth:`rows` may open it again)."""
        if self._close is not None:
            self._close()

    def __enter__(self) -> "Concept":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
