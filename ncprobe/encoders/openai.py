"""OpenAI-style embedding APIs (``text-embedding-ada-002`` in the study): sentence level only.

The key is read from ``$OPENAI_API_KEY`` (never from a file in the project);
``$OPENAI_BASE_URL`` or ``base_url`` points at another compatible server. A
request embeds one batch of sentences (the words joined by spaces). 429 and
5xx answers and network errors are retried with exponential backoff; a 401
stops at once with a clear message. The API gives no token states, so span
(NC-level) vectors are NaN and the encoder declares ``levels = ("sent",)``.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from typing import Sequence

import numpy as np

from ..errors import ModelUnavailableError, NcprobeError
from .base import Encoded

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIEncoder:
    levels = ("sent",)
    views = ((0,),)
    #: no layers: results show ``layers`` as "-"
    view_names = ("-",)
    #: load_encoder options: none applies (load_encoder refuses layers, device and dtype)
    OPTIONS: dict = {}
    OPTIONS_NOTE = ("a remote embedding API has no layers, and its device and precision are "
                    "the server's")

    def __init__(self, model: str = "text-embedding-ada-002", *, base_url: str | None = None,
                 api_key: str | None = None, retries: int = 5, backoff: float = 1.0,
                 timeout: float = 60.0, name: str | None = None) -> None:
        self.model = model
        self.name = name or model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
                         ).rstrip("/")
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if not self.api_key:
            raise ModelUnavailableError("the OpenAI encoder needs an API key: set OPENAI_API_KEY")
        self.retries, self.backoff, self.timeout = retries, backoff, timeout
        self.dim = 0  # known after the first answer

    def fingerprint(self) -> dict:
        return {"family": "openai", "name": self.name, "model": self.model,
                "base_url": self.base_url, "format": 1}

    def encode(self, sentences: Sequence[Sequence[str]], spans: Sequence[tuple[int, int]]
               ) -> Encoded:
        data = self._post({"model": self.model, "input": [" ".join(s) for s in sentences]})
        rows = sorted(data["data"], key=lambda d: d["index"])
        if len(rows) != len(sentences):
            raise NcprobeError(f"{self.base_url}: asked for {len(sentences)} embeddings, got "
                               f"{len(rows)}")
        sent = np.array([r["embedding"] for r in rows], dtype=np.float32)[:, None, :]
        self.dim = sent.shape[-1]
        n = len(sentences)
        return Encoded(sent, np.full_like(sent, np.nan), np.zeros(n, np.int32),
                       np.zeros(n, np.int32))

    def _post(self, payload: dict) -> dict:
        body = json.dumps(payload).encode()
        url = f"{self.base_url}/embeddings"
        for attempt in range(self.retries + 1):
            req = urllib.request.Request(url, data=body, method="POST", headers={
                "Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310
                    return json.loads(resp.read())
            except urllib.error.HTTPError as e:
                if e.code == 401:
                    raise NcprobeError(f"{url}: 401 Unauthorized: the API key in OPENAI_API_KEY "
                                       "was refused") from e
                if e.code != 429 and e.code < 500:
                    raise NcprobeError(f"{url}: HTTP {e.code}: {e.read()[:300]!r}") from e
                err: Exception = e
            except (urllib.error.URLError, OSError) as e:
                err = e
            if attempt < self.retries:
                time.sleep(self.backoff * 2**attempt)
        raise NcprobeError(f"{url}: gave up after {self.retries + 1} attempts: {err}")
