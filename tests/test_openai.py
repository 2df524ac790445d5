"""The OpenAI-style API encoder against a fake server on 127.0.0.1."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ncprobe.encoders.openai import OpenAIEncoder
from ncprobe.errors import NcprobeError

from .local_http import QuietHandler, serve


class _Fake(QuietHandler):
    script: list[int]  # status codes to answer before succeeding
    requests: list[dict]

    def do_POST(self) -> None:  # noqa: N802
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append({"auth": self.headers["Authorization"], **payload})
        if self.headers["Authorization"] != "Bearer good-key":
            self.send_error(401)
            return
        if self.script:
            self.send_error(self.script.pop(0))
            return
        # a deterministic "embedding": letter counts of the sentence
        data = [{"index": i, "embedding": [float(t.count(c)) for c in "aeiou"]}
                for i, t in enumerate(payload["input"])][::-1]  # out of order on purpose
        self.reply(json.dumps({"data": data}).encode())


@pytest.fixture
def fake():
    with serve(_Fake, script=[], requests=[]) as (url, handler):
        yield url + "/v1", handler


def test_batches_and_order(fake, monkeypatch) -> None:
    url, handler = fake
    monkeypatch.setenv("OPENAI_API_KEY", "good-key")
    enc = OpenAIEncoder(base_url=url, backoff=0)
    out = enc.encode([["a", "banana"], ["eerie", "oui"]], [(0, 1), (1, 2)])
    np.testing.assert_array_equal(out.sent[:, 0], [[4, 0, 0, 0, 0], [0, 3, 2, 1, 1]])
    assert np.isnan(out.span).all() and enc.levels == ("sent",)
    assert handler.requests[0]["input"] == ["a banana", "eerie oui"]
    assert handler.requests[0]["model"] == "text-embedding-ada-002"


def test_retries_429_and_5xx(fake, monkeypatch) -> None:
    url, handler = fake
    handler.script = [429, 503]
    enc = OpenAIEncoder(base_url=url, api_key="good-key", backoff=0, retries=2)
    assert enc.encode([["x"]], [(0, 1)]).sent.shape == (1, 1, 5)
    assert len(handler.requests) == 3
    handler.script = [500, 500, 500]
    with pytest.raises(NcprobeError, match="gave up after 3 attempts"):
        enc.encode([["x"]], [(0, 1)])


def test_401_is_clear_and_not_retried(fake) -> None:
    url, handler = fake
    enc = OpenAIEncoder(base_url=url, api_key="bad-key", backoff=0)
    with pytest.raises(NcprobeError, match="401 Unauthorized"):
        enc.encode([["x"]], [(0, 1)])
    assert len(handler.requests) == 1


def test_key_is_required(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(NcprobeError, match="OPENAI_API_KEY"):
        OpenAIEncoder()
