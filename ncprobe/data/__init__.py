"""The data layer: NCIMP's files, download, stimuli and scores; a user's own minimal pairs;
IdioLink's queries and documents (``load_idiolink``, imported on first use).

``generate_pairs`` (:mod:`ncprobe.data.generate`) is imported on first use: loading NCIMP
(or a pairs file) never imports the probe generator or its frequency data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..schema import CLASSES, CONTEXTS, SUBSTITUTIONS
from .coverage import check_coverage
from .ncimp import SplicedStimuliWarning, load_stimuli
from .pairs import load_pairs
from .sources import download, resolve_data_dir, upstream_files
from .splice import MinimalPair
from .stimuli import NounCompound, Stimuli, Stimulus

if TYPE_CHECKING:
    from .generate import generate_pairs
    from .idiolink import load_idiolink

__all__ = ["CLASSES", "CONTEXTS", "MinimalPair", "NounCompound", "SplicedStimuliWarning",
           "Stimuli", "Stimulus", "check_coverage", "download", "generate_pairs", "load_idiolink",
           "load_pairs", "load_stimuli", "resolve_data_dir", "SUBSTITUTIONS", "upstream_files"]


def __getattr__(name: str):
    if name == "generate_pairs":  # the generator, imported when it is asked for
        from .generate import generate_pairs

        return generate_pairs
    if name == "load_idiolink":  # IdioLink: loading NCIMP never imports it
        from .idiolink import load_idiolink

        return load_idiolink
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
