"""The ten figures of the study (method §4), one function each, from a Results.

Every figure function (named ``fig_*``, not to be taken for the formulas of
:mod:`ncprobe.ncimp.measures`) takes a Results holding one or many models and one or
both languages, and returns a :class:`matplotlib.figure.Figure` (its panels are
``fig.axes``). :data:`FIGURES` maps the figure names to the functions, in
figure order. Nothing is shown or saved here; :func:`ncprobe.ncimp.report.write_report`
saves them.

The figures are built without pyplot: nothing is registered in pyplot's list of
figures and the caller's backend is never changed; they are drawn with Agg. In
Jupyter, a figure function as the last line of a cell shows its figure once; in
a script, ``fig.savefig(...)``.

Layout and style, shared by all figures:

* one panel per model, side by side (wrapped after :data:`MAX_COLUMNS` models),
  with the model's name as the panel title;
* the conditions (language x context) as colours from :data:`CONDITION_PALETTE`:
  English blue, Portuguese orange, naturalistic darker, neutral lighter; the
  conditions of other languages (a user's own pairs, ``FR-Nat`` ...) after them, in
  colour families of their own (:func:`condition_palette`);
* the compositionality classes I / PC / C as colours from :data:`CLASS_PALETTE`
  (green, yellow, blue) in the figures by class;
* a schematic "ideal values" panel, first, in the figures where the study
  draws the expected pattern (:data:`IDEAL`): the shape of the values a model
  that captured idiomaticity would give, by class, on a low-high scale with no
  numbers;
* only the ``raw`` vector space by default (``space="standardised"`` for the
  z-scored one), one layer view per model (see :mod:`ncprobe.ncimp.selection`), the
  naturalistic and neutral contexts (``contexts="nat,neut,neut-pl"`` adds the
  plural neutral sentences, ``contexts="neut,ncs"`` shows the NCS dataset's beside
  NCIMP's neutral ones).

A figure that is one panel (one model and no ideal panel; one condition for the
correlogram) can be drawn into an Axes of the caller's own figure: ``ax=`` (as in
seaborn: the function draws into it and returns its figure, with the legend inside
the Axes and no figure title). Each function's docstring says whether it takes ``ax``.

A model without values for a figure (e.g. a sentence-level-only API model in an
NC-level figure) is left out, with a note saying so: ``return_notes=True`` returns
``(fig, notes)``, the notes a list of strings. A figure with no values at all
raises :class:`NoData`.

The package, one module per kind of figure (each ``fig_*`` is importable from here):

* :mod:`~ncprobe.plots.theme`: style and figure creation (:func:`style`,
  :func:`new_figure`), the palettes, the ideal values, the grid of panels and legends;
* :mod:`~ncprobe.ncimp.figures._docs`: the paragraphs the figures' docstrings share, written once;
* :mod:`~ncprobe.ncimp.figures.distributions`: figures 1, 2, 3, 5;
* :mod:`~ncprobe.ncimp.figures.by_class`: figures 4, 6, 7, and the per-class tests marked on the
  figures by class (:func:`class_test_marks`);
* :mod:`~ncprobe.ncimp.figures.ratio`: figures 8, 9;
* :mod:`~ncprobe.ncimp.figures.correlogram`: figure 10;
* :mod:`~ncprobe.ncimp.figures.layers`: the layer-wise figure (ncprobe's addition).

No statistic is computed here: the per-class tests, the correlogram's matrices and the
ratio's quartiles are :mod:`ncprobe.ncimp.inference`'s (:func:`correlogram_matrix` and
:func:`ratio_quartiles` are importable from here too), the corrections' names and the stars
:mod:`ncprobe.significance`'s.
"""

from __future__ import annotations

from typing import Callable

from ...errors import NoData
from ...plots.theme import (
    CLASS_PALETTE,
    FONT_SIZE,
    IDEAL,
    IDEAL_WIDTH,
    MAX_COLUMNS,
    PANEL_HEIGHT,
    PANEL_WIDTH,
    new_figure,
    style,
)
from ...schema import PAPER_FIGURES
from ..inference import ratio_quartiles
from ..view import Spec
from .by_class import (
    MARK_ROW,
    class_test_marks,
    fig_affinity_by_class,
    fig_simr_syn_by_class,
    fig_simr_wordssyn_by_class,
)
from .conditions import CONDITION_PALETTE, OTHER_CONDITION_FAMILIES, condition_palette
from .correlogram import CORRELOGRAM_MEASURES, correlogram_matrix, fig_correlogram
from .distributions import fig_affinity, fig_nc_cosines, fig_scaled_similarity, fig_sentence_cosines
from .layers import fig_layers
from .ratio import fig_ratio, fig_ratio_by_class

_SHOWN = ("space", "contexts", "layers")          # every figure's view of the results
_LEVELLED = ("space", "level", "contexts", "layers")  # and the level, figures 3-10

#: Every figure a report draws, in order, as a :class:`~ncprobe.ncimp.view.Spec`: the study's
#: (:data:`ncprobe.schema.PAPER_FIGURES`, the report's file names), then ncprobe's additions
#: (drawn when the results hold what they show); each with the fields of the report's
#: :class:`~ncprobe.ncimp.view.View` it takes (the figures by class and the correlogram follow its
#: correction).
FIGURE_SPECS: tuple[Spec, ...] = (
    Spec("sent_cosines", fig_sentence_cosines, _SHOWN),
    Spec("nc_cosines", fig_nc_cosines, _SHOWN),
    Spec("affinity", fig_affinity, _LEVELLED),
    Spec("affinity_by_class", fig_affinity_by_class, _LEVELLED + ("correct",)),
    Spec("scaled_similarity", fig_scaled_similarity, _LEVELLED),
    Spec("simr_syn_by_class", fig_simr_syn_by_class, _LEVELLED + ("correct",)),
    Spec("simr_wordssyn_by_class", fig_simr_wordssyn_by_class, _LEVELLED + ("correct",)),
    Spec("ratio", fig_ratio, _LEVELLED),
    Spec("ratio_by_class", fig_ratio_by_class, _LEVELLED + ("correct",)),
    Spec("correlogram", fig_correlogram, _LEVELLED + ("correct",)),
    Spec("layers", fig_layers, ("space", "level", "contexts"), added=True, layerwise=True),
)

#: The figures of method §4, in order: name (:data:`ncprobe.schema.PAPER_FIGURES`, the report's
#: file names) -> function(results, **options) -> Figure.
FIGURES: dict[str, Callable] = {s.name: s.build for s in FIGURE_SPECS if not s.added}
#: ncprobe's figures beyond the study's (the report draws them after figure 10, when the
#: results hold what they show): name -> function(results, **options) -> Figure.
ADDED_FIGURES: dict[str, Callable] = {s.name: s.build for s in FIGURE_SPECS if s.added}
if tuple(FIGURES) != PAPER_FIGURES:  # pragma: no cover  (the study's names, in its order)
    raise ImportError(f"ncprobe.ncimp.figures: FIGURE_SPECS {tuple(FIGURES)} are not the study's "
                      f"figures {PAPER_FIGURES}")

__all__ = ["ADDED_FIGURES", "CLASS_PALETTE", "CONDITION_PALETTE", "CORRELOGRAM_MEASURES",
           "FIGURES", "FIGURE_SPECS", "FONT_SIZE", "IDEAL", "IDEAL_WIDTH", "MARK_ROW",
           "MAX_COLUMNS", "NoData", "OTHER_CONDITION_FAMILIES", "PANEL_HEIGHT", "PANEL_WIDTH",
           "class_test_marks", "condition_palette", "correlogram_matrix", "fig_affinity",
           "fig_affinity_by_class", "fig_correlogram", "fig_layers", "fig_nc_cosines",
           "fig_ratio", "fig_ratio_by_class", "fig_scaled_similarity", "fig_sentence_cosines",
           "fig_simr_syn_by_class", "fig_simr_wordssyn_by_class", "new_figure", "ratio_quartiles",
           "style"]
