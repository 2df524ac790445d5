"""ncprobe: probe the embedding spaces of language models for idiomaticity.

The public API::

    import ncprobe
    stim = ncprobe.load_stimuli("pt", contexts="nat,neut")
    df = stim.to_frame()
    res = ncprobe.compute(model="glove-6b-50d", lang="en")   # RunConfig fields as keywords
    res.measures            # per-NC measures, a tidy DataFrame
    res.select(level="nc", context="nat", measure="syn")     # its rows, filtered
    res.select(analysis="nc")                                 # rows of res.correlations
    res.wide(level="nc")    # one row per NC, one column per measure (ncprobe.MEASURES)
    print(res.summary())
    ncprobe.compare(res_a, res_b)    # rho of two runs, cell by cell: a tidy DataFrame
    ret = ncprobe.run("idiolink", models=["minilm"])   # any probe by name (ncprobe.probes)
    ret.select("overall", usage="idiomatic")        # every probe's results: one interface

``ncprobe.run(PROBE, ...)`` runs any probe of :data:`ncprobe.probes.PROBES`;
``ncprobe.compute`` is ``run("ncimp", ...)``, ``ncprobe.retrieve`` ``run("idiolink", ...)``.

``ncprobe.compare`` is :func:`ncprobe.ncimp.comparison.compare`; the module's other names (e.g.
``STAT_COLUMNS``) are in :mod:`ncprobe.ncimp.comparison`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._version import VERSION as __version__
from .data import (
    NounCompound,
    SplicedStimuliWarning,
    Stimuli,
    Stimulus,
    download,
    load_pairs,
    load_stimuli,
    resolve_data_dir,
)
from .errors import (
    DataError,
    DataErrors,
    DownloadError,
    MissingPackageError,
    ModelUnavailableError,
    NcprobeError,
)
from .ncimp.comparison import compare
from .ncimp.config import RunConfig
from .ncimp.pipeline import compute
from .ncimp.results import Results
from .probes import run

# the vocabularies (ncprobe.schema holds every name): SUBSTITUTIONS are the stimuli's
# substitutions (P_Syn ...), TABLES the tables of a Results
from .schema import CLASSES, CONTEXTS, MEASURES, SUBSTITUTIONS
from .schema import RESULT_TABLES as TABLES

if TYPE_CHECKING:
    from .data.generate import generate_pairs
    from .data.idiolink import load_idiolink
    from .retrieval.config import RetrievalConfig
    from .retrieval.probe import retrieve
    from .retrieval.results import RetrievalResults

__all__ = ["CLASSES", "CONTEXTS", "MEASURES", "SUBSTITUTIONS", "TABLES", "DataError", "DataErrors",
           "DownloadError", "MissingPackageError", "ModelUnavailableError", "NcprobeError",
           "NounCompound", "Results", "RetrievalConfig", "RetrievalResults", "RunConfig",
           "SplicedStimuliWarning", "Stimuli", "Stimulus", "__version__", "compare", "compute",
           "download", "generate_pairs", "load_idiolink", "load_pairs", "load_stimuli",
           "resolve_data_dir", "retrieve", "run"]


def __getattr__(name: str):
    # the probe generator is imported when it is asked for: loading data never imports it
    if name == "generate_pairs":
        from .data.generate import generate_pairs

        return generate_pairs
    if name == "load_idiolink":  # IdioLink (the retrieval probe): NCIMP loading never imports it
        from .data.idiolink import load_idiolink

        return load_idiolink
    if name == "retrieve":  # the retrieval probe: imported when asked for
        from .retrieval.probe import retrieve

        return retrieve
    if name == "RetrievalResults":
        from .retrieval.results import RetrievalResults

        return RetrievalResults
    if name == "RetrievalConfig":
        from .retrieval.config import RetrievalConfig

        return RetrievalConfig
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
