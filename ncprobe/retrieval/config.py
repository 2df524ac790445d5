"""RetrievalConfig: everything that defines one ``ncprobe retrieve`` run (the IdioLink probe).

The retrieval probe's run options, declared once, as :class:`~ncprobe.ncimp.config.RunConfig`
declares the NCIMP probe's: each field has its default, its check (``__post_init__``) and
its metadata, from which ``ncprobe retrieve`` makes its option
(:func:`ncprobe.cli.config_options`): ``help`` (the option's help text), and where the option
differs from the field's name, ``option``, ``metavar``, ``type`` (the name of the argparse
type in :mod:`ncprobe.argtypes` that reads and checks the value on the command line),
``choices`` and ``repeatable`` (an option given more than once, each a comma list).
:func:`~ncprobe.retrieval.probe.retrieve` takes the fields as keywords.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Sequence, get_args

from .._io import safe_name
from ..config import N_BOOT, check_counts, check_models, document_fields
from ..errors import UsageError
from ..schema import Correction, check_choice
from ..significance import check_correction
from .bm25 import K1, B, check_parameters
from .queries import parse_modes

__all__ = ["DEFAULT_MODELS", "SPAN_FALLBACKS", "RetrievalConfig", "Split", "run_dir"]

#: An IdioLink split (:data:`ncprobe.data.idiolink.SPLITS`).
Split = Literal["test", "val", "train"]
#: The models of a run that names none.
DEFAULT_MODELS = ("minilm",)
#: What ``span_fallback`` may be.
SPAN_FALLBACKS = (None, "sentence")


@document_fields
@dataclass(frozen=True)
class RetrievalConfig:
    """One IdioLink retrieval run: the models, the query modes, the data, the statistics and
    how the dense models run.

    Each field is an option of ``ncprobe retrieve`` (``--n-boot`` for ``n_boot``; what each
    means is the option's help, listed below) and a keyword of
    :func:`~ncprobe.retrieval.probe.retrieve`. The values are checked here, the same for
    both: an unknown mode, a model named twice, BM25 parameters out of range (``k1`` a
    finite number >= 0, ``b`` one in [0, 1]), ``n_boot`` or ``seed`` not a whole number of
    0 or more, ``batch_size`` not one of 1 or more: each is a
    :class:`~ncprobe.errors.UsageError`.
    ``models``, ``modes`` and ``idioms`` are kept as tuples (``modes`` with ``all`` spelled
    out; a string is one model, one idiom, or a comma list of modes).
    """

    models: Sequence[str] = field(default=DEFAULT_MODELS, metadata={
        "option": "--model", "metavar": "M", "type": "comma_list", "repeatable": True,
        "help": "model(s): an alias (`ncprobe models --probe idiolink`), a "
                "sentence-transformers hub id or directory, or bm25; a comma list or "
                "repeated (default: minilm)"})
    modes: Sequence[str] = field(default="all", metadata={
        "metavar": "MODES",
        "help": "query modes, a comma list of sentence, span, instruction_sentence, "
                "instruction_span, or all (default); bm25 runs sentence and span"})
    split: Split = field(default="test", metadata={
        "help": "the split (default test: the published figures)"})
    idioms: Sequence[str] | None = field(default=None, metadata={
        "metavar": "I1,I2", "type": "comma_list",
        "help": "only these idioms (their queries and documents; a quick look)"})
    n_boot: int = field(default=N_BOOT, metadata={
        "metavar": "N", "type": "count",
        "help": "idiom resamples of the intervals (default 1000; 0: none); the paired "
                "tests draw their own sign flips, 1,000 per test of the run's family"})
    seed: int = field(default=0, metadata={
        "metavar": "S", "type": "count", "help": "seed (default 0)"})
    correction: Correction = field(default="holm", metadata={
        "option": "--correct",
        "help": "multiple-comparison correction of the paired tests (default holm)"})
    k1: float = field(default=K1, metadata={
        "metavar": "K1", "type": "bm25_k1",
        "help": f"BM25 k1, term-frequency saturation: a finite number >= 0 (default {K1}, "
                "the benchmark's)"})
    b: float = field(default=B, metadata={
        "metavar": "B", "type": "bm25_b",
        "help": f"BM25 b, length normalisation: a finite number from 0 to 1 (default {B}, "
                "the benchmark's)"})
    span_fallback: Literal["sentence"] | None = field(default=None, metadata={
        "choices": SPAN_FALLBACKS[1:],
        "help": "where a span cannot be pooled (no token overlaps it), use the query's "
                "sentence vector, marked in the results (default: stop, naming the "
                "queries)"})
    batch_size: int = field(default=64, metadata={
        "metavar": "N", "type": "positive_int", "help": "texts per forward pass (default 64)"})
    device: str | None = field(default=None, metadata={
        "help": "cpu, cuda, cuda:1, mps (default: cuda when available)"})
    dtype: str | None = field(default=None, metadata={
        "help": "float32 (default), float16 or bfloat16 (GPU)"})
    allow_remote_code: bool = field(default=False, metadata={
        "help": "run models whose hub repository holds Python code (it runs on this "
                "machine: only for models you trust)"})
    accept_modified_data: bool = field(default=False, metadata={
        "help": "run on IdioLink files that differ from their pinned upstream copy "
                "(edited on purpose) instead of stopping (exit 3); they are named in the "
                "notes and recorded in run.json"})

    def __post_init__(self) -> None:
        # one spelling each (a tuple; the modes in full), checked in the order of the options
        object.__setattr__(self, "models", tuple(check_models(self.models)))
        object.__setattr__(self, "modes", parse_modes(self.modes))
        check_choice("split", self.split, get_args(Split), error=UsageError)
        if self.idioms is not None:
            idioms = [self.idioms] if isinstance(self.idioms, str) else self.idioms
            object.__setattr__(self, "idioms", tuple(idioms))
        if self.span_fallback not in SPAN_FALLBACKS:
            raise UsageError(f"span_fallback must be None or 'sentence', not "
                             f"{self.span_fallback!r}")
        check_parameters(self.k1, self.b)
        check_counts(self, {"n_boot": 0, "seed": 0, "batch_size": 1})
        check_correction(self.correction)


def run_dir(config: RetrievalConfig, results_dir: str | Path = "results") -> Path:
    """Where a run's results go by default: ``<results_dir>/idiolink-<split>-<models>``, the
    models joined by ``+``, each as a file name (:func:`ncprobe._io.safe_name`), e.g.
    ``results/idiolink-test-minilm+bm25``."""
    models = "+".join(safe_name(m) for m in config.models)
    return Path(results_dir) / f"idiolink-{config.split}-{models}"

