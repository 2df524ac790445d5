"""RunConfig: everything that defines one ``ncprobe compute`` run."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Literal, get_args

from .data.stimuli import expand_contexts

#: The choices of RunConfig's options, as types (an editor completes them); the values
#: checked at run time are taken from them (``typing.get_args``).
Lang = Literal["en", "pt"]
Level = Literal["sent", "nc"]
WordsSyn = Literal["first", "all"]
Gold = Literal["comp", "type"]
EnNaturalistic = Literal["auto", "official", "reference"]
Dtype = Literal["float32", "float16", "bfloat16"]

LEVELS: tuple[str, ...] = get_args(Level)
DEFAULT_MODEL = "glove-6b-50d"


@dataclass(frozen=True)
class RunConfig:
    """One run: model, data, pooling, statistics.

    Attributes:
        model: alias (``ncprobe models``), HuggingFace id, model directory or vector file.
        lang: ``en`` or ``pt``.
        contexts: ``nat``, ``neut``, ``neut-pl`` or a comma list (see
            :func:`ncprobe.data.stimuli.expand_contexts`).
        levels: ``sent`` and/or ``nc``; ``None``: every level the model provides.
        layers: layer views of transformer models (``None``: mean of the last four;
            ``all``; ``-1``; ``9+10+11+12``; comma lists for several views).
        device, dtype: where and in which precision the model runs (dtype ``float32``,
            ``float16`` or ``bfloat16``; the encoders also take ``fp32``, ``fp16``, ``half``,
            ``bf16``).
        batch_size: sentences per forward pass.
        standardise: also compute every measure on z-scored vectors (space ``standardised``).
        wordssyn: ``first`` (the paper's single P_WordsSyn) or ``all`` (every alternative).
        gold: ``comp`` (Eq. 1, token-level) or ``type`` (type-level score).
        per_sentence: also correlate sentence measures with each sentence's token-level score.
        n_boot, seed: bootstrap resamples and their seed (confidence intervals).
        top_k: rogue dimensions listed per condition.
        en_naturalistic: ``auto``, ``official`` or ``reference`` (see ``load_stimuli``).
        accept_modified_data: compute on NCIMP files whose git blob id differs from their
            pin (edited copies) instead of stopping; they are recorded in ``run.json``
            (``modified_data``) and named in the summary.
    """

    model: str = DEFAULT_MODEL
    lang: Lang = "en"
    contexts: str = "nat,neut"
    levels: tuple[Level, ...] | None = None
    layers: str | None = None
    device: str | None = None
    dtype: Dtype | None = None
    batch_size: int = 32
    standardise: bool = False
    wordssyn: WordsSyn = "first"
    gold: Gold = "comp"
    per_sentence: bool = False
    n_boot: int = 1000
    seed: int = 0
    top_k: int = 5
    en_naturalistic: EnNaturalistic = "auto"
    accept_modified_data: bool = False

    def __post_init__(self) -> None:
        expand_contexts(self.contexts)  # raises on an unknown context
        if self.levels is not None:
            if isinstance(self.levels, str):
                object.__setattr__(self, "levels", tuple(self.levels.split(",")))
            bad = [lv for lv in self.levels if lv not in LEVELS]
            if bad or not self.levels:
                raise ValueError(f"unknown level {bad or self.levels!r}; choose from sent, nc")
        if self.batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if self.n_boot < 0:
            raise ValueError("n_boot must be 0 (no intervals) or more")
        if self.wordssyn not in get_args(WordsSyn):
            raise ValueError("wordssyn must be 'first' or 'all'")
        if self.gold not in get_args(Gold):
            raise ValueError("gold must be 'comp' or 'type'")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["levels"] = list(self.levels) if self.levels else None
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        names = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        if kw.get("levels"):
            kw["levels"] = tuple(kw["levels"])
        return cls(**kw)
