"""An MCP server over stdio that completes the handshake and lists one tool, then never answers anything else:
what a client sees when the SDK drops a request it cannot parse."""

from __future__ import annotations

import json
import sys
from typing import Any

TOOL = {"name": "quiet", "description": "Never answers.", "inputSchema": {"type": "object", "properties": {}}}
INFO = {"name": "silent", "version": "1"}


def reply(message: dict[str, Any]) -> dict[str, Any] | None:
    """The answer to the handshake's requests (as a server of the older protocol era); None for anything else."""
    method, request_id = message.get("method"), message.get("id")
    if method == "server/discover":
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "Method not found"}}
    if method == "initialize":
        version = message["params"]["protocolVersion"]
        result = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": INFO}
        return {"jsonrpc": "2.0", "id": request_id, "result": result}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": request_id, "result": {"tools": [TOOL]}}
    return None


def main() -> None:
    for line in sys.stdin:
        answer = reply(json.loads(line))
        if answer is not None:
            sys.stdout.write(json.dumps(answer) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
