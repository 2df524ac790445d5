"""sentence-transformers models (``distiluse-base-multilingual-cased``, all-MiniLM-L6-v2 ...).

* Sentence level: the model's own sentence embedding: its modules after the
  transformer (pooling, any Dense layer, normalisation) applied to the same
  forward pass, which equals ``SentenceTransformer.encode`` of the words joined
  by spaces (tested); the same vector for every layer view.
* NC level: the token states of the model's transformer module, pooled like any
  HF encoder (sub-token -> word -> span means over the chosen layers).
* ``dtype``: the transformer module's weights are cast to it (``float16``/``bfloat16``);
  the modules after it (pooling, Dense, normalisation) stay float32 and get float32
  token states, as every pooling of ncprobe is float32.
* The model is loaded on the first encode: its name, size, views and fingerprint come
  from ``modules.json``, the transformer's ``config.json`` and the files' identity, so
  a run whose vectors are all cached loads nothing (as :class:`~ncprobe.encoders.hf.HFEncoder`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Sequence

import numpy as np

from ..errors import ModelUnavailableError, NcprobeError
from ._env import hf_unavailable, parse_dtype, require_hf, torch_device
from .base import Encoded
from .hf import (
    FORMAT_VERSION,
    HFEncoder,
    ModelFiles,
    attr_getter,
    check_loaded,
    config_shape,
    config_sizes,
    describe_model,
    hub_file,
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

    levels = ("sent", "nc")
    #: the load_encoder options that change the vectors (see HFEncoder.OPTIONS)
    OPTIONS: ClassVar[dict] = {"layers": None, "device": None, "dtype": None, "revision": None}
    OPTIONS_NOTE = "a sentence-transformers model runs on one device (no device_map)"

    def __init__(self, model_id: str, *, layers=None, device: str | None = None,
                 dtype: str | None = None, name: str | None = None,
                 revision: str | None = None) -> None:
        # torch, transformers, sentence-transformers: not in a plain `pip install ncprobe`
        require_hf(name or model_id, "sbert")
        self.dtype = parse_dtype(dtype)
        self.name = name or model_id
        self.model_id, self.revision = model_id, revision
        self._layers, self._dtype_arg = layers, dtype
        self._device_arg, self._device = device, None
        if device is not None and device != "cpu":  # asked for: a missing device fails now
            self._device = str(torch_device(device, self.name))
        # both set by _load, on first use
        self._st: SentenceTransformer | None = None
        self._tokens: HFEncoder | None = None
        self._identity: str | None = None
        desc = describe_st(model_id, revision)
        self._desc = desc
        if desc is None or desc.config is None:  # files ncprobe cannot read: load now
            self._load()
            return
        _, self.dim, _, self.views = config_shape(desc.config_get, layers)

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
        check_modules(model_id, revision)  # before anything is imported from the model
        try:
            st = SentenceTransformer(model_id, device=device, revision=revision,
                                     trust_remote_code=False)
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
            self.views, self.dim = tokens.views, tokens.dim
        if desc is None:  # transformers 4 records the snapshot it loaded
            self._desc = ModelFiles(None, model_id,
                                    getattr(auto_model.config, "_commit_hash", None))
        self._st, self._tokens = st, tokens

    def fingerprint(self) -> dict:
        if self._identity is None:  # hashing a large directory: once
            commit = self._desc.commit if self._desc is not None else None
            self._identity = self.revision or weights_identity(self.model_id, commit)
        return {"family": "sbert", "model": self.model_id, "name": self.name,
                "revision": self._identity,
                "views": self.views, "dtype": self.dtype,
                "pooling": "st-sentence/subtoken-mean-span", "format": FORMAT_VERSION}

    def encode(self, sentences: Sequence[Sequence[str]], spans: Sequence[tuple[int, int]]
               ) -> Encoded:
        import torch

        st, tokens = self.st, self.tokens
        inputs, word_ids, out = tokens.forward(sentences)
        enc = tokens.pool(out, word_ids, sentences, spans)
        # the sentence embedding: the model's own modules after the transformer (pooling,
        # dense, normalise) on the same forward pass, as SentenceTransformer.encode computes it
        features = {"token_embeddings": out.last_hidden_state.float(),
                    "attention_mask": inputs["attention_mask"]}
        with torch.inference_mode():
            for module in list(st)[1:]:
                features = module(features)
        sent = features["sentence_embedding"].float().cpu().numpy()
        sent = np.repeat(sent[:, None, :], len(self.views), axis=1)
        return Encoded(sent, enc.span, enc.missing_words, enc.missing_span_words)


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
