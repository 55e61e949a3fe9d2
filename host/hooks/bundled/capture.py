"""`session-capture`: the session-end memory capture of `session/capture.py`, run as a hook of /new and /reset."""

from __future__ import annotations

from typing import Any

from ...session.capture import capture
from ..events import HookContext

OTHERS_FOLDER = "others"
"""Under `memory/`: what people other than the owner said or wrote (hermitcrab-memory marks it as theirs)."""


async def save_last_messages(payload: dict[str, Any], context: HookContext) -> dict[str, str] | None:
    """Write the file and name it for the reply; nothing when the session said nothing."""
    if context.sessions is None:
        return None
    memory = context.workspace / "memory"
    folder = memory if payload["private"] else memory / OTHERS_FOLDER
    saved = capture(context.sessions.open(payload["session"]), folder, context.now())
    if saved is None:
        return None
    return {"text": f"The last messages were saved to {saved.relative_to(context.workspace)}."}
