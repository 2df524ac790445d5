"""OpenAI-style embedding APIs (``text-embedding-ada-002`` in the study): sentence level only.

Requests go through the official ``openai`` package (the ``openai`` extra:
``pip install 'ncprobe[openai]'``), which owns the HTTP side: connection
pooling, timeouts, and retries with exponential backoff and jitter of 408, 409,
429, 5xx answers and network errors, honouring the server's ``Retry-After``.
ncprobe only maps the client's errors to its own (see :meth:`OpenAIEncoder.encode`)
and checks the answer. The package is imported on the first request, so that
``import ncprobe`` and a rerun whose vectors are all cached work without it.

The key is read from ``$OPENAI_API_KEY`` (never from a file in the project);
``$OPENAI_BASE_URL`` or ``base_url`` points at another compatible server. A
request embeds one batch of sentences (the words joined by spaces), asking for
``encoding_format="float"`` as the hand-written client before it did (the
package's default, base64, is not served by every compatible server). The API
gives no token states, so span (NC-level) vectors are NaN and the encoder
declares ``levels = ("sent",)``.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
from typing import Any, Sequence

import numpy as np

from ..errors import ModelUnavailableError, NcprobeError
from .base import Encoded

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
INSTALL_HINT = "pip install 'ncprobe[openai]'"


#: The environment variable that holds the key.
KEY_VARIABLE = "OPENAI_API_KEY"


def requirements_missing(api_key: str | None, variable: str = KEY_VARIABLE) -> str | None:
    """What the encoder lacks here, else None: the key (``api_key`` ``None`` or empty: the
    environment variable ``variable`` is not set) or the package openai."""
    missing = []
    if not api_key:
        missing.append(f"an API key: set {variable}")
    # find_spec, not import: importing openai costs about a second, which a rerun whose
    # vectors are all cached does not need to pay
    if importlib.util.find_spec("openai") is None:
        missing.append(f"the package openai: {INSTALL_HINT}")
    return "the OpenAI encoder needs " + " and ".join(missing) if missing else None


class OpenAIEncoder:
    """Sentence embeddings from an OpenAI-compatible ``/embeddings`` endpoint.

    Args:
        model: the API's model id.
        base_url: the API root (default ``$OPENAI_BASE_URL``, else the OpenAI API).
        api_key: the key (default ``$OPENAI_API_KEY``).
        retries: retries after the first attempt, left to the ``openai`` client
            (``max_retries``).
        timeout: seconds per attempt (connect, read, write, pool).
        name: the user-facing name (default ``model``).

    Raises:
        ModelUnavailableError: no key, or the ``openai`` package is not installed (exit 5).
    """

    levels = ("sent",)
    views = ((0,),)
    #: no layers: results show ``layers`` as "-"
    view_names = ("-",)
    #: load_encoder options: none applies (load_encoder refuses layers, device and dtype)
    OPTIONS: dict = {}
    OPTIONS_NOTE = ("a remote embedding API has no layers, and its device and precision are "
                    "the server's")

    def __init__(self, model: str = "text-embedding-ada-002", *, base_url: str | None = None,
                 api_key: str | None = None, retries: int = 5, timeout: float = 60.0,
                 name: str | None = None) -> None:
        self.model = model
        self.name = name or model
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
                         ).rstrip("/")
        self.api_key = api_key or os.environ.get(KEY_VARIABLE)
        why = requirements_missing(self.api_key)
        if why:
            raise ModelUnavailableError(why)
        self.retries, self.timeout = retries, timeout
        self.dim = 0  # known after the first answer
        self._client: Any = None
        self._attempts = 0

    def fingerprint(self) -> dict:
        # unchanged from the hand-written client (format 1): the request and the float32
        # conversion of the answer are the same, so cached vectors stay valid
        return {"family": "openai", "name": self.name, "model": self.model,
                "base_url": self.base_url, "format": 1}

    @property
    def url(self) -> str:
        return f"{self.base_url}/embeddings"

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError as e:  # installed after find_spec, but broken
                raise ModelUnavailableError(f"the OpenAI encoder could not import the package "
                                            f"openai ({e}): {INSTALL_HINT}") from e

            def count(_request: Any) -> None:
                # the client retries on its own: count the attempts for the error messages
                self._attempts += 1

            self._client = openai.OpenAI(
                api_key=self.api_key, base_url=self.base_url, max_retries=self.retries,
                timeout=self.timeout,
                http_client=openai.DefaultHttpxClient(timeout=self.timeout,
                                                      event_hooks={"request": [count]}))
        return self._client

    def encode(self, sentences: Sequence[Sequence[str]], spans: Sequence[tuple[int, int]]
               ) -> Encoded:
        """Embed one batch in one request (the client retries it).

        Raises:
            ModelUnavailableError: the key was refused (401) or lacks access (403), the
                server has no such model (404), or the server stayed unreachable, timed
                out or busy (429, 5xx) through every retry (exit 5).
            NcprobeError: any other refusal (e.g. 400), or an answer that is not one finite
                embedding of one size per sentence.
        """
        client = self._get_client()
        import openai  # imported by _get_client, which says what to do when it cannot be

        self._attempts = 0
        try:
            resp = client.embeddings.create(model=self.model,
                                            input=[" ".join(s) for s in sentences],
                                            encoding_format="float")
        except openai.APIError as e:
            raise self._error(e) from e
        except ValueError as e:  # the client could not parse the body (not JSON)
            raise NcprobeError(f"{self.url}: the answer is not valid JSON ({e}); is "
                               f"{self.base_url} an OpenAI-compatible API?") from e
        sent = self._vectors(resp, len(sentences))[:, None, :]
        self.dim = sent.shape[-1]
        n = len(sentences)
        return Encoded(sent, np.full_like(sent, np.nan), np.zeros(n, np.int32),
                       np.zeros(n, np.int32))

    def _error(self, e: Exception) -> NcprobeError:
        """ncprobe's error for one of the client's (after its retries)."""
        import openai

        tries = f"after {self._attempts} attempt{'s' if self._attempts != 1 else ''}"
        url = self.url
        if isinstance(e, openai.AuthenticationError):
            return ModelUnavailableError(
                f"{url}: 401 Unauthorized: the API key in OPENAI_API_KEY was refused. Set "
                "OPENAI_API_KEY to a valid key for this server (OPENAI_BASE_URL)")
        if isinstance(e, openai.PermissionDeniedError):
            return ModelUnavailableError(
                f"{url}: 403 Forbidden: the key has no access to model {self.model!r} (or its "
                f"organisation, project or region is not allowed): {_detail(e)}. Use a key "
                "with access to this model")
        if isinstance(e, openai.NotFoundError):
            return ModelUnavailableError(
                f"{url}: 404 Not Found: the server has no model {self.model!r} or no "
                f"/embeddings endpoint: {_detail(e)}. Check the model and OPENAI_BASE_URL")
        if isinstance(e, openai.APITimeoutError):
            return ModelUnavailableError(
                f"{url}: gave up {tries}: no answer within {self.timeout:g} s. Try again later, "
                "or check the network and OPENAI_BASE_URL")
        if isinstance(e, openai.APIConnectionError):
            cause = e.__cause__ or e
            return ModelUnavailableError(
                f"{url}: gave up {tries}: the connection failed ({cause}). Check the "
                "network connection, a proxy (HTTPS_PROXY) and OPENAI_BASE_URL")
        if isinstance(e, openai.APIStatusError):
            what = f"HTTP {e.status_code}: {_detail(e)}"
            if e.status_code in (408, 409, 429) or e.status_code >= 500:
                return ModelUnavailableError(
                    f"{url}: gave up {tries}: {what}. The service is busy, rate-limited, out "
                    "of quota or down: try again later (a rerun resumes from the cache)")
            return NcprobeError(f"{url}: the request was refused: {what}. If the batch is too "
                                "large for this server, lower --batch-size")
        return NcprobeError(f"{url}: {type(e).__name__}: {e}")

    def _vectors(self, resp: Any, n: int) -> np.ndarray:
        """The ``(n, dim)`` float32 embeddings of an answer, in the order of the input."""
        rows = getattr(resp, "data", None)
        if not isinstance(rows, list):
            raise NcprobeError(f"{self.url}: malformed answer: no 'data' list of embeddings "
                               f"(got {type(resp).__name__}: {str(resp)[:200]})")
        try:
            pairs = sorted(((r.index, r.embedding) for r in rows), key=lambda p: p[0])
        except (AttributeError, TypeError) as e:
            raise NcprobeError(f"{self.url}: malformed answer: every item of 'data' needs an "
                               f"integer 'index' and an 'embedding' ({e})") from e
        if [i for i, _ in pairs] != list(range(n)):
            raise NcprobeError(f"{self.url}: asked for {n} embeddings (indices 0..{n - 1}), got "
                               f"{len(pairs)} with indices "
                               f"{[i for i, _ in pairs][:10]}")
        emb = [v for _, v in pairs]
        if not all(isinstance(v, list) and v and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                for x in v) for v in emb) or len({len(v) for v in emb}) > 1:
            raise NcprobeError(f"{self.url}: malformed answer: each 'embedding' must be a "
                               "non-empty list of finite numbers, all of one length")
        return np.array(emb, dtype=np.float32)


def _detail(e: Any) -> str:
    """The server's message of an API error (its ``error.message``, else the body), shortened."""
    body = getattr(e, "body", None)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"][:300]
    return str(body if body else getattr(e, "message", e))[:300]
