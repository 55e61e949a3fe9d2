"""`quiet-hours`: no replies to other people overnight; they stay in the transcript rather than wake anyone."""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..events import HookContext

DEFAULT_START, DEFAULT_END = "22:00", "07:00"


async def hold_overnight(payload: dict[str, Any], context: HookContext) -> dict[str, str] | None:
    """Cancel a reply to a non-owner while the clock is inside [start, end) (which may span midnight)."""
    who = payload.get("principal")
    if who is None or who["kind"] == "owner":  # a note or question of the host's own, or the owner's reply
        return None
    start = _time(str(context.options.get("start", DEFAULT_START)))
    end = _time(str(context.options.get("end", DEFAULT_END)))
    if not quiet(context.now().time(), start, end):
        return None
    return {"action": "cancel", "reason": f"quiet hours ({start:%H:%M}-{end:%H:%M})"}


def quiet(now: dt.time, start: dt.time, end: dt.time) -> bool:
    return start <= now < end if start <= end else now >= start or now < end


def _time(text: str) -> dt.time:
    """An option's "HH:MM"; a bad one raises, which fails the hook (logged) and lets the reply go out."""
    return dt.time.fromisoformat(text)
