"""The OpenAI-style API encoder (the official ``openai`` client) against a fake server on
127.0.0.1: batching and order, the client's retries, and each failure mapped to ncprobe's
errors and exit codes. Nothing here touches the network.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading

import numpy as np
import pytest

from ncprobe.encoders.openai import OpenAIEncoder
from ncprobe.errors import ModelUnavailableError, NcprobeError

from ..local_http import QuietHandler, serve


class _Fake(QuietHandler):
    script: list  # status codes (or "hang", or a raw body) to answer before succeeding
    requests: list[dict]
    release: threading.Event

    def do_POST(self) -> None:  # noqa: N802
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.requests.append({"auth": self.headers["Authorization"], **payload})
        if self.headers["Authorization"] != "Bearer good-key":
            self._answer(401, {"error": {"message": "Incorrect API key provided"}})
            return
        if self.script:
            step = self.script.pop(0)
            if step == "hang":   # no answer until the test ends: the client's timeout fires
                self.release.wait(10)
                return
            if isinstance(step, bytes):
                self._answer(200, step)
                return
            self._answer(step, {"error": {"message": f"scripted {step}"}})
            return
        # a deterministic "embedding": vowel counts of the sentence
        data = [{"index": i, "embedding": [float(t.count(c)) for c in "aeiou"]}
                for i, t in enumerate(payload["input"])][::-1]  # out of order on purpose
        self._answer(200, {"data": data})

    def _answer(self, status: int, body) -> None:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        # a real API sends Retry-After on 429/503; 1 ms keeps the client's retries fast
        self.send_header("retry-after-ms", "1")
        self.end_headers()
        self.wfile.write(raw)


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch):
    # the client honours proxy variables: a proxy set in the environment must not see (or
    # break) requests to the fake server on 127.0.0.1
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def fake():
    pytest.importorskip("openai")
    release = threading.Event()
    with serve(_Fake, script=[], requests=[], release=release) as (url, handler):
        yield url + "/v1", handler
        release.set()


def _enc(url: str, **kw) -> OpenAIEncoder:
    pytest.importorskip("openai")
    kw.setdefault("api_key", "good-key")
    kw.setdefault("timeout", 5.0)
    kw.setdefault("retries", 0)
    return OpenAIEncoder(base_url=url, **kw)


def test_batches_and_order(fake, monkeypatch) -> None:
    url, handler = fake
    monkeypatch.setenv("OPENAI_API_KEY", "good-key")
    enc = OpenAIEncoder(base_url=url, retries=0, timeout=5.0)
    out = enc.encode([["a", "banana"], ["eerie", "oui"]], [(0, 1), (1, 2)])
    # by hand: "a banana" has 4 a's; "eerie oui" has 3 e's, 2 i's, 1 o, 1 u
    np.testing.assert_array_equal(out.sent[:, 0], [[4, 0, 0, 0, 0], [0, 3, 2, 1, 1]])
    assert out.sent.dtype == np.float32 and out.sent.shape == (2, 1, 5) and enc.dim == 5
    assert np.isnan(out.span).all() and enc.levels == ("sent",)
    assert handler.requests[0]["input"] == ["a banana", "eerie oui"]
    assert handler.requests[0]["model"] == "text-embedding-ada-002"
    assert handler.requests[0]["auth"] == "Bearer good-key"
    # floats, as the hand-written client asked for: a compatible server need not do base64
    assert handler.requests[0]["encoding_format"] == "float"


def test_env_base_url_and_unchanged_fingerprint(fake, monkeypatch) -> None:
    url, handler = fake
    monkeypatch.setenv("OPENAI_API_KEY", "good-key")
    monkeypatch.setenv("OPENAI_BASE_URL", url + "/")
    enc = OpenAIEncoder(name="openai", retries=0, timeout=5.0)
    assert enc.encode([["u"]], [(0, 1)]).sent[0, 0].tolist() == [0, 0, 0, 0, 1]
    assert len(handler.requests) == 1
    # the fingerprint of the hand-written client: vectors cached before stay valid
    assert enc.fingerprint() == {"family": "openai", "name": "openai",
                                 "model": "text-embedding-ada-002", "base_url": url,
                                 "format": 1}


def test_retries_429_and_5xx(fake) -> None:
    url, handler = fake
    handler.script = [429, 503]
    enc = _enc(url, retries=2)
    assert enc.encode([["x"]], [(0, 1)]).sent.shape == (1, 1, 5)
    assert len(handler.requests) == 3
    handler.script = [500, 500, 500]
    with pytest.raises(ModelUnavailableError, match="gave up after 3 attempts: HTTP 500") as e:
        enc.encode([["x"]], [(0, 1)])
    assert e.value.exit_code == 5 and len(handler.requests) == 6


def test_401_is_clear_and_not_retried(fake) -> None:
    url, handler = fake
    enc = _enc(url, api_key="bad-key", retries=3)
    with pytest.raises(ModelUnavailableError, match="401 Unauthorized.*OPENAI_API_KEY") as e:
        enc.encode([["x"]], [(0, 1)])
    assert e.value.exit_code == 5 and len(handler.requests) == 1


@pytest.mark.parametrize("status, match, exit_code", [
    (403, "403 Forbidden: the key has no access to model 'text-embedding-ada-002'", 5),
    (404, "404 Not Found.*Check the model and OPENAI_BASE_URL", 5),
    (400, "refused: HTTP 400: scripted 400.*--batch-size", 1),
])
def test_other_refusals_are_mapped_and_not_retried(fake, status, match, exit_code) -> None:
    url, handler = fake
    handler.script = [status]
    with pytest.raises(NcprobeError, match=match) as e:
        _enc(url, retries=3).encode([["x"]], [(0, 1)])
    assert e.value.exit_code == exit_code and len(handler.requests) == 1


def test_unreachable_server_is_exit_5() -> None:
    with socket.socket() as s:   # a port with nothing listening: connection refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ModelUnavailableError, match="gave up after 1 attempt: the connection "
                       "failed.*OPENAI_BASE_URL") as e:
        _enc(f"http://127.0.0.1:{port}/v1").encode([["x"]], [(0, 1)])
    assert e.value.exit_code == 5


def test_timeout_is_exit_5(fake) -> None:
    url, handler = fake
    handler.script = ["hang"]
    with pytest.raises(ModelUnavailableError, match="after 1 attempt: no answer within 0.3 s"):
        _enc(url, timeout=0.3).encode([["x"]], [(0, 1)])


@pytest.mark.parametrize("body, match", [
    (b"<html>proxy login</html>", "not valid JSON"),
    (b'{"object": "list"}', "no 'data' list"),
    (b'{"data": [{"index": 0, "embedding": [1.0, 2.0]}]}', r"asked for 2 embeddings"),
    (b'{"data": [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [2.0]}]}',
     r"indices \[0, 0\]"),
    (b'{"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0, 2]}]}',
     "all of one length"),
    (b'{"data": [{"index": 0, "embedding": "AAAA"}, {"index": 1, "embedding": "AAAA"}]}',
     "list of finite numbers"),
    (b'{"data": [{"index": 0, "embedding": [NaN]}, {"index": 1, "embedding": [1.0]}]}',
     "list of finite numbers"),
])
def test_malformed_answers_are_clear_errors(fake, body, match) -> None:
    url, handler = fake
    handler.script = [body]
    with pytest.raises(NcprobeError, match=match) as e:
        _enc(url).encode([["a"], ["b"]], [(0, 1), (0, 1)])
    assert type(e.value) is NcprobeError and url in str(e.value)


def test_key_is_required(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ModelUnavailableError, match="OPENAI_API_KEY"):
        OpenAIEncoder()


def test_without_the_package_ncprobe_imports_and_names_the_extra() -> None:
    # sys.modules["openai"] = None: the package counts as not installed (find_spec gives None,
    # import raises ImportError); a fresh interpreter, so this process keeps its modules
    code = ("import sys\nsys.modules['openai'] = None\n"
            "import ncprobe, ncprobe.cli, ncprobe.encoders.registry, ncprobe.encoders.openai as o\n"
            "try:\n    o.OpenAIEncoder(api_key='k')\nexcept Exception as e:\n"
            "    print(type(e).__name__, e.exit_code, e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("ModelUnavailableError 5 the OpenAI encoder needs the package openai")
    assert "pip install 'ncprobe[openai]'" in out
