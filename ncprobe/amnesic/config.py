"""The run options of ``ncprobe run amnesic``: one dataclass, one field per option, each with
its default, its check and its help (the command's options are made from it)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..config import N_BOOT
from ..errors import UsageError
from ..probes.options import COMPARE_N_BOOT
from ..schema import CORRECTIONS
from .fit import FOLDS
from .forward import POSITION_LEVEL

#: Where the erasers apply: the stored vectors as read, or a transformer's forward pass.
WHERES = ("vectors", "forward")
#: Where in the sentence the forward pass is erased (:mod:`ncprobe.amnesic.forward`).
POSITIONS = tuple(POSITION_LEVEL)


@dataclass(frozen=True)
class AmnesicConfig:
    """One amnesic run: a model, the probe whose labels are the concept, the target probes,
    and the options of the erasers and of the statistics."""

    model: str = field(default="glove-6b-50d", metadata={
        "metavar": "M",
        "help": "the model whose vectors are erased: an alias (`ncprobe models`), a HuggingFace "
                "id, a model directory or a vector file (default glove-6b-50d)"})
    concept: str = field(default="astitch", metadata={
        "metavar": "PROBE",
        "help": "the probe whose own labels are the concept erased: astitch (idiomatic or "
                "literal use; few-shot training split, dev held out) or ncimp (each "
                "compound's compositionality class; folds by compound) (default astitch)"})
    targets: Sequence[str] = field(default=("ncimp", "astitch"), metadata={
        "option": "--targets", "metavar": "PROBE,...", "type": "comma_list",
        "help": "the probes measured plain, erased and control: ncimp, astitch, ncc (English "
                "only) (default ncimp,astitch)"})
    lang: str = field(default="en", metadata={
        "choices": ("en", "pt"), "help": "the language of the concept and the targets "
                                         "(default en)"})
    where: str = field(default="vectors", metadata={
        "choices": WHERES,
        "help": "where the erasers apply: vectors (the stored vectors, each view erased by its "
                "own eraser as it is read) or forward (a transformer's hidden state at "
                "--erase-layer erased in the forward pass, the pass continued, every later "
                "view pooled from it) (default vectors)"})
    erase_layer: int | None = field(default=None, metadata={
        "metavar": "L", "type": "count",
        "help": "--where forward: the layer whose hidden state is erased (0: the embeddings' "
                "output; l: block l's), with the eraser fitted on that layer's own view "
                "(required there; refused with --where vectors)"})
    positions: str | None = field(default=None, metadata={
        "choices": POSITIONS,
        "help": "--where forward: the tokens erased, span (the expression's, with the eraser "
                "of its span vectors; the default) or all (the sentence's, with the eraser of "
                "the sentence vectors) (refused with --where vectors)"})
    layers: str | None = field(default=None, metadata={
        "metavar": "SPEC",
        "help": "transformer layer views, the same for the concept and every target: last4 "
                "(default), all, -1, 9+10+11+12; with --where forward, the targets' views "
                "(default: the erased layer and each later one, e.g. 3,4,5,6: the erasure and "
                "the model's answer to it) and the concept is read at --erase-layer's view"})
    folds: int = field(default=FOLDS, metadata={
        "metavar": "K", "type": "positive_int",
        "help": "folds by group of a concept without held-out rows (ncimp: no compound is "
                "erased by an eraser fitted on itself) (default %(default)s)"})
    n_boot: int = field(default=N_BOOT, metadata={
        "metavar": "N", "type": "count",
        "help": "resamples of every interval, over each target's unit (default %(default)s)"})
    compare_n_boot: int = field(default=COMPARE_N_BOOT, metadata={
        "metavar": "N", "type": "count",
        "help": "resamples of the changes' paired intervals and tests, as ncprobe compare's "
                "(default %(default)s)"})
    seed: int = field(default=0, metadata={
        "metavar": "N", "type": "count",
        "help": "seed of the folds, the control labels and the resamples (default 0)"})
    correction: str = field(default="holm", metadata={
        "choices": CORRECTIONS,
        "help": "multiple-comparison correction of each target's erased-vs-control tests, "
                "over every cell of the target (default holm)"})
    accept_modified_data: bool = field(default=False, metadata={
        "help": "run on data files that differ from their pins (said in the results)"})

    def __post_init__(self) -> None:
        if not str(self.model).strip():
            raise UsageError("model='' (--model): give a model")
        targets = tuple(t.strip() for t in (self.targets.split(",") if isinstance(
            self.targets, str) else self.targets) if t.strip())
        if not targets:
            raise UsageError("no target probe given (--targets): e.g. ncimp,astitch")
        object.__setattr__(self, "targets", targets)
        if self.where not in WHERES:
            raise UsageError(f"where={self.where!r} (--where): the erasers apply in "
                             f"{', '.join(WHERES)}")
        if self.where == "forward" and self.erase_layer is None:
            raise UsageError("where='forward' (--where forward) needs the layer to erase "
                             "(--erase-layer L; 0: the embeddings' output)")
        if self.where == "vectors" and (self.erase_layer is not None
                                        or self.positions is not None):
            raise UsageError("erase_layer and positions (--erase-layer, --positions) have no "
                             "effect with where='vectors' (each view erased by its own eraser "
                             "as read): give --where forward to erase inside the pass")
        if self.positions is not None and self.positions not in POSITIONS:
            raise UsageError(f"positions={self.positions!r} (--positions): give one of "
                             f"{', '.join(POSITIONS)}")
        if self.folds < 2:
            raise UsageError(f"folds={self.folds} (--folds): give 2 or more")
        if self.correction not in CORRECTIONS:
            raise UsageError(f"correction={self.correction!r} (--correction): give one of "
                             f"{', '.join(CORRECTIONS)}")
