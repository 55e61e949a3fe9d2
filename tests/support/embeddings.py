"""A loopback stand-in for an OpenAI-compatible `/embeddings` service (a fake of an external service, not of our
code), and a wait for a memory server's background embedding to finish."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
from mcp import Client

from tests.support.tools import call


class Embeddings:
    """Answers each request after `delay_s` with vectors made from the texts' hashes (the same text, the same
    vector), and records every text it answered for. `gated`: a request for more than one text (a batch of
    passages; a query is one text and is answered at once) waits for `let_through` or `open`."""

    def __init__(self, delay_s: float = 0.0, gated: bool = False) -> None:
        self.texts: list[str] = []
        self._permits = threading.Semaphore(0)
        self._open = threading.Event()
        self._refuse = threading.Event()
        self.waiting = 0  # requests at the gate now
        self.answered = 0  # requests answered
        if not gated:
            self._open.set()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body: dict[str, Any] = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                texts: list[str] = body["input"]
                if len(texts) > 1 and not endpoint._through_gate():  # pyright: ignore[reportPrivateUsage]
                    self.send_error(503)
                    return
                endpoint.texts.extend(texts)
                endpoint.answered += 1
                time.sleep(delay_s)
                data = [{"index": i, "embedding": vector(text)} for i, text in enumerate(texts)]
                reply = json.dumps({"data": data}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self._http.server_address[1]}/v1"
        threading.Thread(target=self._http.serve_forever, daemon=True).start()

    @property
    def spec(self) -> str:
        return f"openai:fake@{self.base_url}"

    def let_through(self, requests: int) -> None:
        for _ in range(requests):
            self._permits.release()

    def open(self) -> None:
        self._open.set()

    def refuse_waiting(self) -> None:
        """Answer the requests held at the gate with an error (their client is gone), recording nothing."""
        self._refuse.set()
        while self.waiting:
            time.sleep(0.01)
        self._refuse.clear()

    def _through_gate(self) -> bool:
        self.waiting += 1
        try:
            while not self._open.is_set():
                if self._refuse.is_set():
                    return False
                if self._permits.acquire(timeout=0.02):
                    return True
            return True
        finally:
            self.waiting -= 1

    def close(self) -> None:
        self.open()
        self._http.shutdown()
        self._http.server_close()


def vector(text: str) -> list[float]:
    return [b / 255 for b in hashlib.blake2b(text.encode(), digest_size=8).digest()]


async def embedded(client: Client, timeout_s: float = 60) -> dict[str, Any]:
    """`memory_status` once the server has every chunk's vector (polled; fails the test after `timeout_s`)."""
    with anyio.fail_after(timeout_s):
        while True:
            status = await call(client, "memory_status")
            vectors = status["vectors"]
            if status["last_sync"] is not None and vectors["pending"] == 0 and not vectors["embedding"]:
                return status
            await anyio.sleep(0.05)
