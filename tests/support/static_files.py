"""Serve a directory over HTTP on 127.0.0.1, quietly, for browser tests and benchmarks."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class QuietHandler(SimpleHTTPRequestHandler):
    """Static files without a log line per request; subclass it to add endpoints."""

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def serve_directory(path: Path, handler: type[SimpleHTTPRequestHandler] = QuietHandler) -> Iterator[str]:
    """Serve `path` on a free port and yield its base URL, e.g. http://127.0.0.1:41234; stop afterwards."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
