"""An ASGI app served by uvicorn inside our own event loop, for the host's HTTP channels (webhook, dashboard)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Generator
from contextlib import contextmanager

import anyio
import uvicorn
from anyio.abc import TaskStatus
from starlette.types import ASGIApp


class _CancelledRequests(logging.Filter):
    """Drops uvicorn's "Exception in ASGI application" for a request cancelled because the host is stopping: an
    open event stream (a dashboard page left open) ends that way every time, and a traceback there is no error."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError))


_CANCELLED = _CancelledRequests()


class _QuietServer(uvicorn.Server):
    """The host, not uvicorn, owns SIGINT and SIGTERM."""

    @contextmanager
    def capture_signals(self) -> Generator[None]:
        yield


async def serve_app(
    app: ASGIApp, host: str, port: int, what: str, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Serve `app` until cancelled; reports started, with the port it listens on (port 0 picks one), once the socket
    listens. `what` names the endpoint in the error when it cannot listen."""
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off")
    logging.getLogger("uvicorn.error").addFilter(_CANCELLED)
    server = _QuietServer(config)
    async with anyio.create_task_group() as group:
        group.start_soon(server.serve)
        while not server.started:
            if server.should_exit:
                raise OSError(f"{what} could not listen on {host}:{port}")
            await anyio.sleep(0.01)
        task_status.started(server.servers[0].sockets[0].getsockname()[1])
