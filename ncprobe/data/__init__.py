"""The NCIMP data layer: files, download, stimuli and scores."""

from ..schema import CLASSES, CONTEXTS
from ..schema import PROBE_FAMILIES as PROBES
from .coverage import check_coverage
from .generate import generate_pairs
from .ncimp import SplicedStimuliWarning, load_stimuli
from .pairs import MinimalPair, load_pairs
from .sources import download, resolve_data_dir, upstream_files
from .stimuli import NounCompound, Stimuli, Stimulus

__all__ = ["CLASSES", "CONTEXTS", "PROBES", "MinimalPair", "NounCompound", "SplicedStimuliWarning",
           "Stimuli", "Stimulus", "check_coverage", "download", "generate_pairs", "load_pairs",
           "load_stimuli", "resolve_data_dir", "upstream_files"]
