"""sentence-transformers models (``distiluse-base-multilingual-cased``, all-MiniLM-L6-v2 ...).

* Both levels of every layer view: the token states of the model's transformer module,
  pooled like any HF encoder (sub-token -> word -> sentence and span means over the view's
  layers), so a sentence vector is the mean of the word vectors for every model (method §2)
  and differs from layer to layer.
* The model's own sentence embedding: its modules after the transformer (pooling, any
  Dense layer, normalisation) applied to the same forward pass, which equals
  ``SentenceTransformer.encode`` of the words joined by spaces (tested). It exists only
  after the last layer, so it is one vector whatever the views (``Encoded.own``): the view
  :data:`~ncprobe.schema.OWN_VIEW` of the results, at the sentence level only, kept in a
  store entry of its own (:meth:`SBertEncoder.own_fingerprint`, shared by every choice of
  ``layers``).
* ``dtype``: the transformer module's weights are cast to it (``float16``/``bfloat16``);
  the modules after it (pooling, Dense, normalisation) stay float32 and get float32
  token states, as every pooling of ncprobe is float32.
* Raw text (:meth:`SBertEncoder.encode_texts`, the retrieval probe): the model's own
  sentence embedding of each text, exactly as ``SentenceTransformer.encode`` computes it,
  and the mean of the last hidden states of the sub-word tokens whose character offsets
  overlap a character span of the text, from the same forward pass.
* The model is loaded on the first encode: its name, size, views and fingerprint come
  from ``modules.json``, the transformer's ``config.json`` and the files' identity, so
  a run whose vectors are all cached loads nothing (as :class:`~ncprobe.encoders.hf.HFEncoder`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Sequence

import numpy as np

from ..errors import ModelUnavailableError, NcprobeError, UsageError
from ..schema import OWN_VIEW
from ._env import hf_unavailable, parse_dtype, require_hf, torch_device, without_loading_bars
from ._intervene import Intervention, check_intervention
from ._stages import Batch, Tokens, Transfer
from .base import Encoded, encode_in_stages
from .hf import (
    FORMAT_VERSION,
    HFEncoder,
    ModelFiles,
    attr_getter,
    check_loaded,
    config_shape,
    config_sizes,
    describe_model,
    fingerprint_names,
    hub_file,
    intervention_key,
    snapshot_commit,
    unreadable_weight_errors,
    weights_identity,
    weights_refused,
)

if TYPE_CHECKING:  # pragma: no cover
    from sentence_transformers import SentenceTransformer


class SBertEncoder:
    """A sentence-transformers model whose first module is a transformer.

    Args:
        model_id: a sentence-transformers directory or hub id.
        layers, device, dtype, revision, name: as in :class:`~ncprobe.encoders.hf.HFEncoder`.
    """

    levels: tuple[str, ...] = ("sent", "nc")
    #: the load_encoder options that change the vectors (see HFEncoder.OPTIONS)
    OPTIONS: ClassVar[dict] = {"layers": None, "device": None, "dtype": None, "revision": None}
    OPTIONS_NOTE = "a sentence-transformers model runs on one device (no device_map)"

    def __init__(self, model_id: str, *, layers=None, device: str | None = None,
                 dtype: str | None = None, name: str | None = None,
                 revision: str | None = None, trust_remote_code: bool = False,
                 copy_of: str | None = None) -> None:
        # torch, transformers, sentence-transformers: not in a plain `pip install ncprobe`
        require_hf(name or model_id, "sbert")
        self.copy_of = copy_of  # the hub id ``model_id`` is a local copy of (fingerprint_names)
        self.dtype = parse_dtype(dtype)
        self.name = name or model_id
        self.model_id, self.revision = model_id, revision
        self._layers, self._dtype_arg = layers, dtype
        # the opt-in of load_encoder(allow_remote_code=True): never set by default
        self.trust_remote_code = bool(trust_remote_code)
        self._device_arg, self._device = device, None
        if device is not None and device != "cpu":  # asked for: a missing device fails now
            self._device = str(torch_device(device, self.name))
        # both set by _load, on first use
        self._st: SentenceTransformer | None = None
        self._tokens: HFEncoder | None = None
        self._identity: str | None = None
        #: what the transformer's forward pass changes (:meth:`with_intervention`)
        self.intervention: Intervention | None = None
        desc = describe_st(model_id, revision)
        self._desc = desc
        if desc is None or desc.config is None:  # files ncprobe cannot read: load now
            self._load()
            return
        self.n_layers, self.dim, _, self.views = config_shape(desc.config_get, layers)

    # --- loading ----------------------------------------------------------------------------

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory."""
        return self._st is not None

    @property
    def st(self):
        """The ``SentenceTransformer`` (loaded on first use)."""
        if self._st is None:
            self._load()
        return self._st

    @property
    def tokens(self) -> HFEncoder:
        """The transformer module as an :class:`HFEncoder` (loaded on first use)."""
        if self._st is None:
            self._load()
        assert self._tokens is not None, "_load sets the transformer module or raises"
        return self._tokens

    @property
    def view_names(self) -> tuple[str, ...]:
        """The layer views' names (their layers joined by ``+``), then
        :data:`~ncprobe.schema.OWN_VIEW`, the model's own sentence embedding."""
        return tuple("+".join(str(i) for i in v) for v in self.views) + (OWN_VIEW,)

    @property
    def view_levels(self) -> tuple[tuple[str, ...], ...]:
        """The levels of each of :attr:`view_names`: both for a layer view, the sentence
        level only for the model's own sentence embedding (it has no NC vector)."""
        return (self.levels,) * len(self.views) + (("sent",),)

    @property
    def sent_dim(self) -> int:
        """Size of the model's own sentence embedding."""
        st = self.st
        get_dim = getattr(st, "get_embedding_dimension", None) or \
            st.get_sentence_embedding_dimension
        return int(get_dim() or self.dim)

    def _load(self) -> None:
        if self._device is None:
            self._device = str(torch_device(self._device_arg, self.name))
        device = self._device
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise hf_unavailable(self.name, e.name or "sentence_transformers", "sbert") from e

        desc, model_id = self._desc, self.model_id
        # a lazily made fingerprint names one hub commit: load exactly that snapshot
        revision = (desc.commit if desc is not None else None) or self.revision
        if not self.trust_remote_code:
            check_modules(model_id, revision)  # before anything is imported from the model
        try:
            st = without_loading_bars(SentenceTransformer)(  # ncprobe shows the progress
                model_id, device=device, revision=revision,
                trust_remote_code=self.trust_remote_code)
        except OSError as e:
            raise ModelUnavailableError(f"could not load sentence-transformers model "
                                        f"{model_id!r}: {e}") from e
        except unreadable_weight_errors() as e:
            if type(e).__name__ == "OutOfMemoryError":  # a GPU too small: not the files
                raise
            where = desc.config_path if desc is not None else None
            raise weights_refused(model_id, where, e) from e
        module = st[0]
        auto_model = getattr(module, "auto_model", None) or getattr(module, "model", None)
        if auto_model is None or not hasattr(module, "tokenizer"):
            raise NcprobeError(f"{model_id}: the first module is not a transformer; NC-level "
                               "vectors need token states")
        if desc is not None and desc.config is not None:
            # the fingerprint came from the files: they must describe what was loaded
            cfg = auto_model.config
            check_loaded(model_id, config_sizes(desc.config_get), config_sizes(attr_getter(cfg)),
                         desc.config_path, desc.commit, getattr(cfg, "_commit_hash", None))
        tokens = HFEncoder(model_id, layers=self._layers, device=device, dtype=self._dtype_arg,
                           tokenizer=module.tokenizer, model=auto_model, name=self.name)
        if desc is None or desc.config is None:
            self.n_layers, self.views, self.dim = tokens.n_layers, tokens.views, tokens.dim
        if desc is None:  # transformers 4 records the snapshot it loaded
            self._desc = ModelFiles(None, model_id,
                                    getattr(auto_model.config, "_commit_hash", None))
        self._st, self._tokens = st, tokens

    def fingerprint(self) -> dict:
        if self._identity is None:  # hashing a large directory: once
            commit = self._desc.commit if self._desc is not None else None
            self._identity = self.revision or weights_identity(self.model_id, commit)
        # the sentence vectors are the views' word means (they were the model's own
        # embedding, copied into every view, under "st-sentence/subtoken-mean-span"): the
        # pooling names them, so entries of the old meaning are never read as these
        return {"family": "sbert", **fingerprint_names(self.model_id, self.name, self.copy_of),
                "revision": self._identity,
                "views": self.views, "dtype": self.dtype,
                "pooling": "subtoken-mean/word-mean", "format": FORMAT_VERSION,
                **intervention_key(self.intervention)}

    def with_intervention(self, intervention: Intervention) -> "SBertEncoder":
        """This encoder with ``intervention`` applied in its transformer's forward pass (as
        :meth:`HFEncoder.with_intervention <ncprobe.encoders.hf.HFEncoder.with_intervention>`):
        the layer views and the model's own sentence embedding are those of the changed pass,
        and both fingerprints name the intervention. This encoder is left as it is."""
        import copy

        check_intervention(intervention, self.n_layers, self.name)
        new = copy.copy(self)
        new.intervention = intervention
        return new

    def own_fingerprint(self) -> dict:
        """The store entry of the model's own sentence embedding (``Encoded.own``): the
        model's fingerprint with one view, :data:`~ncprobe.schema.OWN_VIEW`, whatever the
        layer views (every choice of ``layers`` shares it)."""
        return {**self.fingerprint(), "views": [[OWN_VIEW]], "pooling": "st-sentence"}

    # --- a batch, in stages (see StagedEncoder): the transformer's, then the modules after it

    def load(self) -> None:
        """Load the model now (it loads on first use otherwise)."""
        self.tokens.load()

    def token_bytes(self) -> int | None:
        return self.tokens.token_bytes()

    def tokenize(self, sentences: Sequence[Sequence[str]]) -> list[Tokens]:
        return self.tokens.tokenize(sentences)

    def collate(self, tokens: Sequence[Tokens], sentences: Sequence[Sequence[str]],
                spans: Sequence[tuple[int, int]]) -> Batch:
        return self.tokens.collate(tokens, sentences, spans)

    def launch(self, batch: Batch) -> Transfer:
        """Queue the transformer's pass and the pooling of every view (sentence and span
        means of the word vectors, as :class:`~ncprobe.encoders.hf.HFEncoder`), and the
        model's own modules after the transformer (pooling, dense, normalise) on the same
        pass, as ``SentenceTransformer.encode`` computes the sentence embedding; the views
        and the own embedding go back to the host in one copy."""

        def own(inputs, out):
            features = {"token_embeddings": out.last_hidden_state.float(),
                        "attention_mask": inputs["attention_mask"]}
            for module in list(self.st)[1:]:
                features = module(features)
            return features["sentence_embedding"].float()

        _, _, flat, layout = self.tokens.run(batch, own=own, intervention=self.intervention)
        return Transfer(flat, layout)

    def collect(self, launched: Transfer) -> Encoded:
        return launched.get()

    def encode(self, sentences: Sequence[Sequence[str]], spans: Sequence[tuple[int, int]]
               ) -> Encoded:
        return encode_in_stages(self, sentences, spans)

    def encode_texts(self, texts: Sequence[str], spans: Sequence[tuple[int, int]]) -> Encoded:
        """Raw texts -> the model's own sentence embedding and a character span's vector.

        One forward pass of the model's modules (``preprocess`` then ``forward``, as
        ``SentenceTransformer.encode``) gives both: the sentence embedding, and the token
        states of the transformer module (its last hidden states), of which the span vector
        is the mean over the sub-word tokens whose character offsets overlap
        ``text[start:end]`` (special tokens excluded; a mean over sub-tokens, not words).
        Texts are truncated as the model's own pipeline truncates them; a span that
        truncation cut off is pooled from a second pass truncated at
        :data:`SPAN_TRUNCATION` tokens (or the model's position limit, if lower).

        Args:
            texts: raw (untokenised) texts.
            spans: one ``(start, end)`` character span per text; ``start == end``: no span
                wanted (its vector is NaN, not counted as missing).

        Returns:
            :class:`~ncprobe.encoders.base.Encoded` with one view: ``sent`` the sentence
            embeddings, ``span`` the span vectors (float32); ``missing_span_words`` is 1
            where a span was wanted but no token overlaps it (its vector NaN, never the
            sentence vector), ``missing_words`` 0.
        """
        import torch

        if self.intervention is not None:  # its passes run the model's modules, unhooked
            raise UsageError(f"{self.name}: raw texts (retrieval) are encoded without an "
                             "intervention in the forward pass; intervene on word-split "
                             "sentences (encode)")
        st = self.st
        texts = list(texts)
        prompt = _default_prompt(st)
        if prompt and any(s != e for s, e in spans):
            raise NcprobeError(f"{self.name}: the model prepends a default prompt "
                               f"({st.default_prompt_name!r}) to every text; pooling a span "
                               "of such a model is not supported")
        wanted = [i for i, (s, e) in enumerate(spans) if e > s]
        features, offsets = self._preprocess(st, texts, prompt, with_offsets=bool(wanted))
        device = st.device
        features = {k: v.to(device) if hasattr(v, "to") else v for k, v in features.items()}
        with torch.inference_mode():
            out = st.forward(features)
        sent = out["sentence_embedding"].float().cpu().numpy()[:, None, :]
        states = out["token_embeddings"]
        span = np.full((len(texts), 1, states.shape[-1]), np.nan, dtype=np.float32)
        missing = np.zeros(len(texts), dtype=np.int32)
        if wanted:
            if offsets is None:  # a sentence-transformers without processing options
                limit = int(getattr(st[0], "max_seq_length", None) or self.tokens.max_length)
                offsets = self._offsets(texts, features["input_ids"], limit)
            redo = []
            for i in wanted:
                rows = _overlapping(offsets[i], spans[i])
                if rows.size:
                    span[i, 0] = states[i, rows].float().mean(0).cpu().numpy()
                else:  # truncated away (or no token there): tried on a longer pass below
                    redo.append(i)
            if redo:
                self._pool_long(texts, spans, redo, span)
            for i in wanted:
                missing[i] = int(np.isnan(span[i, 0, 0]))
        return Encoded(sent.astype(np.float32), span, np.zeros(len(texts), dtype=np.int32),
                       missing)

    @staticmethod
    def _preprocess(st, texts: list[str], prompt: str | None, *, with_offsets: bool):
        """The pipeline's features of ``texts`` and, when asked and the pipeline can give
        them in the same tokenisation (sentence-transformers >= 6), each text's token
        offsets (rows of -1 for padding); else ``None`` offsets."""
        kw = {"prompt": prompt} if prompt else {}
        if with_offsets:
            try:
                features = dict(st.preprocess(texts, processing_kwargs={
                    "text": {"return_offsets_mapping": True}}, **kw))
            except TypeError:  # no processing options: offsets from a second tokenisation
                pass
            else:
                if "offset_mapping" in features:
                    off = features.pop("offset_mapping").cpu().numpy().astype(np.int64)
                    mask = features["attention_mask"].cpu().numpy().astype(bool)
                    off[~mask] = -1
                    return features, list(off)
        return dict(st.preprocess(texts, **kw)), None

    def _offsets(self, texts: list[str], input_ids, limit: int) -> list[np.ndarray]:
        """Per text, the character offsets of its non-special tokens (rows: token positions,
        -1 rows for special and padding tokens), from the model's tokenizer with the same
        truncation as its pipeline; refuses a tokenisation that differs from the
        pipeline's, whose token positions would then not be the states' positions."""
        tok = self.tokens.tokenizer
        enc = tok(texts, padding=True, truncation=True, max_length=limit,
                  return_offsets_mapping=True, return_special_tokens_mask=True,
                  return_tensors="np")
        ids = enc["input_ids"]
        given = input_ids.cpu().numpy()
        width = min(ids.shape[1], given.shape[1])
        mask = enc["attention_mask"].astype(bool)
        if ids.shape[1] > given.shape[1] or (ids[:, :width] != given[:, :width])[
                mask[:, :width]].any():
            raise NcprobeError(f"{self.name}: its tokenizer's offsets do not match the token "
                               "positions of its sentence-transformers pipeline; spans cannot "
                               "be pooled for this model")
        special = enc["special_tokens_mask"].astype(bool) | ~mask
        out = []
        for i in range(len(texts)):
            off = enc["offset_mapping"][i].astype(np.int64)
            off[special[i]] = -1
            out.append(off)
        return out

    def _pool_long(self, texts: list[str], spans, rows: list[int], span: np.ndarray) -> None:
        """Span vectors of texts longer than the pipeline's truncation: the transformer alone,
        truncated at :data:`SPAN_TRUNCATION` tokens (or the position limit)."""
        import torch

        tokens = self.tokens
        # the model's positions, not the tokenizer's limit (which the pipeline may have set
        # to its own truncation)
        positions = getattr(tokens.model.config, "max_position_embeddings", None)
        limit = min(SPAN_TRUNCATION, int(positions or SPAN_TRUNCATION))
        tok = tokens.tokenizer
        for i in rows:
            enc = tok([texts[i]], truncation=True, max_length=limit,
                      return_offsets_mapping=True, return_special_tokens_mask=True,
                      return_tensors="pt")
            off = enc.pop("offset_mapping")[0].numpy().astype(np.int64)
            off[enc.pop("special_tokens_mask")[0].numpy().astype(bool)] = -1
            sel = _overlapping(off, spans[i])
            if sel.size == 0:
                continue  # beyond the limit too: NaN, counted by the caller
            inputs = {k: v.to(tokens.model.device) for k, v in enc.items()
                      if k in ("input_ids", "attention_mask", "token_type_ids")}
            with torch.inference_mode():
                states = tokens.model(**inputs).last_hidden_state[0]
            span[i, 0] = states[sel].float().mean(0).cpu().numpy()


#: Span pooling of raw text truncates a text at this many tokens (the IdioLink protocol).
SPAN_TRUNCATION = 512


def _overlapping(offsets: np.ndarray, span: tuple[int, int]) -> np.ndarray:
    """Token positions whose character offsets ``(a, b)`` overlap ``[start, end)``:
    ``a < end`` and ``b > start`` (the benchmark's rule), special tokens (offsets ``(0, 0)``)
    and padding (rows of -1) excluded."""
    start, end = span
    a, b = offsets[:, 0], offsets[:, 1]
    special = (a == 0) & (b == 0)
    return np.flatnonzero((a >= 0) & ~special & (a < end) & (b > start))


def _default_prompt(st) -> str | None:
    """The prompt ``SentenceTransformer.encode`` prepends when given none (``None``: none)."""
    name = getattr(st, "default_prompt_name", None)
    return (getattr(st, "prompts", None) or {}).get(name) if name else None


#: The package whose modules a ``modules.json`` may name (``trust_remote_code`` is never set).
LIBRARY_PREFIX = "sentence_transformers."


def check_modules(model_id: str, revision: str | None = None) -> None:
    """Refuse a model whose ``modules.json`` names a module outside sentence-transformers.

    Such a ``type`` (``os.system``, ``mypkg.Evil``) is code that loading would import
    and run; sentence-transformers itself refuses it without ``trust_remote_code``, which
    ncprobe never sets. Checked here first, so the error names the file and the entry.

    Raises:
        ModelUnavailableError: an entry is not a module of the library, or the file is
            not a list of modules (exit 5, naming ``modules.json``).
    """
    local = Path(model_id).expanduser()
    path = local / "modules.json" if local.is_dir() else hub_file(model_id, "modules.json",
                                                                   revision)
    if path is None or not path.is_file():
        return  # no modules.json: sentence-transformers builds a plain transformer + pooling
    try:
        modules = json.loads(path.read_text(encoding="utf-8"))
        kinds = [(i, str(m["type"])) for i, m in enumerate(modules)]
    except (OSError, UnicodeDecodeError, ValueError, LookupError, TypeError) as e:
        raise ModelUnavailableError(f"{path}: not a readable list of modules ({e}); the model "
                                    "is damaged: download or save it again") from e
    foreign = [f"entry {i}: {kind!r}" for i, kind in kinds if not kind.startswith(LIBRARY_PREFIX)]
    if foreign:
        raise ModelUnavailableError(
            f"{path} names module(s) outside sentence-transformers ({'; '.join(foreign)}): "
            "loading them would import and run code from the model, which ncprobe never does "
            "(no trust_remote_code). Use a model made of sentence-transformers' own modules")


def describe_st(model_id: str, revision: str | None = None) -> ModelFiles | None:
    """The transformer config and snapshot of a sentence-transformers model, from its files.

    ``modules.json`` names the modules; the first must be a ``Transformer`` module, whose
    ``config.json`` lies in its ``path`` (``""``: the model's root). ``None`` when the
    files cannot be had, ``config=None`` when they do not say enough (then the model is
    loaded, and reports what is wrong).
    """
    local = Path(model_id).expanduser()
    modules_path: Path | None
    commit: str | None
    if local.is_dir():
        modules_path, commit = local / "modules.json", None
    else:
        modules_path = hub_file(model_id, "modules.json", revision)
        if modules_path is None:
            return None
        commit = snapshot_commit(modules_path, "modules.json")
        if commit is None:
            return None
    unknown = ModelFiles(None, str(modules_path), commit)
    try:
        modules = json.loads(modules_path.read_text(encoding="utf-8"))
        first = modules[0]
        kind, sub = str(first["type"]), str(first.get("path") or "")
    except (OSError, UnicodeDecodeError, ValueError, LookupError, TypeError, AttributeError):
        return unknown
    if kind.rsplit(".", 1)[-1] != "Transformer" or sub.startswith(("/", ".")) or ".." in sub:
        return unknown
    desc = describe_model(model_id, commit or revision, subfolder=sub.strip("/"))
    if desc is None or desc.commit != commit:
        return unknown
    return desc
