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
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Sequence

from .._io import hash_cache, tree_sha256
from ..errors import ModelUnavailableError, NcprobeError, UsageError
from ._env import (
    hf_unavailable,
    parse_dtype,
    require_hf,
    torch_device,
    unreachable,
    without_loading_bars,
)
from ._intervene import Intervention, check_intervention, intervening, position_mask
from ._pool import POOL_BYTES, pool_layers, views_per_pass
from ._stages import (
    Batch,
    Tokens,
    Transfer,
    collate,
    first_too_long,
    to_device,
    tokenize_words,
)
from .base import LAST_FOUR, Encoded, SentenceTooLongError, encode_in_stages

if TYPE_CHECKING:  # pragma: no cover
    import torch

log = logging.getLogger(__name__)

FORMAT_VERSION = 1


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
    specs: list[tuple[int, ...]]
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

    The weights are loaded on the first :meth:`encode` (or first use of ``model``,
    ``tokenizer``, ``max_length``), not at construction: ``name``, ``dim``, ``views``
    and :meth:`fingerprint` come from the model's ``config.json`` and the identity of
    its files (see :func:`describe_model`), so a run whose vectors are all cached never
    imports torch or transformers. What can be checked without the weights (dtype,
    layers, an explicitly asked device) is checked here; what needs them (the
    tokenizer, the weights) fails on the first encode, with the same error. A model
    that cannot be described from its files is loaded here, as before.

    Args:
        model_id: HuggingFace id or local directory (``save_pretrained`` layout).
        layers: layer views (see :func:`parse_layers`).
        device: ``cpu``, ``cuda``, ``cuda:1``, ``mps``; default: cuda when available.
        dtype: ``float32`` (default on CPU), ``float16``/``bfloat16`` (GPU).
        revision: git revision on the hub (recorded in the fingerprint).
        device_map: ``auto`` to spread a large model over GPUs (needs accelerate).
        name: the user-facing name (default: ``model_id``).
        tokenizer, model: already loaded parts (sentence-transformers); loaded now.
    """

    levels: tuple[str, ...] = ("sent", "nc")
    #: the :func:`~ncprobe.encoders.load_encoder` options that change this family's vectors
    #: (``None``: any value; the encoder checks it); load_encoder refuses every other option
    OPTIONS: ClassVar[dict] = {"layers": None, "device": None, "dtype": None, "revision": None,
                               "device_map": None}

    def __init__(self, model_id: str, *, layers=None, device: str | None = None,
                 dtype: str | None = None, revision: str | None = None,
                 device_map: str | None = None, name: str | None = None,
                 tokenizer=None, model=None, copy_of: str | None = None) -> None:
        self.name = name or model_id
        self.copy_of = copy_of  # the hub id ``model_id`` is a local copy of (fingerprint_names)
        require_hf(self.name)  # torch and transformers: not in a plain `pip install ncprobe`
        self.model_id, self.revision = model_id, revision
        self.dtype = parse_dtype(dtype)
        self.device_map, self._layers = device_map, layers
        self._device_arg = device
        self._device: torch.device | None = None
        self._tokenizer, self._model = None, None
        self._identity: str | None = None
        self._commit: str | None = None  # the hub snapshot the lazy fingerprint names
        self._half_warned = False
        #: what the forward pass changes (:meth:`with_intervention`); ``None``: the plain pass
        self.intervention: Intervention | None = None
        if device == "cpu":  # always there: no need to import torch to check it
            self._warn_half("cpu")
        elif device is not None:
            # asked for explicitly: a missing device fails now, not after the stimuli
            self._resolve_device()
        given = tokenizer is not None or model is not None
        desc = None if given else describe_model(model_id, revision)
        self._commit = desc.commit if desc is not None else None
        if desc is None or desc.config is None:
            # parts given, or a config ncprobe cannot read: load now, as before
            self._load(tokenizer, model)
            return
        self._set_shape(desc.config_get, where=desc.config_path)

    # --- what the config says -------------------------------------------------------------

    def _set_shape(self, get, where: str) -> None:
        """``n_layers``, ``dim``, ``causal`` and ``views`` from a config (raw or loaded)."""
        self.n_layers, self.dim, self.causal, self.views = config_shape(get, self._layers)
        # the feed-forward's inner width (for the token budget; 4 x the width where the
        # config does not say)
        inner = get("intermediate_size", "n_inner", "ffn_dim", "encoder_ffn_dim", "d_ff")
        self.inner = int(inner) if isinstance(inner, int) and inner > 0 else 4 * self.dim
        self._shape_from = where

    # --- loading ----------------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """Whether the tokenizer and weights are in memory."""
        return self._model is not None

    @property
    def device(self):
        """The ``torch.device`` the model runs on (resolving it imports torch)."""
        return self._resolve_device()

    def _resolve_device(self):
        if self._device is None:
            self._device = torch_device(self._device_arg, self.name)
            self._warn_half(self._device.type)
        return self._device

    def _warn_half(self, device_type: str) -> None:
        if (self.dtype != "float32" and device_type == "cpu" and self.device_map is None
                and not self._half_warned):
            self._half_warned = True
            log.warning("%s on CPU: half precision is slow and imprecise there", self.dtype)

    @property
    def model(self):
        """The transformers model (loaded on first use)."""
        if self._model is None:
            self._load()
        return self._model

    @property
    def tokenizer(self):
        """The fast tokenizer (loaded with the model, on first use)."""
        if self._model is None:
            self._load()
        return self._tokenizer

    @property
    def max_length(self) -> int:
        """The most tokens a sentence may have (tokenizer and position limits)."""
        if self._model is None:
            self._load()
        return self._max_length

    def _load(self, tokenizer=None, model=None) -> None:
        """Load the tokenizer and the weights, and check them against what the config said."""
        try:
            import torch
            from transformers import AutoConfig, AutoModel, AutoTokenizer
        except ImportError as e:
            raise hf_unavailable(self.name, e.name or "transformers") from e

        model_id, lazy = self.model_id, hasattr(self, "views")
        device = self._resolve_device()
        # a lazily made fingerprint names one hub commit: load exactly that snapshot, even if
        # the branch moved since
        rev = self._commit or self.revision
        kw = {"revision": rev} if rev else {}
        given = model is not None
        log.info("loading %s", model_id)
        try:
            if tokenizer is None:
                tokenizer = AutoTokenizer.from_pretrained(model_id, use_fast=True, **kw)
                if getattr(tokenizer, "add_prefix_space", None) is False:
                    # byte-level BPE (GPT-2 style) needs it for pre-tokenised input
                    tokenizer = AutoTokenizer.from_pretrained(model_id, use_fast=True,
                                                              add_prefix_space=True, **kw)
            if model is None:
                config = AutoConfig.from_pretrained(model_id, **kw)
                # without transformers' "Loading weights" bar among ncprobe's progress
                model = without_loading_bars(AutoModel.from_pretrained)(
                    model_id, dtype=getattr(torch, self.dtype), device_map=self.device_map,
                    config=config, **kw)
        except OSError as e:
            raise ModelUnavailableError(f"could not load {model_id!r}: {e}") from e
        except unreadable_weight_errors() as e:
            if type(e).__name__ == "OutOfMemoryError":  # a GPU too small: not the files
                raise
            raise weights_refused(model_id, self._shape_from, e) from e
        if not getattr(tokenizer, "is_fast", False):
            raise NcprobeError(f"{model_id}: ncprobe needs a fast tokenizer (word alignment)")
        tokenizer.padding_side = "right"
        if tokenizer.pad_token is None:
            fallback = tokenizer.eos_token or tokenizer.unk_token
            if fallback is None:
                raise NcprobeError(f"{model_id}: the tokenizer has no pad, eos or unk token")
            tokenizer.pad_token = fallback  # padded positions are masked and never pooled
        if given:
            # a model loaded by the caller (sentence-transformers) is cast here, so that its
            # weights are in the dtype the fingerprint records
            model.to(dtype=getattr(torch, self.dtype))
        if self.device_map is None:
            model.to(device)
        model.eval()
        weights = next(p for p in model.parameters() if p.is_floating_point())
        ran = str(weights.dtype).removeprefix("torch.")
        if ran != self.dtype:  # what is recorded must be what runs
            raise NcprobeError(f"{model_id}: asked for {self.dtype} weights, the model holds "
                               f"{ran}")
        cfg = model.config
        get = attr_getter(cfg)
        if lazy:  # the fingerprint was made from the files: they must describe this model
            check_loaded(model_id, (self.n_layers, self.dim, self.causal), config_sizes(get),
                         self._shape_from, self._commit, getattr(cfg, "_commit_hash", None))
        else:
            self._set_shape(get, where="the loaded model")
        if self._commit is None:  # transformers 4 records the snapshot it loaded
            self._commit = getattr(cfg, "_commit_hash", None)
        self._max_length = min(int(getattr(tokenizer, "model_max_length", 512) or 512),
                               int(getattr(cfg, "max_position_embeddings", 10**6) or 10**6))
        self._tokenizer, self._model = tokenizer, model

    def fingerprint(self) -> dict:
        if self._identity is None:  # hashing a large directory: once
            self._identity = self.revision or weights_identity(self.model_id, self._commit)
        return {"family": "hf",
                "model": fingerprint_names(self.model_id, self.name, self.copy_of)["model"],
                "revision": self._identity,
                "views": self.views, "dtype": self.dtype,
                "pooling": "subtoken-mean/word-mean", "format": FORMAT_VERSION,
                **intervention_key(self.intervention)}

    def with_intervention(self, intervention: Intervention) -> "HFEncoder":
        """This encoder with ``intervention`` applied in every forward pass
        (:mod:`~ncprobe.encoders._intervene`: a layer's hidden state changed at some
        positions, the pass continued from it); its fingerprint names the intervention, so
        its vectors are cached apart from the plain pass's. The weights are shared; this
        encoder is left as it is.

        Raises:
            UsageError: a layer the model does not have (naming its layers), unknown positions.
        """
        import copy

        check_intervention(intervention, self.n_layers, self.name)
        new = copy.copy(self)
        new.intervention = intervention
        return new

    # --- a batch, in stages (see StagedEncoder; ncprobe.batches overlaps them) ------------

    def load(self) -> None:
        """Load the tokenizer and the weights now (they load on first use otherwise)."""
        if self._model is None:
            self._load()

    def token_bytes(self) -> int | None:
        """On a CUDA device: the device memory a batch holds per token at its peak, ``None``
        elsewhere. That is every layer's hidden state (``output_hidden_states`` keeps them
        all, in the model's dtype), one layer's own activations while it runs (the attention's
        query, key, value and output, and the feed-forward's inner width three times: the
        gated MLPs of LLaMA-class models hold three), and the pooling of one pass of views
        (:data:`~._pool.POOL_BYTES` per view and unit of width, :func:`~._pool.views_per_pass`
        views, beside the float32 copy of the widest view's layers). The pooled vectors
        themselves are a sentence's, not a token's: they do not count."""
        if not self._on_cuda():
            return None
        width, dim = self.value_bytes, self.dim
        hidden = (self.n_layers + 1) * width * dim
        layer = width * (4 * dim + 3 * self.inner)
        widest = max(len(v) for v in self.views)
        at_once = min(self.views_per_pass, len(self.views))
        pooling = POOL_BYTES * at_once * dim + widest * (width + 4) * dim
        return hidden + layer + pooling

    def tokenize(self, sentences: Sequence[Sequence[str]]) -> list[Tokens]:
        """Tokenise pre-split words (no padding): one :class:`~._stages.Tokens` each."""
        return tokenize_words(self.tokenizer, sentences)

    def collate(self, tokens: Sequence[Tokens], sentences: Sequence[Sequence[str]],
                spans: Sequence[tuple[int, int]]) -> Batch:
        """Padded tensors of a batch (pinned for a CUDA model).

        Raises:
            SentenceTooLongError: a sentence has more tokens than the model takes.
        """
        limit = self.max_length
        over = first_too_long(tokens, limit)
        if over is not None:  # ncprobe.embed names the stimulus
            raise SentenceTooLongError(self.name, *over, limit)
        tok = self.tokenizer
        return collate(tokens, sentences, spans, pad_id=tok.pad_token_id,
                       pad_type_id=tok.pad_token_type_id,
                       pin=self.model.device.type == "cuda")

    def run(self, batch: Batch, own=None, intervention: Intervention | None = None):
        """The forward pass and the pooling of a batch, queued on the model's device:
        ``(model inputs, model output, flat, layout)``, ``flat`` the float32 tensor of
        :func:`~._pool.pool_layers` (on the device of the last hidden states) and ``layout``
        its ``(n, views, dim, own)`` (see :class:`~._stages.Transfer`).

        Args:
            own: ``own(inputs, output)``, a ``(B, E)`` tensor laid out after the views (a
                model's own sentence embedding), run under the same inference mode.
            intervention: applied in the pass (default: :attr:`intervention`).
        """
        import torch

        inputs, (word_ids, n_words, starts, ends) = to_device(batch, self.model.device)
        change = intervention if intervention is not None else self.intervention
        with torch.inference_mode():
            if change is None:
                out = self.model(**inputs, output_hidden_states=True)
            else:
                mask = position_mask(change.positions, word_ids, starts, ends,
                                     inputs["attention_mask"])
                with intervening(self.model, self.n_layers, change, mask):
                    out = self.model(**inputs, output_hidden_states=True)
            extra = own(inputs, out) if own is not None else None
            flat = pool_layers(out.hidden_states, self.views, word_ids, n_words, starts, ends,
                               batch.max_words, per_pass=self.views_per_pass, own=extra)
        n = int(batch.meta.shape[1])
        layout = (n, len(self.views), self.dim, 0 if extra is None else int(extra.shape[1]))
        return inputs, out, flat, layout

    @property
    def views_per_pass(self) -> int:
        """Layer views pooled at a time: on a CUDA device, :func:`~._pool.views_per_pass` of
        the model's layers and dtype (its memory is what the token budget counts); elsewhere
        every view in one pass, the float operations the vectors always came from (a
        matrix product's rounding can depend on its shape: pooled a few views at a time, the
        CPU's vectors would no longer be the same bytes)."""
        if not self._on_cuda():
            return len(self.views)
        return views_per_pass(self.n_layers, self.value_bytes)

    def _on_cuda(self) -> bool:
        """Whether the model runs on CUDA devices."""
        if self.device_map is None:
            return self.device.type == "cuda"
        import torch  # spread by accelerate: on GPUs when there are any

        return torch.cuda.is_available()

    @property
    def value_bytes(self) -> int:
        """Bytes of one value of the model's dtype."""
        return {"float32": 4}.get(self.dtype, 2)

    def launch(self, batch: Batch) -> Transfer:
        """Queue the batch's forward pass, pooling and copy back (see :meth:`collect`)."""
        _, _, flat, layout = self.run(batch)
        return Transfer(flat, layout)

    def collect(self, launched: Transfer) -> Encoded:
        """The vectors of a launched batch (waits for the device)."""
        return launched.get()

    def encode(self, sentences: Sequence[Sequence[str]], spans: Sequence[tuple[int, int]]
               ) -> Encoded:
        return encode_in_stages(self, sentences, spans)


def intervention_key(intervention: Intervention | None) -> dict:
    """The part of an encoder's fingerprint that names its intervention (none for the plain
    pass: a plain encoder's fingerprint, and so its cache entry, is as it always was)."""
    return {} if intervention is None else {"intervention": intervention.fingerprint}


def attr_getter(config):
    """``get(*names)``: the first of the names a loaded config sets (to a true value)."""
    return lambda *names: next((v for v in (getattr(config, n, None) for n in names) if v),
                               None)


def config_sizes(get) -> tuple[int, int, bool]:
    """``(n_layers, dim, causal)`` of a config; ``get(*names)`` gives the first of the
    names the config sets (``config.json`` keys or attributes of a loaded config)."""
    n_layers = int(get("num_hidden_layers", "n_layer", "n_layers", "num_layers") or 0)
    dim = int(get("hidden_size", "n_embd", "dim", "d_model") or 0)
    causal = bool(get("is_decoder")) or any(
        is_causal_lm_class(a) for a in (get("architectures") or []))
    return n_layers, dim, causal


#: How the class of a model saved with its language-model head ends: ``LlamaForCausalLM``,
#: ``GPT2LMHeadModel``, ``XLNetLMHeadModel``, ``XLMWithLMHeadModel`` ... (the text-only names of
#: transformers' ``AutoModelForCausalLM`` mapping; not every one ends with ``ForCausalLM``:
#: GPT-2's, the first causal LM a user tries, does not). Read from the name, without importing
#: transformers: a cached rerun imports no model library.
CAUSAL_LM_SUFFIXES: tuple[str, ...] = ("ForCausalLM", "LMHeadModel", "WithLMHead")


def is_causal_lm_class(name: str) -> bool:
    """Whether an ``architectures`` entry names a class with a language-model head
    (:data:`CAUSAL_LM_SUFFIXES`)."""
    return str(name).endswith(CAUSAL_LM_SUFFIXES)


def config_shape(get, layers) -> tuple[int, int, bool, tuple[tuple[int, ...], ...]]:
    """``(n_layers, dim, causal, views)`` of a config (see :func:`config_sizes`)."""
    n_layers, dim, causal = config_sizes(get)
    return n_layers, dim, causal, parse_layers(layers, n_layers)


def check_loaded(model_id: str, said: tuple, loaded: tuple, source: str, commit: str | None,
                 loaded_commit: str | None) -> None:
    """Refuse a loaded model that differs from what its files said when it was fingerprinted.

    The fingerprint (and so the cache entry) was made before loading, from ``config.json``
    and the hub snapshot; vectors stored under it must come from exactly that model.

    Args:
        said, loaded: ``(n_layers, dim, causal)`` read from ``source`` and of the loaded
            model (the layer views follow from the layer count).
        commit, loaded_commit: the hub snapshot fingerprinted and the one loaded (which
            transformers 4 records as ``config._commit_hash``; 5 does not).
    """
    if tuple(said) != tuple(loaded) or (None not in (commit, loaded_commit)
                                        and loaded_commit != commit):
        raise NcprobeError(
            f"{model_id}: the loaded model is not what {source} said when ncprobe "
            f"fingerprinted it ((layers, hidden size, decoder), snapshot: {said}, "
            f"{commit} before loading; {tuple(loaded)}, {loaded_commit} loaded); nothing was "
            "encoded. The model's files changed while ncprobe ran, or its config.json uses "
            "keys ncprobe does not know: please report it")


@dataclass(frozen=True)
class ModelFiles:
    """What identifies a transformers model without loading it (see :func:`describe_model`).

    Attributes:
        config: the model's ``config.json``, parsed; ``None`` when it does not state the
            layer count and hidden size (then the model is loaded to know them).
        config_path: where it was read (for messages).
        commit: the hub snapshot (commit hash) the files come from; ``None`` for a local
            directory (its files are hashed instead).
    """

    config: dict | None
    config_path: str
    commit: str | None

    def config_get(self, *names):
        """The first of ``names`` that the config sets (to a true value), else ``None``."""
        config = self.config or {}
        return next((config[n] for n in names if config.get(n)), None)


def _read_config(path: str | Path) -> dict | None:
    """A ``config.json`` that states the layer count and hidden size, else ``None``.

    Only top-level keys are read; a config whose sizes live elsewhere (nested text
    configs, class defaults left out of the file) is loaded with transformers instead.
    """
    import json

    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None  # the loader says what is wrong with it
    if not isinstance(raw, dict):
        return None

    def size(names) -> bool:
        v = next((raw[n] for n in names if raw.get(n)), None)
        return isinstance(v, int) and not isinstance(v, bool) and v > 0
    if not (size(("num_hidden_layers", "n_layer", "n_layers", "num_layers"))
            and size(("hidden_size", "n_embd", "dim", "d_model"))):
        return None
    return raw


#: Files that hold a model's weights (named when they cannot be read).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack")


def unreadable_weight_errors() -> tuple[type[BaseException], ...]:
    """What loading raises for a weight file it cannot or will not read: a pickle that
    ``torch.load(weights_only=True)`` refuses (it would run code), a truncated or damaged
    safetensors or zip file, a state dict that does not fit the config."""
    import pickle

    kinds: list[type[BaseException]] = [pickle.UnpicklingError, EOFError, RuntimeError]
    try:
        from safetensors import SafetensorError
        kinds.append(SafetensorError)
    except ImportError:  # pragma: no cover - safetensors comes with transformers
        pass
    return tuple(kinds)


def weights_refused(model_id: str, where: str | Path | None, err: BaseException
                    ) -> ModelUnavailableError:
    """The named error (exit 5) for weights that could not be read, naming the files.

    Nothing in them was run: pickles are loaded by torch with ``weights_only=True``.
    """
    folder = Path(model_id).expanduser()
    if not folder.is_dir() and where is not None:
        folder = Path(where).parent
    try:
        files = sorted(str(p) for p in folder.rglob("*")
                       if p.suffix in WEIGHT_SUFFIXES and p.is_file())
    except OSError:
        files = []
    named = ", ".join(files) if files else f"the weight files of {model_id}"
    cause = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    if "weights_only" in str(err) or "Unpickl" in type(err).__name__:
        why = ("a pickle that torch refuses to load without running code (weights_only); "
               "ncprobe never runs code from model files: convert it to safetensors where it "
               "comes from a source you trust, or use another copy")
    else:
        why = "a file that is damaged or incomplete: download or save the model again"
    return ModelUnavailableError(f"could not read the weights of {model_id!r} ({named}): {why} "
                                 f"[{type(err).__name__}: {cause[:300]}]")


def hub_file(model_id: str, filename: str, revision: str | None) -> Path | None:
    """A file of a hub model as transformers would resolve it, without loading the model.

    ``huggingface_hub.hf_hub_download`` is what transformers calls for each file: with
    the network it checks the branch's current commit (one HEAD request; a new commit's
    file is downloaded), offline or with ``HF_HUB_OFFLINE=1`` it takes the local cache.
    Returns ``None`` when the file cannot be had (the loader then reports why).
    """
    if Path(model_id).expanduser().exists() or model_id.count("/") != 1:
        return None
    offline = hub_offline()
    try:
        from huggingface_hub import hf_hub_download

        path = hf_hub_download(model_id, filename, revision=revision,
                               local_files_only=offline)
    except Exception as e:  # noqa: BLE001 - any failure: load as before, which explains it
        log.debug("%s: %s not resolved without loading: %s", model_id, filename, e)
        return None
    return Path(path)


def snapshot_commit(path: Path, filename: str) -> str | None:
    """The commit of a file in the HuggingFace cache layout ``.../snapshots/<commit>/<file>``."""
    import re

    snapshot = path
    for _ in Path(filename).parts:
        snapshot = snapshot.parent
    if snapshot.parent.name == "snapshots" and re.fullmatch(r"[0-9a-f]{40}", snapshot.name):
        return snapshot.name
    return None


def describe_model(model_id: str, revision: str | None = None, subfolder: str = ""
                   ) -> ModelFiles | None:
    """The config and snapshot of a model, read from its files (nothing is loaded).

    A local directory: its ``config.json``. A hub id: ``config.json`` of the snapshot
    transformers would load (see :func:`hub_file`) and that snapshot's commit (the
    snapshot is then loaded by that commit, so that the weights are the fingerprinted
    ones). ``None`` when a hub file cannot be had (the loader then says why).

    Args:
        model_id: HuggingFace id or local directory.
        revision: hub revision.
        subfolder: where the config lies inside the model (sentence-transformers modules).
    """
    rel = f"{subfolder}/config.json" if subfolder else "config.json"
    local = Path(model_id).expanduser()
    if local.is_dir():
        return ModelFiles(_read_config(local / rel), str(local / rel), None)
    path = hub_file(model_id, rel, revision)
    if path is None:
        return None
    commit = snapshot_commit(path, rel)
    if commit is None:
        return None
    return ModelFiles(_read_config(path), f"{model_id}@{commit}/{rel}", commit)


def fingerprint_names(model_id: str, name: str | None = None, copy_of: str | None = None
                      ) -> dict[str, str]:
    """The ``model`` and ``name`` a fingerprint records: never where a model lies.

    A hub id is kept as it is (``model``; ``name``: the name given, else the id). A local
    directory is identified by its content (the weight hash, :func:`weights_identity`), so
    its path must not count: a second environment, or a colleague's copy, must find the same
    cache entry. ``model`` is then ``copy_of``, the hub id the directory is a copy of (the
    registry says it of ``minilm`` installed from a package:
    ``sentence-transformers/all-MiniLM-L6-v2``), else ``local:`` and the directory's own name
    (the last part of its path); ``name`` is the name given, unless that is the path itself,
    then the directory's own name.
    """
    folder = Path(model_id).expanduser()
    if not folder.is_dir():
        return {"model": model_id, "name": name or model_id}
    own = Path(os.path.abspath(folder)).name or str(folder)  # "." and "a/.." have names too
    shown = own if name is None or name == model_id or Path(name).expanduser() == folder else name
    return {"model": copy_of or f"local:{own}", "name": shown}


def weights_identity(model_id: str, commit: str | None) -> str:
    """What identifies the weights when no revision was given.

    A hub model: the snapshot commit (see :func:`describe_model`): the model is loaded
    by that commit, so it names exactly the weights that ran. (transformers 5 no longer
    records it as ``config._commit_hash``; without a commit the id alone is recorded.)
    A local directory: the SHA-256 of the content of every file under it, subfolders
    (a sentence-transformers ``2_Dense/``) included, so that any changed byte changes the
    fingerprint (per-file digests are cached by path, size and times: see
    :func:`ncprobe._io.tree_sha256`).
    """
    p = Path(model_id).expanduser()
    if p.is_dir():
        try:
            with hash_cache() as cache:
                digest, _ = tree_sha256(p, hash_cache=cache)
        except OSError as e:
            raise NcprobeError(f"{p}: cannot read the model directory to fingerprint it: "
                               f"{e}") from e
        return "dir-sha256:" + digest
    return commit or "hub:" + model_id


def hub_offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` asks for no network."""
    import os

    return any((os.environ.get(v) or "").strip().upper() in ("1", "ON", "YES", "TRUE")
               for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def hub_unavailable(model_id: str, *, revision: str | None = None) -> str | None:
    """Why hub model ``model_id`` cannot be had now (not cached, the hub unreachable), else None.

    Checked before loading, so that an offline machine gets one line in a moment instead
    of transformers' download retries (~50 s) and their log. Local directories, ids that
    are not ``org/name`` and models in the HuggingFace cache pass.
    """
    if model_id.count("/") != 1 or Path(model_id).expanduser().exists():
        return None  # a local directory: the loader says what is wrong with it
    try:
        from huggingface_hub import constants, try_to_load_from_cache

        for filename in ("config.json", "modules.json"):
            if isinstance(try_to_load_from_cache(model_id, filename, revision=revision), str):
                return None
        endpoint = constants.ENDPOINT
    except Exception:  # an unusual cache layout or id: let the loader decide
        return None
    if hub_offline():
        return f"{model_id} is not in the local HuggingFace cache and HF_HUB_OFFLINE=1"
    why = unreachable(endpoint)
    if why:
        return f"{model_id} is not in the local HuggingFace cache and {why} (offline?)"
    return None
