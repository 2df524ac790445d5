"""RunConfig: everything that defines one ``ncprobe compute`` (``ncprobe run ncimp``) run,
NCIMP's config class (:mod:`ncprobe.config`: what makes a config class).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Iterable, TypeGuard

from ..config import (
    N_BOOT,
    device_field,
    dtype_field,
)
from ..data.stimuli import expand_contexts

# The languages, levels and the choices of RunConfig's options are the schema's vocabularies:
# their types (an editor completes them) and the values checked at run time (check_choice).
from ..schema import (
    CONTEXT_GROUPS,
    DTYPE_CHOICES,
    EN_NATURALISTIC_CHOICES,
    GOLD_CHOICES,
    LANGS,
    LEVELS,
    NCIMP_CONTEXTS,
    WORDSSYN_CHOICES,
    Dtype,
    EnNaturalistic,
    Gold,
    Lang,
    Level,
    WordsSyn,
    check_choice,
)

DEFAULT_MODEL = "glove-6b-50d"

def canonical_contexts(contexts: str | Iterable[str]) -> str:
    """The one spelling of a set of sentence contexts, whatever aliases, case, order or
    repeats name it: ``all`` for the five NCIMP contexts, else the context groups
    (:data:`~ncprobe.schema.CONTEXT_GROUPS`: ``nat``, ``neut``, ``neut-pl``, ``ncs``) whose
    contexts are all there, and the context ids of a group only partly there, comma-separated
    in the order of :data:`~ncprobe.schema.CONTEXTS`.

    >>> canonical_contexts("Neutral, naturalistic")
    'nat,neut'
    >>> canonical_contexts("S2,N,plural,S1")
    'S1,S2,neut,neut-pl'
    >>> canonical_contexts("nat,neut,neut-pl,ncs")
    'all,ncs'

    Raises:
        ValueError: an unknown context (:func:`~ncprobe.data.stimuli.expand_contexts`).
    """
    ids = expand_contexts(contexts)
    parts: list[str] = []
    if set(NCIMP_CONTEXTS) <= set(ids):
        parts.append("all")  # the alias of runs made before this spelling: their names kept
        ids = tuple(c for c in ids if c not in NCIMP_CONTEXTS)
    for group, members in CONTEXT_GROUPS.items():
        there = [c for c in members if c in ids]
        parts += [group] if there and len(there) == len(members) else there
    return ",".join(parts)


def is_lang(value: object) -> TypeGuard[Lang]:
    """Whether ``value`` is a language of the NCIMP data (one of :data:`LANGS`)."""
    return value in LANGS


def is_level(value: object) -> TypeGuard[Level]:
    """Whether ``value`` is a level of vectors (one of :data:`LEVELS`)."""
    return value in LEVELS


@dataclass(frozen=True)
class RunConfig:
    """One run: model, data, pooling, statistics.

    Attributes:
        model: alias (``ncprobe models``), HuggingFace id, model directory or vector file.
        lang: ``en`` or ``pt``.
        contexts: ``nat``, ``neut``, ``neut-pl``, ``ncs`` (the NCS dataset's neutral
            sentences, P_Rand generated: needs ``ncprobe[generate]``), ``all`` (the five
            NCIMP contexts) or a comma list (see :func:`ncprobe.data.stimuli.expand_contexts`);
            kept in one spelling per set of contexts (:func:`canonical_contexts`:
            ``naturalistic,neutral`` is ``nat,neut``, the same run, directory and run id).
        levels: ``sent`` and/or ``nc``; ``None``: every level the model provides.
        layers: layer views of transformer models (``None``: mean of the last four;
            ``all``; ``-1``; ``9+10+11+12``; comma lists for several views).
        device, dtype: where and in which precision the model runs (dtype ``float32``,
            ``float16`` or ``bfloat16``; the encoders also take ``fp32``, ``fp16``, ``half``,
            ``bf16``).
        batch_size: sentences per forward pass.
        batch_tokens: transformer models: a token budget per forward pass instead of a
            count; ``0``: a count; ``None``: automatic (see
            :func:`ncprobe.batches.token_budget`). Not part of the run's identity;
            recorded in ``run.json`` only when set.
        store_dtype: how vectors are kept in the embedding cache (and in memory):
            ``float32`` (exact, default), ``float16`` or ``bfloat16`` (half the disk and
            the reading; results move slightly: see the encoders guide). Part of the cache
            entry's fingerprint; recorded in ``run.json`` when it is not float32.
        standardise: also compute every measure on z-scored vectors (space ``standardised``).
        wordssyn: ``first`` (the paper's single P_WordsSyn) or ``all`` (every alternative).
        gold: ``comp`` (Eq. 1, token-level) or ``type`` (type-level score).
        per_sentence: also correlate sentence measures with each sentence's token-level score.
        n_boot, seed: bootstrap resamples and their seed (confidence intervals); both >= 0.
        top_k: rogue dimensions listed per condition (>= 0).
        en_naturalistic: ``auto``, ``official`` or ``reference`` (see ``load_stimuli``).
        accept_modified_data: compute on NCIMP files whose git blob id differs from their
            pin (edited copies) instead of stopping; they are recorded in ``run.json``
            (``modified_data``) and named in the summary.

    Each field is also an option of ``ncprobe compute`` (``--batch-size`` for ``batch_size``),
    built from the field by :func:`ncprobe.cli.config_options`: its default, its type (a
    ``Literal`` gives the choices) and its metadata: ``help`` (``%(default)s`` stands for
    the default), and where the option differs from the field's name, ``option`` and
    ``metavar``. A new field is a new option.
    """

    model: str = field(default=DEFAULT_MODEL, metadata={
        "help": "alias (see `ncprobe models`), HuggingFace id, model directory or vector file "
                "(default: %(default)s, offline)"})
    lang: Lang = field(default="en", metadata={"help": "language (default: %(default)s)"})
    contexts: str = field(default="nat,neut", metadata={
        "option": "--context", "metavar": "C",
        "help": "nat, neut, neut-pl, ncs (the NCS dataset's neutral sentences, P_Rand "
                "generated: needs ncprobe[generate]), all (= nat,neut,neut-pl) or a comma "
                "list (default: %(default)s); aliases (naturalistic, neutral), order and case "
                "name the same run"})
    levels: tuple[Level, ...] | None = field(default=None, metadata={
        "option": "--level", "metavar": "L",
        "help": "sent, nc or sent,nc (default: every level the model gives)"})
    layers: str | None = field(default=None, metadata={
        "metavar": "SPEC",
        "help": "transformer layers: last4 (default), all, -1, 9+10+11+12, or comma lists of "
                "views"})
    device: str | None = device_field()
    dtype: Dtype | None = dtype_field()
    batch_size: int = field(default=32, metadata={
        "help": "sentences per forward pass (default %(default)s)"})
    batch_tokens: int | None = field(default=None, metadata={
        "metavar": "N",
        "help": "transformer models: instead of --batch-size sentences, as many per forward "
                "pass as keep sentences x the longest one's sub-word tokens within N; 0: "
                "--batch-size sentences; default: automatic (on a CUDA GPU, a budget from the "
                "model's memory per token; elsewhere --batch-size sentences)"})
    store_dtype: Dtype = field(default="float32", metadata={
        "help": "how vectors are kept in the embedding cache: float32 (default, exact), "
                "float16 or bfloat16 (half the disk; results move slightly)"})
    standardise: bool = field(default=False, metadata={
        "help": "also compute every measure on z-scored vectors (rogue dimensions)"})
    wordssyn: WordsSyn = field(default="first", metadata={
        "help": "P_WordsSyn: the paper's single substitution (first) or every alternative (all)"})
    gold: Gold = field(default="comp", metadata={
        "help": "gold score: comp (Eq. 1, token-level, default) or type"})
    per_sentence: bool = field(default=False, metadata={
        "help": "also correlate sentence measures with each sentence's token score"})
    n_boot: int = field(default=N_BOOT, metadata={
        "help": "bootstrap resamples for confidence intervals (default %(default)s; 0: none)"})
    seed: int = field(default=0, metadata={"help": "bootstrap seed (default %(default)s)"})
    top_k: int = field(default=5, metadata={
        "help": "rogue dimensions listed per condition (default %(default)s)"})
    en_naturalistic: EnNaturalistic = field(default="auto", metadata={
        "help": "English naturalistic contexts: the official files when present, else the "
                "reference table (auto, default), the official files or an error (official), "
                "or the reference table (reference)"})
    accept_modified_data: bool = field(default=False, metadata={
        "help": "compute on NCIMP files that differ from their pinned upstream copy (edited on "
                "purpose) instead of stopping (exit 3); they are named in the summary and "
                "recorded in run.json"})

    def __post_init__(self) -> None:
        # one spelling per set of contexts (raises on an unknown one): the run's directory
        # name and run id depend on what is computed, not on how it was asked for
        object.__setattr__(self, "contexts", canonical_contexts(self.contexts))
        if self.levels is not None:
            if isinstance(self.levels, str):
                object.__setattr__(self, "levels", tuple(self.levels.split(",")))
            bad = [lv for lv in self.levels if lv not in LEVELS]
            if bad or not self.levels:
                raise ValueError(f"unknown level {bad or self.levels!r}; choose from sent, nc")
        if self.batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if self.batch_tokens is not None and self.batch_tokens < 0:
            raise ValueError("batch_tokens must be 0 (batches of batch_size) or more")
        if self.n_boot < 0:
            raise ValueError("n_boot must be 0 (no intervals) or more")
        if self.seed < 0:  # numpy's generators take no negative seed
            raise ValueError("seed must be a whole number >= 0")
        if self.top_k < 0:
            raise ValueError("top_k must be 0 (no rogue dimensions listed) or more")
        check_choice("store_dtype", self.store_dtype, DTYPE_CHOICES)
        check_choice("wordssyn", self.wordssyn, WORDSSYN_CHOICES)
        check_choice("gold", self.gold, GOLD_CHOICES)
        check_choice("en_naturalistic", self.en_naturalistic, EN_NATURALISTIC_CHOICES)

    def to_dict(self) -> dict:
        """The fields as a dict (``run.json``'s ``config``); the fields of
        :data:`OMITTED_AT_DEFAULT` only when they differ from their default."""
        d = asdict(self)
        d["levels"] = list(self.levels) if self.levels else None
        for name in OMITTED_AT_DEFAULT:
            if d[name] == _FIELDS[name].default:
                del d[name]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "RunConfig":
        names = {f.name for f in fields(cls)}
        kw = {k: v for k, v in d.items() if k in names}
        if kw.get("levels"):
            kw["levels"] = tuple(kw["levels"])
        return cls(**kw)


_FIELDS = {f.name: f for f in fields(RunConfig)}
#: Fields added after results existed, left out of :meth:`RunConfig.to_dict` at their
#: default: a run that does not use them keeps the ``run.json`` and run id it had before
#: (a missing field reads as its default everywhere: ``from_dict``, run identity).
OMITTED_AT_DEFAULT = ("store_dtype", "batch_tokens")


