"""Amnesic probing (issue 40): erase a concept that a probe finds and measure what changes.

:mod:`ncprobe.amnesic.erase` holds the eraser: LEACE (Belrose et al. 2023, the
``concept-erasure`` package, installed with the ``amnesic`` extra) fitted on a probe's labels,
as numpy arrays, with the control concept of Elazar et al. (2021), folds by group and the
guarantee shown on the concept's own linear probe. Nothing here imports torch until an eraser
is fitted.
"""
