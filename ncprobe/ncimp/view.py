"""What a report shows, said once: the :class:`View` (space, level, contexts, layers,
correction, cell format, example NCs) and the :class:`Spec` of each figure and table.

Every figure (:data:`ncprobe.ncimp.figures.FIGURE_SPECS`) and table
(:data:`ncprobe.ncimp.tables.TABLE_SPECS`)
is a spec: its name, its builder (``build(results, **options)``) and the fields of the view
it takes as keyword options. :func:`ncprobe.ncimp.report.write_report` makes one view and
dispatches every spec alike (``spec.options(view)``): no figure or table is special-cased by
name or position. A builder takes only the fields its spec names: the correlation tables,
for instance, keep their raw space whatever the figures' (as they always have).

A new figure or table (a second probe's) is a builder and a spec, added to one of those
lists; ``report`` needs no change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..schema import Correction

#: The fields of :class:`View` a spec may take.
VIEW_FIELDS = ("space", "level", "contexts", "layers", "correct", "intervals", "ncs")


@dataclass(frozen=True)
class View:
    """The choices every figure and table of one report follows.

    Attributes:
        space: the vector space (``raw``, ``standardised``).
        level: ``nc`` or ``sent``, for the figures and tables that have a level option
            (figures 1 and 2 are one level each).
        contexts: the context groups shown (``None``: each builder's default, naturalistic
            and neutral).
        layers: the layer view (``None``: the first of each model's).
        correct: the multiple-comparison correction (``holm``, ``fdr_bh``, ``none``).
        intervals: whether significant correlation cells show their bootstrap interval.
        ncs: the NCs of the examples table (``None``: the study's six).
        layerwise: whether the results hold layer-wise views: the specs marked
            ``layerwise`` (the layer-wise figure and table) are drawn only then.
    """

    space: str = "raw"
    level: str = "nc"
    contexts: Any = None
    layers: Any = None
    correct: Correction = "holm"
    intervals: bool = True
    ncs: Sequence[str] | None = None
    layerwise: bool = False

    def level_text(self) -> str:
        """``NC`` or ``sentence``: the level as the report's index names it."""
        return "NC" if self.level == "nc" else "sentence"


@dataclass(frozen=True)
class Spec:
    """One figure or table of a report.

    Attributes:
        name: its name (the file's, ``fig03_<name>`` or ``table_<name>``).
        build: ``build(results, **options) -> Figure | DataFrame``.
        takes: the fields of :class:`View` passed to ``build`` as keywords of the same name
            (``ncs`` included).
        added: ncprobe's addition, not a figure or table of the study (said in the index).
        layerwise: drawn only for results with layer-wise views (``View.layerwise``).
        says_view: its caption names the view's level and space (a table).
    """

    name: str
    build: Callable[..., Any]
    takes: tuple[str, ...] = ()
    added: bool = False
    layerwise: bool = False
    says_view: bool = False

    def __post_init__(self) -> None:
        unknown = [t for t in self.takes if t not in VIEW_FIELDS]
        if unknown:
            raise ValueError(f"spec {self.name!r}: {', '.join(unknown)} is no field of View "
                             f"({', '.join(VIEW_FIELDS)})")

    def options(self, view: View) -> dict[str, Any]:
        """The keyword options ``build`` gets for ``view``."""
        return {name: getattr(view, name) for name in self.takes}

    def shown(self, view: View) -> bool:
        """Whether a report of ``view`` shows this figure or table."""
        return view.layerwise or not self.layerwise

__all__ = ["Spec", "VIEW_FIELDS", "View"]
