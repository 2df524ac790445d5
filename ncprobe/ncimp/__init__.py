"""NCIMP, the probe of the reference study (He et al., Computational Linguistics 2025): how
far a noun compound's vector moves when a word of it is substituted, against its
compositionality.

Its modules, in the order a run goes through them: :mod:`.config` (``RunConfig``, the run's
options), :mod:`.pipeline` (``compute()``: one model x language), :mod:`.measures` and
:mod:`.rogue` (the study's measures from cosines), :mod:`.analysis` (stimuli and vectors ->
``Results``), :mod:`.results`, :mod:`.cells` and :mod:`.summary` (its tables, cells and
summary), :mod:`.comparison` (two runs' rho compared), :mod:`.inference` (statistics for the
report), :mod:`.view`, :mod:`.selection`, :mod:`.tables` and :mod:`.figures` (what the report
shows), :mod:`.report`, :mod:`.reproduce` (every model x language), :mod:`.cli` (its
commands' options and runs) and :mod:`.seam` (``NcimpProbe``, declared to the registry). Its
data are read by :mod:`ncprobe.data.ncimp`.

Importing this package imports none of them.
"""
