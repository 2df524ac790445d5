"""What a local causal language model *says*: SemanticQA's NCC items answered zero-shot.

The protocol's rule ("Beyond the paper"): each item's zero-shot prompt (the published template,
its ``{{context}}`` and ``{{noun compound}}`` filled as SemanticQA's code fills them) is given
to the model as plain text, with no chat template, and the answer is the option whose letter
has the highest next-token log-probability after the prompt. Stated in full:

* **The prompt.** The template's text exactly as the file holds it (its final newline
  included: SemanticQA reads it with ``f.read()``), ``{{context}}`` replaced by the item's
  sentence, a newline and ``Options: A: <text>\\tB: <text>\\tC: <text>\\tD: <text>`` (the
  option texts ``Non-compositional``, ``Partly compositional``, ``Compositional``, ``None of
  the above`` in the item's order), and ``{{noun compound}}`` by the compound. It is
  tokenised as the tokenizer encodes a text for the model: its BOS token first when it adds
  one; a token it appends after the text (an EOS) is dropped, as the letter follows the
  text, not an end of sequence.
* **The letter tokens** (:func:`letter_rule`). A form of the letters, ``"A".."D"`` or
  ``" A".." D"`` (with a leading space), qualifies when, after every prompt, each letter adds
  exactly one token to the prompt's tokens (the prompt's own tokens unchanged), the same one
  after every prompt, and the four tokens are distinct and none is the unknown token. The
  form that follows the prompt as text would is tried first: the bare letter after a prompt
  ending in whitespace (the template ends with a newline), the spaced letter otherwise; the
  other form is the fallback. A tokenizer for which neither qualifies cannot answer by letter
  probability: :class:`~ncprobe.errors.ModelUnavailableError`.
* **The answer.** ``log_softmax`` of the logits at the prompt's last token, over the whole
  vocabulary, in float32; the four letters' values are kept; the answer is the letter with
  the highest (a tie goes to the first in A..D order), and its class is the item's option.
* **Batches.** Prompts are padded on the left with an attention mask (position ids from the
  mask where the model takes them), so the last position is every prompt's last token;
  batched log-probabilities equal unbatched ones to float rounding (the tests check 1e-5).

Which models: any causal LM ncprobe loads (:func:`ncprobe.encoders.load_encoder` resolves
the name: an alias, a hub id, a directory), loaded with ``AutoModelForCausalLM`` (never
``trust_remote_code``). An encoder (BERT), a sentence-transformers, static, ELMo or API model,
a decoder saved without its language-model head and a tokenizer without single letter tokens
are refused with :class:`~ncprobe.errors.ModelUnavailableError` (exit 5), naming the model
and what to use instead.

The cache: ``<cache root>/behaviour/<model>-<16 hex>.json`` (:func:`ncprobe._io.cache_root`,
beside the embedding cache's entries), one file per model fingerprint (its weights and dtype),
prompt template (SHA-256) and letter rule, holding per item id the SHA-256 of the item's
prompt and the four log-probabilities. Written atomically, with a SHA-256 of its content that
is checked when read: a file that does not verify (damaged, edited, cut short) is warned
about (:class:`BehaviourCacheWarning`) and its answers computed again, never trusted; an item
whose prompt changed is computed again. A rerun whose answers are all cached loads the
tokenizer only, never the weights.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import math
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Protocol, Sequence

import numpy as np

from .._io import (
    atomic_write_text,
    cache_root,
    check_can_write,
    json_sha256,
    output_error,
    safe_name,
)
from ..errors import DataError, ModelUnavailableError, UsageError

log = logging.getLogger(__name__)

#: The option letters, in order.
LETTERS: tuple[str, ...] = ("A", "B", "C", "D")

#: The option text of each answer class, as SemanticQA's items write them.
OPTION_TEXT: dict[str, str] = {"NC": "Non-compositional", "PC": "Partly compositional",
                               "C": "Compositional", "none": "None of the above"}

#: The placeholders of the zero-shot template that each prompt fills.
CONTEXT_SLOT, NC_SLOT = "{{context}}", "{{noun compound}}"

#: The subfolder of the cache root that holds the answers.
CACHE_FOLDER = "behaviour"

#: The version of the cache files' layout (a file of another format is computed again).
FORMAT = 1

#: The rule, in words: recorded with the answers (run.json) so that a reader knows how the
#: model was asked.
SCORING = ("zero-shot; the published template filled as SemanticQA fills it, as plain text "
           "(no chat template), tokenised with the tokenizer's own special tokens before it; "
           "answer = argmax over the option letters of the next-token log-probability "
           "(log_softmax over the whole vocabulary at the prompt's last token, float32); "
           "ties to the first letter A..D")


class BehaviourCacheWarning(UserWarning):
    """A cached file of answers did not verify (damaged, edited, cut short): its answers are
    computed again."""


class ItemLike(Protocol):
    """What :func:`answer_items` reads of an item (``ncprobe.data.semanticqa``'s items).

    ``options`` maps each letter A-D to its class (``NC``, ``PC``, ``C``, ``none``). An item
    may also carry ``context``, the item file's field (the sentence, then the options line):
    it is then the prompt's context, and its options line must agree with ``options``.
    """

    id: str
    nc: str
    sentence: str
    options: Mapping[str, str]


# --- prompts -----------------------------------------------------------------------------------

def options_line(options: Mapping[str, str], item_id: str = "?") -> str:
    """``Options: A: <text>\\tB: <text>\\tC: <text>\\tD: <text>``, as SemanticQA writes it.

    Raises:
        DataError: the options are not the letters A-D, each a class of :data:`OPTION_TEXT`.
    """
    if sorted(options) != list(LETTERS) or any(options[k] not in OPTION_TEXT for k in LETTERS):
        raise DataError(f"item {item_id}: options {dict(options)!r} are not the letters A-D "
                        f"each mapped to one of {', '.join(OPTION_TEXT)}")
    return "Options: " + "\t".join(f"{k}: {OPTION_TEXT[options[k]]}" for k in LETTERS)


def item_context(item: ItemLike) -> str:
    """The prompt's ``{{context}}`` of an item: its ``context`` when it has one (checked
    against its options), else its sentence, a newline and :func:`options_line`.

    Raises:
        DataError: bad options, or a ``context`` whose options line disagrees with them.
    """
    line = options_line(item.options, str(item.id))
    given = getattr(item, "context", None)
    if isinstance(given, str):
        if not given.endswith("\n" + line):
            raise DataError(f"item {item.id}: its context's options line does not match its "
                            f"options {dict(item.options)!r} (expected it to end with "
                            f"{line!r}): the answers would be mapped to the wrong classes")
        return given
    return f"{item.sentence}\n{line}"


def fill_prompt(template: str, item: ItemLike) -> str:
    """An item's prompt: ``template`` with ``{{context}}`` and then ``{{noun compound}}``
    replaced (every occurrence), as SemanticQA's ``construct_prompt`` does.

    Raises:
        UsageError: the template lacks a placeholder.
    """
    for slot in (CONTEXT_SLOT, NC_SLOT):
        if slot not in template:
            raise UsageError(f"the zero-shot prompt template has no {slot} placeholder: pass "
                             "SemanticQA's noun_compound_compositionality_zeroshot.txt")
    return template.replace(CONTEXT_SLOT, item_context(item)).replace(NC_SLOT, item.nc)


# --- the letter tokens ---------------------------------------------------------------------------

@dataclass(frozen=True)
class LetterRule:
    """Which token stands for each option letter (see :func:`letter_rule`).

    Attributes:
        form: the text of letter A in the chosen form: ``"A"`` (bare) or ``" A"`` (spaced).
        token_ids: the token id of A, B, C, D.
        tokens: the tokenizer's pieces for them (``"A"``, ``"ĠA"``, ``"▁A"`` ...).
    """

    form: str
    token_ids: tuple[int, ...]
    tokens: tuple[str, ...]

    def record(self) -> dict:
        """The rule as JSON (cache files, run.json)."""
        return {"form": self.form, "token_ids": list(self.token_ids),
                "tokens": list(self.tokens)}

    def describe(self) -> str:
        """One line: e.g. ``letters "A".."D" (tokens 'A' 'B' 'C' 'D', ids 37 38 39 40)``."""
        pieces = " ".join(repr(t) for t in self.tokens)
        ids = " ".join(str(i) for i in self.token_ids)
        return (f'letters "{self.form}".."{self.form.replace("A", "D")}" (tokens {pieces}, '
                f"ids {ids})")


def _plain_ids(tokenizer, texts: Sequence[str]) -> list[list[int]]:
    return [list(ids) for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"]]


def _form_verdict(tokenizer, prompts: Sequence[str], plain: list[list[int]], form: str
                  ) -> tuple[LetterRule | None, str]:
    """The rule for one form of the letters, or ``(None, why it does not qualify)``."""
    ids: list[int] = []
    for letter in LETTERS:
        text = form.replace("A", letter)
        found: set[int] = set()
        extended = _plain_ids(tokenizer, [p + text for p in prompts])
        for base, ext in zip(plain, extended, strict=True):
            if len(ext) != len(base) + 1 or ext[:len(base)] != base:
                added = tokenizer.convert_ids_to_tokens(ext[len(base):]) \
                    if ext[:len(base)] == base else "a different tokenisation of the prompt"
                return None, f"{text!r} after the prompt is {added}, not one token"
            found.add(ext[-1])
        if len(found) != 1:
            return None, f"{text!r} is a different token after different prompts"
        ids.append(found.pop())
    unk = getattr(tokenizer, "unk_token_id", None)
    tokens = tuple(tokenizer.convert_ids_to_tokens(ids))
    if unk is not None and unk in ids:
        return None, f"{form!r}..: the tokenizer does not know them (unknown token {tokens})"
    if len(set(ids)) != len(ids):
        return None, f"{form!r}..: the four letters are not four different tokens {tokens}"
    return LetterRule(form, tuple(int(i) for i in ids), tokens), ""


def letter_rule(tokenizer, prompts: Sequence[str], model: str = "the model") -> LetterRule:
    """The token of each option letter after the prompts (the rule: module docstring).

    Args:
        tokenizer: a transformers tokenizer.
        prompts: the filled prompts (all of them: the rule must hold after every one).
        model: the model, as named in the error.

    Raises:
        ModelUnavailableError: neither form of the letters is one token each.
    """
    if not prompts:
        raise UsageError("no prompt to decide the letter tokens on")
    bare_first = all(p[-1:].isspace() for p in prompts)
    forms = ("A", " A") if bare_first else (" A", "A")
    plain = _plain_ids(tokenizer, prompts)
    why = []
    for form in forms:
        rule, reason = _form_verdict(tokenizer, prompts, plain, form)
        if rule is not None:
            return rule
        why.append(reason)
    raise ModelUnavailableError(
        f"{model} cannot answer the items by letter probability: its tokenizer has no single "
        f"token for each option letter after the prompt ({'; '.join(why)}). Use a causal "
        "language model whose tokenizer writes each of A, B, C, D as one token (LLaMA, "
        "Mistral, Qwen, GPT-2 families)")


# --- the answers -------------------------------------------------------------------------------

@dataclass(frozen=True)
class BehaviourAnswer:
    """One item's answer.

    Attributes:
        item: the item id.
        letter: the letter with the highest log-probability.
        predicted: its class (the item's ``options[letter]``: NC, PC, C or none).
        logprobs: the next-token log-probability of each letter, A..D (natural log).
    """

    item: str
    letter: str
    predicted: str
    logprobs: dict[str, float]


@dataclass
class BehaviourAnswers:
    """A model's answers to the items, in the items' order.

    Attributes:
        model: the model as named (``--model``).
        fingerprint: what identifies its weights: ``model``, ``revision`` (a hub commit, or
            the SHA-256 of a directory's files) and ``dtype``.
        rule: the letter tokens (:class:`LetterRule`).
        template_sha256: SHA-256 of the prompt template.
        answers: one :class:`BehaviourAnswer` per item.
        computed: how many were computed now (the others came from the cache).
        cache_file: the cache file read and written (``None`` without the cache).
        device: where the model ran (``None`` when nothing was computed).
    """

    model: str
    fingerprint: dict
    rule: LetterRule
    template_sha256: str
    answers: list[BehaviourAnswer]
    computed: int
    cache_file: Path | None = None
    device: str | None = None
    _by_item: dict[str, BehaviourAnswer] = field(default_factory=dict, init=False,
                                                 repr=False, compare=False)

    def __post_init__(self) -> None:
        self._by_item = {a.item: a for a in self.answers}

    @property
    def classes(self) -> dict[str, str]:
        """Item id -> the class answered (NC, PC, C or none)."""
        return {a.item: a.predicted for a in self.answers}

    @property
    def letters(self) -> dict[str, str]:
        """Item id -> the letter answered."""
        return {a.item: a.letter for a in self.answers}

    def __getitem__(self, item_id: str) -> BehaviourAnswer:
        return self._by_item[item_id]

    def __len__(self) -> int:
        return len(self.answers)

    def logprob_matrix(self) -> np.ndarray:
        """``(items, 4)`` float64: the letters' log-probabilities, rows in the items' order."""
        return np.array([[a.logprobs[k] for k in LETTERS] for a in self.answers], dtype=float)

    def record(self) -> dict:
        """What a results directory records of how the model answered: the model, its
        fingerprint, the template's hash, the letter rule and the scoring rule. No counts,
        times or device: a rerun from the cache records the same."""
        return {"model": self.model, "fingerprint": self.fingerprint,
                "template_sha256": self.template_sha256, "letters": self.rule.record(),
                "scoring": SCORING}


# --- the cache ---------------------------------------------------------------------------------

def _text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _header(fingerprint: dict, template_sha256: str, rule: LetterRule) -> dict:
    return {"format": FORMAT, "fingerprint": fingerprint, "template_sha256": template_sha256,
            "letters": rule.record(), "scoring": SCORING}


def cache_file(root: Path, header: dict) -> Path:
    """The cache file of one header (model fingerprint, template, letter rule)."""
    name = safe_name(str(header["fingerprint"].get("model", "model")))[-60:]
    return root / f"{name}-{json_sha256(header)[:16]}.json"


def _valid_logprobs(value: Any) -> bool:
    return (isinstance(value, list) and len(value) == len(LETTERS)
            and all(isinstance(v, float) and math.isfinite(v) and v <= 0.0 for v in value))


def read_cache(path: Path, header: dict) -> dict[str, dict]:
    """The answers a cache file holds (item id -> ``{"prompt_sha256", "logprobs"}``), or
    ``{}`` when there is none. A file that does not verify (not JSON, a checksum that does not
    match its content, another header, a malformed answer) is warned about
    (:class:`BehaviourCacheWarning`) and nothing of it is used."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as e:
        warnings.warn(f"{path}: the cached answers cannot be read ({e.strerror or e}); they "
                      "are computed again", BehaviourCacheWarning, stacklevel=3)
        return {}
    why = _cache_problem(raw, header)
    if why:
        warnings.warn(f"{path}: the cached answers {why}; they are not trusted and are computed "
                      "again (the file is rewritten)", BehaviourCacheWarning, stacklevel=3)
        return {}
    return json.loads(raw)["answers"]


def _cache_problem(raw: bytes, header: dict) -> str | None:
    """Why a cache file's bytes cannot be trusted, else None."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        return f"are no JSON ({e})"
    if not isinstance(doc, dict) or not isinstance(doc.get("answers"), dict):
        return "have no answers object"
    body = {k: v for k, v in doc.items() if k != "sha256"}
    if doc.get("sha256") != json_sha256(body):
        return "do not match their checksum (edited or damaged)"
    if {k: doc.get(k) for k in header} != header:
        return "belong to another model, template or letter rule"
    for item, got in doc["answers"].items():
        if not (isinstance(got, dict) and isinstance(got.get("prompt_sha256"), str)
                and _valid_logprobs(got.get("logprobs"))):
            return f"hold a malformed answer for item {item!r}"
    return None


def write_cache(path: Path, header: dict, answers: Mapping[str, dict]) -> None:
    """Write the answers atomically, with the checksum :func:`read_cache` verifies.

    Raises:
        OutputError: the file cannot be written (exit 6).
    """
    body = {**header, "answers": {k: answers[k] for k in sorted(answers)}}
    text = json.dumps({**body, "sha256": json_sha256(body)}, sort_keys=True, indent=1)
    try:
        atomic_write_text(path, text + "\n")
    except OSError as e:
        raise output_error(e, path, what="cache of the model's answers",
                           todo="choose another --cache-dir, or --no-cache") from e


# --- the model ---------------------------------------------------------------------------------

def causal_encoder(model: str, device: str | None, dtype: str | None):
    """The HF encoder of ``model`` (its config read, its weights not loaded), or the refusal
    of a model that has no language-model head."""
    from ..encoders.hf import HFEncoder
    from ..encoders.registry import load_encoder, resolve_target

    target = resolve_target(model, "en", allow_pickle=False, allow_gensim=False)
    if target.cls is not HFEncoder:
        kind = {"StaticEncoder": "a static word-vector model",
                "SBertEncoder": "a sentence-transformers model",
                "ElmoEncoder": "an ELMo model",
                "OpenAIEncoder": "an embedding API"}.get(target.cls.__name__, "not a causal LM")
        raise ModelUnavailableError(_no_head(model, kind))
    # one view of the last layer: valid for a model of any depth (the view is not used here)
    enc = load_encoder(model, "en", layers=[-1], device=device, dtype=dtype)
    if not enc.causal:
        raise ModelUnavailableError(_no_head(model, "an encoder without a language-model "
                                             "head (its config names no causal-LM class, "
                                             "such as *ForCausalLM or GPT2LMHeadModel)"))
    return enc


def _no_head(model: str, kind: str) -> str:
    return (f"{model} cannot answer the items: it is {kind}, and answering needs a causal "
            "language model's next-token probabilities. Pass a causal LM (a LLaMA, Mistral, "
            "Qwen or GPT-2 model: a hub id or a directory saved with its language-model "
            "head, e.g. LlamaForCausalLM or GPT2LMHeadModel), "
            "or leave out --behaviour")


def _hub_revision(enc) -> str | None:
    """The revision to load: the one asked, else the hub commit the fingerprint names (so
    that the weights loaded are the fingerprinted ones); a directory has none."""
    if enc.revision:
        return enc.revision
    rev = str(enc.fingerprint().get("revision", ""))
    return rev if re.fullmatch(r"[0-9a-f]{40}", rev) else None


def _load_tokenizer(enc):
    try:
        from transformers import AutoTokenizer
    except ImportError as e:  # pragma: no cover - load_encoder checked the packages
        raise ModelUnavailableError(f"{enc.name} needs transformers ({e})") from e
    rev = _hub_revision(enc)
    kw = {"revision": rev} if rev else {}
    try:
        return AutoTokenizer.from_pretrained(enc.model_id, **kw)
    except (OSError, ValueError) as e:
        raise ModelUnavailableError(f"could not load the tokenizer of {enc.name!r}: {e}") from e


def _load_lm(enc):
    """The model with its language-model head, in the encoder's dtype, on its device, in
    eval mode.

    Raises:
        ModelUnavailableError: no causal-LM class for its config, weights missing from its
            files (a head that would be random), or weights that cannot be read.
    """
    import torch
    from transformers import AutoModelForCausalLM

    # the loader transformers' own "Loading weights" bar is kept off with (ncprobe's own
    # progress is on stderr): the encoders' helper, as HFEncoder loads
    from ..encoders.hf import unreadable_weight_errors, weights_refused, without_loading_bars

    rev = _hub_revision(enc)
    kw = {"revision": rev} if rev else {}
    device = enc.device  # checks an asked device before the weights load
    try:
        # (model, loading info) with output_loading_info, which transformers' types miss
        loaded: Any = without_loading_bars(AutoModelForCausalLM.from_pretrained)(
            enc.model_id, dtype=getattr(torch, enc.dtype), output_loading_info=True, **kw)
    except ValueError as e:  # "Unrecognized configuration class ... for AutoModelForCausalLM"
        raise ModelUnavailableError(_no_head(enc.name, f"a model without a causal-LM class "
                                             f"in transformers ({str(e)[:200]})")) from e
    except OSError as e:
        raise ModelUnavailableError(f"could not load {enc.name!r}: {e}") from e
    except unreadable_weight_errors() as e:
        if type(e).__name__ == "OutOfMemoryError":
            raise
        raise weights_refused(enc.model_id, None, e) from e
    lm, info = loaded
    missing = list(info.get("missing_keys") or [])
    if missing:
        shown = ", ".join(sorted(missing)[:5]) + (" ..." if len(missing) > 5 else "")
        raise ModelUnavailableError(_no_head(
            enc.name, f"a model whose files lack weights the causal LM needs ({shown}: they "
            "would be random)"))
    lm.to(device)
    lm.eval()
    return lm, device


def _model_inputs(tokenizer, prompts: Sequence[str], plain: list[list[int]],
                  limit: int, ids_of: Sequence[str]) -> list[list[int]]:
    """Each prompt's token ids as the model gets them: the tokenizer's special tokens before
    the text, none after it (see the module docstring)."""
    full = [list(x) for x in tokenizer(list(prompts), add_special_tokens=True)["input_ids"]]
    out = []
    for item, ids, text in zip(ids_of, full, plain, strict=True):
        start = next((k for k in range(len(ids) - len(text), -1, -1)
                      if ids[k:k + len(text)] == text), None)
        if start is None:  # pragma: no cover - a tokenizer that changes the text's tokens
            raise ModelUnavailableError(f"item {item}: the tokenizer encodes the prompt "
                                        "differently with its special tokens")
        ids = ids[:start + len(text)]
        if len(ids) > limit:
            raise UsageError(f"item {item}: its prompt is {len(ids)} tokens, more than the "
                             f"model takes ({limit}); use a model with a longer context")
        out.append(ids)
    return out


def _accepts(lm, name: str) -> bool:
    try:
        return name in inspect.signature(lm.forward).parameters
    except (TypeError, ValueError):  # pragma: no cover - an unusual forward
        return False


def compound_tokens(tokenizer, prompts: Sequence[str], inputs: Sequence[list[int]],
                    compounds: Sequence[str]) -> list[list[bool]]:
    """Per prompt, per token of its model input (:func:`_model_inputs`): whether the token
    covers characters of an occurrence of the item's compound in the prompt (its sentence and
    the template's ``{{noun compound}}``); special tokens never do. The positions an
    intervention at ``span`` acts on.

    Raises:
        DataError: a prompt in which its compound does not occur.
    """
    got = tokenizer(list(prompts), add_special_tokens=True, return_offsets_mapping=True)
    out = []
    for prompt, ids, offsets, nc in zip(prompts, inputs, got["offset_mapping"], compounds,
                                        strict=True):
        spans = [(m.start(), m.end()) for m in re.finditer(re.escape(nc), prompt)]
        if not spans:
            raise DataError(f"the compound {nc!r} does not occur in its prompt: no token to "
                            "intervene on")
        out.append([e > b and any(b < s1 and e > s0 for s0, s1 in spans)
                    for b, e in list(offsets)[:len(ids)]])
    return out


def _letter_logprobs(lm, device, batches: Sequence[list[list[int]]], pad_id: int,
                     letter_ids: Sequence[int], bar=None, intervention: Any = None,
                     marks: Sequence[list[list[bool]]] | None = None) -> list[np.ndarray]:
    """The four letters' log-probabilities after each prompt, batch by batch (left padded);
    with ``intervention``, applied in each pass at the tokens ``marks`` flags (per batch, per
    prompt, per token; ``None``: every token of the prompt)."""
    import contextlib

    import torch

    from ..encoders._intervene import intervening

    positions, keep = _accepts(lm, "position_ids"), _accepts(lm, "logits_to_keep")
    index = torch.tensor(list(letter_ids), device=device)
    out: list[np.ndarray] = []
    for b, batch in enumerate(batches):
        width = max(len(ids) for ids in batch)
        input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        acted = torch.zeros((len(batch), width), dtype=torch.bool)
        for r, ids in enumerate(batch):
            input_ids[r, width - len(ids):] = torch.tensor(ids, dtype=torch.long)
            mask[r, width - len(ids):] = 1
            acted[r, width - len(ids):] = (torch.tensor(marks[b][r], dtype=torch.bool)
                                           if marks is not None else True)
        kw: dict[str, Any] = {"input_ids": input_ids.to(device), "attention_mask": mask.to(device)}
        if positions:  # the real tokens at 0.., as without padding (absolute positions)
            kw["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0).to(device)
        if keep:  # only the last position's logits: a large vocabulary x every position
            kw["logits_to_keep"] = 1
        hooks = (contextlib.nullcontext() if intervention is None else
                 intervening(lm, int(lm.config.num_hidden_layers), intervention,
                             acted.to(device)))
        with torch.inference_mode(), hooks:
            logits = lm(**kw).logits[:, -1, :].float()
            lp = torch.log_softmax(logits, dim=-1).index_select(-1, index)
        out.extend(lp.cpu().numpy().astype(np.float64))
        if bar is not None:
            bar.update(len(batch))
    return out


def _answer(item: ItemLike, logprobs: Sequence[float]) -> BehaviourAnswer:
    k = int(np.argmax(np.asarray(logprobs, dtype=float)))  # first maximum: ties to A..D order
    return BehaviourAnswer(str(item.id), LETTERS[k], item.options[LETTERS[k]],
                           {L: float(v) for L, v in zip(LETTERS, logprobs, strict=True)})


# --- the entry point -----------------------------------------------------------------------------

def answer_items(model: str | os.PathLike, items: Sequence[ItemLike], prompt: str, *,
                 device: str | None = None, dtype: str | None = None, batch_size: int = 8,
                 cache_dir: str | os.PathLike | None = None, use_cache: bool = True,
                 progress: bool = False, intervention: Any = None) -> BehaviourAnswers:
    """A local causal LM's zero-shot answer to each item (the rule: module docstring).

    Args:
        model: an alias, a hub id or a model directory (as ``--model``): a causal LM.
        items: the items (:class:`ItemLike`), ids unique.
        prompt: the zero-shot template, with ``{{context}}`` and ``{{noun compound}}``.
        device, dtype: as the transformer encoders take them (default: cuda when visible,
            float32).
        batch_size: prompts per forward pass.
        cache_dir: the cache root (default :func:`ncprobe._io.cache_root`); the answers live
            in its ``behaviour/`` folder.
        use_cache: read and write the cached answers.
        progress: a progress bar on stderr (tqdm) while answers are computed.
        intervention: applied in every forward pass (an
            :class:`~ncprobe.encoders._intervene.Intervention`, e.g. a concept's eraser at a
            layer: :class:`ncprobe.amnesic.forward.ForwardErasure`'s): at the tokens of the
            item's compound (``span``: every occurrence in the prompt) or every token
            (``all``); its answers are cached apart from the plain model's (the header names
            its fingerprint).

    Returns:
        :class:`BehaviourAnswers`, in the items' order, with how many were computed now.

    Raises:
        ModelUnavailableError: a model that cannot answer (no language-model head, no
            single token per letter) or cannot load here (exit 5).
        UsageError: an unknown model, a bad option, a template without its placeholders, a
            prompt longer than the model takes (exit 2).
        DataError: an item with bad options or duplicate ids (exit 3).
        OutputError: the cache cannot be written (exit 6).
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise UsageError(f"--batch-size {batch_size!r}: give a whole number >= 1")
    name = os.fspath(model)
    if not items:
        raise UsageError(f"{name}: no item to answer")
    ids = [str(it.id) for it in items]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise DataError(f"item id(s) {', '.join(dup)} given more than once")
    prompts = [fill_prompt(prompt, it) for it in items]
    enc = causal_encoder(name, device, dtype)
    fp = enc.fingerprint()
    fingerprint = {"model": fp["model"], "revision": fp["revision"], "dtype": fp["dtype"]}
    template_sha = _text_sha256(prompt)
    tokenizer = _load_tokenizer(enc)
    rule = letter_rule(tokenizer, prompts, name)
    header = _header(fingerprint, template_sha, rule)
    if intervention is not None:
        from ..encoders._intervene import check_intervention

        check_intervention(intervention, enc.n_layers, name)
        header["intervention"] = intervention.fingerprint
    path = cache_file(cache_root(cache_dir) / CACHE_FOLDER, header) if use_cache else None
    stored = read_cache(path, header) if path is not None else {}
    keys = [_text_sha256(p) for p in prompts]
    todo = [k for k, (i, key) in enumerate(zip(ids, keys, strict=True))
            if stored.get(i, {}).get("prompt_sha256") != key]
    ran_on = None
    if todo:
        if path is not None:  # a cache that cannot be written: said before the model runs
            check_can_write(path.parent, target=path, what="cache of the model's answers",
                            todo="choose another --cache-dir, or --no-cache")
        got = _compute(enc, tokenizer, [prompts[k] for k in todo], [ids[k] for k in todo],
                       rule, batch_size, progress, intervention,
                       [items[k].nc for k in todo])
        ran_on = str(enc.device)
        for k, lp in zip(todo, got, strict=True):
            stored[ids[k]] = {"prompt_sha256": keys[k], "logprobs": [float(v) for v in lp]}
        if path is not None:
            write_cache(path, header, stored)
    log.info("%s: %d of %d answers computed now, the others cached", name, len(todo),
             len(items))
    answers = [_answer(it, stored[i]["logprobs"]) for it, i in zip(items, ids, strict=True)]
    return BehaviourAnswers(name, fingerprint, rule, template_sha, answers, len(todo),
                            cache_file=path, device=ran_on)


def _compute(enc, tokenizer, prompts: list[str], ids: list[str], rule: LetterRule,
             batch_size: int, progress: bool, intervention: Any = None,
             compounds: Sequence[str] = ()) -> list[np.ndarray]:
    """The letters' log-probabilities of ``prompts`` (in their order), with
    ``intervention`` in the passes where given (at its positions: ``compounds``' tokens)."""
    lm, device = _load_lm(enc)
    limit = min(int(getattr(tokenizer, "model_max_length", 0) or 10**9),
                int(getattr(lm.config, "max_position_embeddings", 0) or 10**9))
    inputs = _model_inputs(tokenizer, prompts, _plain_ids(tokenizer, prompts), limit, ids)
    # longest first: similar lengths share a batch (less padding), and a batch too large for
    # the device fails at once
    order = sorted(range(len(inputs)), key=lambda k: -len(inputs[k]))
    batches = [[inputs[k] for k in order[s:s + batch_size]]
               for s in range(0, len(order), batch_size)]
    marks = None
    if intervention is not None and intervention.positions == "span":
        flags = compound_tokens(tokenizer, prompts, inputs, compounds)
        marks = [[flags[k] for k in order[s:s + batch_size]]
                 for s in range(0, len(order), batch_size)]
    pad = tokenizer.pad_token_id
    if pad is None:  # any id: padded positions are masked out
        pad = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(inputs), unit="item", desc=f"answering with {enc.name}",
                   leave=False)
    try:
        got = _letter_logprobs(lm, device, batches, int(pad), rule.token_ids, bar,
                               intervention, marks)
    finally:
        if bar is not None:
            bar.close()
    out: list[np.ndarray] = [np.empty(0)] * len(inputs)
    for k, lp in zip(order, got, strict=True):
        out[k] = lp
    return out
