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
"""

from __future__ import annotations

from typing import ClassVar, Sequence

import numpy as np

from ..errors import ModelUnavailableError, NcprobeError, UsageError
from .base import Encoded, torch_device
from .hf import _DTYPES, FORMAT_VERSION, HFEncoder, _weights_identity


class SBertEncoder:
    levels = ("sent", "nc")
    #: the load_encoder options that change the vectors (see HFEncoder.OPTIONS)
    OPTIONS: ClassVar[dict] = {"layers": None, "device": None, "dtype": None, "revision": None}
    OPTIONS_NOTE = "a sentence-transformers model runs on one device (no device_map)"

    def __init__(self, model_id: str, *, layers=None, device: str | None = None,
                 dtype: str | None = None, name: str | None = None,
                 revision: str | None = None) -> None:
        if _DTYPES.get(dtype or "float32") is None:
            raise UsageError(f"--dtype {dtype!r} is not a dtype; use float32, float16 or "
                             "bfloat16")
        device = str(torch_device(device, name or model_id))  # before the slow import
        from sentence_transformers import SentenceTransformer

        try:
            self.st = SentenceTransformer(model_id, device=device, revision=revision,
                                          trust_remote_code=False)
        except OSError as e:
            raise ModelUnavailableError(f"could not load sentence-transformers model "
                                        f"{model_id!r}: {e}") from e
        module = self.st[0]
        auto_model = getattr(module, "auto_model", None) or getattr(module, "model", None)
        if auto_model is None or not hasattr(module, "tokenizer"):
            raise NcprobeError(f"{model_id}: the first module is not a transformer; NC-level "
                               "vectors need token states")
        self.tokens = HFEncoder(model_id, layers=layers, device=device, dtype=dtype,
                                tokenizer=module.tokenizer, model=auto_model, name=name)
        self.name = name or model_id
        self.model_id, self.revision = model_id, revision
        self.views = self.tokens.views
        self.dim = self.tokens.dim
        get_dim = getattr(self.st, "get_embedding_dimension", None) or \
            self.st.get_sentence_embedding_dimension
        self.sent_dim = int(get_dim() or self.dim)

    def fingerprint(self) -> dict:
        if getattr(self, "_identity", None) is None:  # hashing a large directory: once
            self._identity = self.revision or _weights_identity(self.model_id,
                                                                self.tokens.model.config)
        return {"family": "sbert", "model": self.model_id, "name": self.name,
                "revision": self._identity,
                "views": self.views, "dtype": self.tokens.dtype,
                "pooling": "st-sentence/subtoken-mean-span", "format": FORMAT_VERSION}

    def encode(self, sentences: Sequence[Sequence[str]], spans: Sequence[tuple[int, int]]
               ) -> Encoded:
        import torch

        inputs, word_ids, out = self.tokens.forward(sentences)
        enc = self.tokens.pool(out, word_ids, sentences, spans)
        # the sentence embedding: the model's own modules after the transformer (pooling,
        # dense, normalise) on the same forward pass, as SentenceTransformer.encode computes it
        features = {"token_embeddings": out.last_hidden_state.float(),
                    "attention_mask": inputs["attention_mask"]}
        with torch.inference_mode():
            for module in list(self.st)[1:]:
                features = module(features)
        sent = features["sentence_embedding"].float().cpu().numpy()
        sent = np.repeat(sent[:, None, :], len(self.views), axis=1)
        return Encoded(sent, enc.span, enc.missing_words, enc.missing_span_words)
