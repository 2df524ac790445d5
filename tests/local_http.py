"""A quiet HTTP server on 127.0.0.1 for tests that exercise real network code paths."""

from __future__ import annotations

import contextlib
import http.server
import threading
from typing import Iterator


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """Base handler: answers with a body, logs nothing."""

    def reply(self, body: bytes, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@contextlib.contextmanager
def serve(handler: type, **attrs) -> Iterator[tuple[str, type]]:
    """Run ``handler`` (a subclass with ``attrs`` set) on a free port; yield (base URL, class)."""
    cls = type("H", (handler,), attrs)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), cls)
    # a short poll interval: shutdown() at the end of each test waits for at most one poll
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02},
                     daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", cls
    finally:
        httpd.shutdown()
        httpd.server_close()
