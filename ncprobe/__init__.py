"""ncprobe: probe the embedding spaces of language models for idiomaticity.

The public API::

    import ncprobe
    stim = ncprobe.load_stimuli("pt", contexts="nat,neut")
    df = stim.to_frame()
"""

from __future__ import annotations

__version__ = "0.1.0"

from .data import (CLASSES, CONTEXTS, PROBES, NounCompound, SplicedStimuliWarning, Stimuli,
                   Stimulus, download, load_pairs, load_stimuli, resolve_data_dir)
from .errors import DataError, DataErrors, DownloadError, NcprobeError

__all__ = ["CLASSES", "CONTEXTS", "PROBES", "DataError", "DataErrors", "DownloadError",
           "NcprobeError", "NounCompound", "SplicedStimuliWarning", "Stimuli", "Stimulus",
           "__version__", "download", "load_pairs", "load_stimuli", "resolve_data_dir"]
