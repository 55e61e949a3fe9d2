"""`command-log`: every exec command and what it gave, one JSON line each in `state/logs/commands.jsonl`."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from hermitcrab.util.files import append_line

from ...text import cut_middle
from ..events import HookContext

LOG = "commands.jsonl"
RESULT_CHARS = 2_000
EXEC_TOOLS = frozenset({"exec"})


async def log_command(payload: dict[str, Any], context: HookContext) -> None:
    """Append the call when it is an exec command (the file is made 0600 by the append itself)."""
    if payload["tool"] not in EXEC_TOOLS:
        return
    arguments: dict[str, Any] = payload["arguments"]
    record = {
        "ts": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "session": payload["session"],
        "rights": payload["principal"]["rights"],
        "command": arguments.get("command"),
        "is_error": payload["is_error"],
        "result": cut_middle(str(payload["result"]), RESULT_CHARS, "cut by command-log"),
    }
    append_line(context.state / "logs" / LOG, json.dumps(record, ensure_ascii=False))
