"""`boot`: the workspace's BOOT.md, run as a silent turn when the gateway starts."""

from __future__ import annotations

from typing import Any

from hermitcrab.util.persona_files import BOOT_FILE

from ...events import NOWHERE, Event, system
from ..events import HookContext

PROMPT = "The host just started. Follow the start-up instructions of {file}; reply NO_REPLY when done.\n\n{text}"


async def boot(payload: dict[str, Any], context: HookContext) -> None:
    """Queue the turn (the gateway runs it like any event; it is not waited for here)."""
    file = context.workspace / BOOT_FILE
    try:
        text = file.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return
    if not text or context.submit is None:
        return
    principal = system(f"the boot hook, running the owner's {BOOT_FILE}", "owner")
    event = Event("hook", PROMPT.format(file=BOOT_FILE, text=text), NOWHERE, deliver=False, principal=principal)
    await context.submit(event)
