"""Webhook delivery to a real HTTP receiver on 127.0.0.1: the event JSON is POSTed, failures back off and give up."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio
from mcp import Client

from tests.servers.cron.conftest import CronServer, call, error_of, events, job


class Receiver:
    """Answers the first `failures` POSTs with 503, the rest with 204, and keeps each body with its arrival time."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.received: list[tuple[float, dict[str, Any]]] = []


@contextmanager
def receiving(failures: int) -> Iterator[tuple[str, Receiver]]:
    receiver = Receiver(failures)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            receiver.received.append((time.monotonic(), body))
            self.send_response(503 if len(receiver.received) <= receiver.failures else 204)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hooks/cron", receiver
    finally:
        server.shutdown()
        server.server_close()


def webhook_job(url: str) -> dict[str, Any]:
    return job("ping", every=3600, delivery={"mode": "webhook", "url": url})


async def runs_of(client: Client, job_id: str) -> list[dict[str, Any]]:
    return (await call(client, "cron_runs", job_id=job_id))["runs"]


async def test_a_webhook_job_is_posted_and_retried_with_backoff(cron_server: CronServer):
    with receiving(failures=2) as (url, receiver):
        async with Client(cron_server(backoff=(0.3, 0.6, 5), outbound_allow=["127.0.0.1"])) as client:
            added = await call(client, "cron_add", job=webhook_job(url))
            ran = await call(client, "cron_run", job_id=added["id"])
            with anyio.fail_after(5):
                while len(receiver.received) < 3:
                    await anyio.sleep(0.05)
            await anyio.sleep(0.2)
            history = await runs_of(client, added["id"])
            waiting = (await events(client))["items"]
            status = await call(client, "cron_status")
    (times, bodies) = zip(*receiver.received, strict=True)
    assert [body["id"] for body in bodies] == ran["event_ids"] * 3
    assert bodies[0]["text"].endswith("\nping says hi") and bodies[0]["job_id"] == added["id"]
    assert 0.3 <= times[1] - times[0] < 0.9 and 0.6 <= times[2] - times[1] < 1.2
    statuses = [(run["status"], run.get("attempt")) for run in reversed(history)]
    assert statuses == [("sending", None), ("retrying", 1), ("retrying", 2), ("sent", 3)]
    assert "HTTP 503" in history[1]["detail"]
    assert waiting == [] and status["pending_webhooks"] == 0


async def test_a_webhook_that_keeps_failing_is_given_up_after_the_last_delay(cron_server: CronServer):
    with receiving(failures=100) as (url, receiver):
        async with Client(cron_server(backoff=(0.1, 0.1), outbound_allow=["127.0.0.1"])) as client:
            added = await call(client, "cron_add", job=webhook_job(url))
            await call(client, "cron_run", job_id=added["id"])
            with anyio.fail_after(5):
                while not any(run["status"] == "failed" for run in await runs_of(client, added["id"])):
                    await anyio.sleep(0.05)
            (listed,) = (await call(client, "cron_list"))["jobs"]
            status = await call(client, "cron_status")
    assert len(receiver.received) == 3
    assert listed["last_run"]["status"] == "failed" and status["pending_webhooks"] == 0


async def test_a_webhook_to_this_machine_or_the_metadata_service_is_refused_unless_allowed(cron_server: CronServer):
    async with Client(cron_server()) as client:
        for url in ("http://127.0.0.1:8080/hook", "http://169.254.169.254/latest/meta-data/", "http://localhost/x"):
            refused = await error_of(client, "cron_add", job=webhook_job(url))
            assert "refused" in refused and "--allow-outbound" in refused, refused
        assert (await call(client, "cron_list"))["jobs"] == []


async def test_each_delivery_is_checked_again_so_a_removed_allowance_stops_it(cron_server: CronServer):
    with receiving(failures=0) as (url, receiver):
        async with Client(cron_server(outbound_allow=["127.0.0.1"])) as client:
            added = await call(client, "cron_add", job=webhook_job(url))
        async with Client(cron_server(backoff=(0.1,))) as client:  # the same store, started without the allowance
            await call(client, "cron_run", job_id=added["id"])
            with anyio.fail_after(5):
                while not any(run["status"] == "failed" for run in await runs_of(client, added["id"])):
                    await anyio.sleep(0.05)
            history = await runs_of(client, added["id"])
    assert receiver.received == []
    assert any("loopback" in (run.get("detail") or "") for run in history), history
