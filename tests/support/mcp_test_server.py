"""A small MCP server for host tests: echo, hearsay (marked as others' text), add, a tool that hangs, its own pid, a
picture read from a file, event publishers (plain text, and a queue following the server-event contract), and a
prompt with arguments."""

from __future__ import annotations

import argparse
import base64
import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Elicit, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated
from pydantic import BaseModel

from hermitcrab.util.files import atomic_write_json


class Approval(BaseModel):
    decision: Literal["allow-once", "allow-always", "deny"]


def ask_approval(action: str) -> Elicit[Approval]:
    return Elicit(f"Allow {action}?", Approval)


def build_server(name: str = "testkit", queue_file: Path | None = None) -> MCPServer:
    bus = InMemorySubscriptionBus()
    server = MCPServer(name, subscriptions=bus)
    inbox: list[str] = []
    queue: dict[str, dict[str, Any]] = {}
    if queue_file is not None and queue_file.exists():
        queue = {item["id"]: item for item in json.loads(queue_file.read_text())}
    acked: list[str] = []

    def save() -> None:
        if queue_file is not None:  # atomically: the tests read it while the server runs
            atomic_write_json(queue_file, list(queue.values()))

    legacy_subscribers: list[ServerSession] = []

    async def subscribe(ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams) -> types.EmptyResult:
        """Older-era clients subscribe instead of listening; they get notifications/resources/updated."""
        legacy_subscribers.append(ctx.session)
        return types.EmptyResult()

    server._lowlevel_server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    def hearsay(text: str) -> types.CallToolResult:
        """Return the text marked as someone else's (`hermitcrab/untrusted-content`), as a web page's would be."""
        result = types.CallToolResult(content=[types.TextContent(type="text", text=text)])
        result.meta = {"hermitcrab/untrusted-content": True}
        return result

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def fail(reason: str) -> str:
        """Always fail with the given reason."""
        raise ToolError(reason)

    @server.tool()
    async def hang(seconds: float = 3600) -> str:
        """Sleep for a long time (to test call timeouts)."""
        await anyio.sleep(seconds)
        return "woke up"

    @server.tool()
    def pid() -> int:
        """Return this server's process id."""
        return os.getpid()

    @server.tool()
    def big(size: int) -> str:
        """Return a string of `size` characters."""
        return "x" * size

    @server.tool()
    def picture(path: str, mime_type: str = "image/png") -> types.CallToolResult:
        """The file at `path` as an image result, said to be `mime_type` (whatever the bytes are)."""
        data = base64.b64encode(Path(path).read_bytes()).decode()
        return types.CallToolResult(
            content=[
                types.TextContent(text=f"the picture {Path(path).name}"),
                types.ImageContent(data=data, mime_type=mime_type),
            ]
        )

    @server.tool()
    def guarded(action: str, approval: Annotated[Approval, Resolve(ask_approval)]) -> str:
        """Do something only after the user approves it."""
        return f"{action}: {approval.decision}"

    @server.prompt()
    def review(path: str, focus: str = "bugs") -> str:
        """Review a file, looking for one kind of problem."""
        return f"Review {path}, looking for {focus}."

    @server.resource("test://inbox")
    def read_inbox() -> str:
        """Items published by `publish`."""
        return "\n".join(inbox)

    @server.tool()
    async def publish(item: str) -> str:
        """Add an item to the inbox and notify listeners."""
        inbox.append(item)
        await bus.publish(ResourceUpdated(uri="test://inbox"))
        for session in legacy_subscribers:
            await session.send_resource_updated("test://inbox")
        return "published"

    @server.resource("test://queue")
    def read_queue() -> str:
        """Items waiting for the host, in the server-event contract's shape."""
        return json.dumps({"items": list(queue.values()), "ack": {"tool": "queue_ack", "argument": "ids"}})

    @server.tool()
    async def queue_push(item: dict[str, Any]) -> str:
        """Queue an item (at least `id` and `text`) and tell listeners."""
        queue[item["id"]] = item
        save()
        await bus.publish(ResourceUpdated(uri="test://queue"))
        return "queued"

    @server.tool()
    def queue_ack(ids: list[str]) -> str:
        """Remove handled items; remembers every acknowledged id."""
        acked.extend(ids)
        for item_id in ids:
            queue.pop(item_id, None)
        save()
        return f"acked {len(ids)}"

    @server.tool()
    def queue_state() -> dict[str, list[str]]:
        """What still waits and what was acknowledged, in order."""
        return {"waiting": list(queue), "acked": acked}

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="testkit")
    parser.add_argument("--http-port", type=int, help="serve streamable HTTP on 127.0.0.1 instead of stdio")
    parser.add_argument("--queue-file", type=Path, help="keep test://queue in this JSON file (a list of items)")
    args = parser.parse_args()
    server = build_server(args.name, args.queue_file)
    if args.http_port:
        server.run("streamable-http", host="127.0.0.1", port=args.http_port)
    else:
        server.run()
