"""HuggingFace transformers: encoders (BERT family) and decoder LLMs (LLaMA family).

* Words are aligned to sub-tokens with the fast tokenizer (``is_split_into_words``
  and ``word_ids``); a word vector is the mean of its sub-token vectors.
* Special tokens ([CLS], [SEP], BOS/EOS) and padding belong to no word and are
  never pooled.
* Layer indices follow ``output_hidden_states``: 0 is the embedding layer,
  1..L the transformer layers, negative indices count from the end (``-1`` is
  the last hidden state). The default view is the mean of the last four.
* Padding is always on the right, so positions and attention of real tokens
  do not depend on the rest of the batch (a causal model never sees the pads).
* A decoder's span vector sees only the span's left context: causal attention
  cannot look ahead. Sentence vectors of decoders average over positions that
  saw increasingly more of the sentence.
* Half precision (``float16``/``bfloat16``) and ``device_map="auto"`` (through
  accelerate, for models larger than one GPU) are for GPUs; pooling is done in
  float32 in every case.
* ``trust_remote_code`` is never set: only architectures that ship with
  transformers load.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import ClassVar, Sequence

from .._io import tree_sha256
from ..errors import ModelUnavailableError, NcprobeError, UsageError
from .base import LAST_FOUR, Encoded, SentenceTooLongError, hash_cache, pool_batch, torch_device

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
_DTYPES = {"float32": "float32", "fp32": "float32", "float16": "float16", "fp16": "float16",
           "half": "float16", "bfloat16": "bfloat16", "bf16": "bfloat16"}


def parse_layers(layers, n_layers: int) -> tuple[tuple[int, ...], ...]:
    """Layer views from a spec.

    ``None``/``"last4"``: one view, the mean of the last four layers;
    ``"all"``: one view per layer (0 = embeddings .. L); a list of ints: one
    view averaging those layers; a list of lists: one view each.
    Indices are normalised to 0..L.

    Raises:
        UsageError: a spec that is not one of these, or a layer the model does not have.
    """
    total = n_layers + 1
    try:
        if layers is None or layers == "last4":
            specs = [LAST_FOUR]
        elif layers == "all":
            specs = [(i,) for i in range(total)]
        elif isinstance(layers, str):
            specs = [tuple(int(x) for x in part.split("+")) for part in layers.split(",")]
        elif all(isinstance(x, int) for x in layers):
            specs = [tuple(layers)]
        else:
            specs = [tuple(int(i) for i in v) for v in layers]
    except (TypeError, ValueError) as e:
        raise UsageError(f"--layers {layers!r} is not a layer spec: use last4, all, -1, "
                         "9+10+11+12 or a comma list of such views") from e
    if not specs or not all(specs):
        raise UsageError(f"--layers {layers!r} names no layer")
    views = []
    for spec in specs:
        norm = []
        for i in spec:
            j = i + total if i < 0 else i
            if not 0 <= j < total:
                raise UsageError(f"--layers: layer {i} out of range: the model has {n_layers} "
                                 f"layers (0 = embeddings .. {n_layers}; -1 = last, "
                                 f"-{total} = embeddings)")
            norm.append(j)
        views.append(tuple(norm))
    return tuple(views)


class HFEncoder:
    """Any ``AutoModel`` with a fast tokenizer: encoders and decoder-only LLMs.

    Args:
        model_id: HuggingFace id or local directory (``save_pretrained`` layout).
        layers: layer views (see :func:`parse_layers`).
        device: ``cpu``, ``cuda``, ``cuda:1``, ``mps``; default: cuda when available.
        dtype: ``float32`` (default on CPU), ``float16``/``bfloat16`` (GPU).
        revision: git revision on the hub (recorded in the fingerprint).
        device_map: ``auto`` to spread a large model over GPUs (needs accelerate).
        name: the user-facing name (default: ``model_id``).
    """

    levels = ("sent", "nc")
    #: the :func:`~ncprobe.encoders.load_encoder` options that change this family's vectors
    #: (``None``: any value; the encoder checks it); load_encoder refuses every other option
    OPTIONS: ClassVar[dict] = {"layers": None, "device": None, "dtype": None, "revision": None,
                               "device_map": None}

    def __init__(self, model_id: str, *, layers=None, device: str | None = None,
                 dtype: str | None = None, revision: str | None = None,
                 device_map: str | None = None, name: str | None = None,
                 tokenizer=None, model=None) -> None:
        import torch
        from transformers import AutoConfig, AutoModel, AutoTokenizer

        self.name = name or model_id
        self.model_id, self.revision = model_id, revision
        self.dtype = _DTYPES.get(dtype or "float32")
        if self.dtype is None:
            raise UsageError(f"--dtype {dtype!r} is not a dtype; use float32, float16 or "
                             "bfloat16")
        self.device = torch_device(device, self.name)
        if self.dtype != "float32" and self.device.type == "cpu" and device_map is None:
            log.warning("%s on CPU: half precision is slow and imprecise there", self.dtype)
        kw = {"revision": revision} if revision else {}
        given = model is not None
        try:
            if tokenizer is None:
                tokenizer = AutoTokenizer.from_pretrained(model_id, use_fast=True, **kw)
                if getattr(tokenizer, "add_prefix_space", None) is False:
                    # byte-level BPE (GPT-2 style) needs it for pre-tokenised input
                    tokenizer = AutoTokenizer.from_pretrained(model_id, use_fast=True,
                                                              add_prefix_space=True, **kw)
            if model is None:
                config = AutoConfig.from_pretrained(model_id, **kw)
                model = AutoModel.from_pretrained(
                    model_id, dtype=getattr(torch, self.dtype), device_map=device_map,
                    config=config, **kw)
        except OSError as e:
            raise ModelUnavailableError(f"could not load {model_id!r}: {e}") from e
        if not getattr(tokenizer, "is_fast", False):
            raise NcprobeError(f"{model_id}: ncprobe needs a fast tokenizer (word alignment)")
        self.tokenizer = tokenizer
        self.tokenizer.padding_side = "right"
        if self.tokenizer.pad_token is None:
            fallback = self.tokenizer.eos_token or self.tokenizer.unk_token
            if fallback is None:
                raise NcprobeError(f"{model_id}: the tokenizer has no pad, eos or unk token")
            self.tokenizer.pad_token = fallback  # padded positions are masked and never pooled
        self.model = model
        if given:
            # a model loaded by the caller (sentence-transformers) is cast here, so that its
            # weights are in the dtype the fingerprint records
            self.model.to(dtype=getattr(torch, self.dtype))
        if device_map is None:
            self.model.to(self.device)
        self.model.eval()
        weights = next(p for p in self.model.parameters() if p.is_floating_point())
        ran = str(weights.dtype).removeprefix("torch.")
        if ran != self.dtype:  # what is recorded must be what runs
            raise NcprobeError(f"{model_id}: asked for {self.dtype} weights, the model holds "
                               f"{ran}")
        cfg = self.model.config
        self.causal = bool(getattr(cfg, "is_decoder", False)) or any(
            a.endswith("ForCausalLM") for a in (getattr(cfg, "architectures", None) or []))
        n_layers = int(getattr(cfg, "num_hidden_layers", 0) or getattr(cfg, "n_layer", 0))
        self.n_layers = n_layers
        self.views = parse_layers(layers, n_layers)
        self.dim = int(getattr(cfg, "hidden_size", 0) or getattr(cfg, "n_embd", 0))
        self.max_length = min(int(getattr(tokenizer, "model_max_length", 512) or 512),
                              int(getattr(cfg, "max_position_embeddings", 10**6) or 10**6))

    def fingerprint(self) -> dict:
        if getattr(self, "_identity", None) is None:  # hashing a large directory: once
            self._identity = self.revision or _weights_identity(self.model_id,
                                                                self.model.config)
        return {"family": "hf", "model": self.model_id, "revision": self._identity,
                "views": self.views, "dtype": self.dtype,
                "pooling": "subtoken-mean/word-mean", "format": FORMAT_VERSION}

    def forward(self, sentences: Sequence[Sequence[str]]):
        """Tokenise pre-split words and run the model: ``(batch encoding, word ids, output)``."""
        import torch

        batch = self.tokenizer([list(s) for s in sentences], is_split_into_words=True,
                               padding=True, truncation=False, return_tensors="pt")
        lengths = batch["attention_mask"].sum(1).tolist()
        for i, n_tok in enumerate(lengths):
            if n_tok > self.max_length:  # ncprobe.embed names the stimulus
                raise SentenceTooLongError(self.name, i, int(n_tok), self.max_length)
        word_ids = torch.tensor([[-1 if w is None else w for w in batch.word_ids(i)]
                                 for i in range(len(sentences))])
        inputs = {k: v.to(self.model.device) for k, v in batch.items()
                  if k in ("input_ids", "attention_mask", "token_type_ids")}
        with torch.inference_mode():
            out = self.model(**inputs, output_hidden_states=True)
        return inputs, word_ids, out

    def pool(self, out, word_ids, sentences: Sequence[Sequence[str]],
             spans: Sequence[tuple[int, int]]) -> Encoded:
        """Average the configured layer views, then pool words, spans and sentences."""
        import torch

        with torch.inference_mode():
            hidden = out.hidden_states
            views = torch.stack([torch.stack([hidden[i] for i in v]).float().mean(0)
                                 for v in self.views], dim=1)  # (B, V, T, D)
            return pool_batch(views, word_ids.to(views.device), [len(s) for s in sentences],
                              spans)

    def encode(self, sentences: Sequence[Sequence[str]], spans: Sequence[tuple[int, int]]
               ) -> Encoded:
        _, word_ids, out = self.forward(sentences)
        return self.pool(out, word_ids, sentences, spans)


def _weights_identity(model_id: str, config) -> str:
    """What identifies the weights when no revision was given.

    A hub model: the commit transformers resolved (``config._commit_hash``).
    A local directory: the SHA-256 of the content of every file under it, subfolders
    (a sentence-transformers ``2_Dense/``) included, so that any changed byte changes the
    fingerprint (per-file digests are cached by path, size and times: see
    :func:`ncprobe._io.tree_sha256`).
    """
    p = Path(model_id).expanduser()
    if p.is_dir():
        cache = hash_cache()
        try:
            digest, _ = tree_sha256(p, hash_cache=cache)
        except OSError as e:
            raise NcprobeError(f"{p}: cannot read the model directory to fingerprint it: "
                               f"{e}") from e
        finally:
            cache.save()
        return "dir-sha256:" + digest
    return getattr(config, "_commit_hash", None) or "hub:" + model_id
