"""Attachments as message text: small text files inline, images saved under the workspace with their path.

The agent reads text in the message; images are also handed to the host with the event (`Event.attachments`), so
a model that takes images sees them in the same turn, and any other can open them by path with its own tools;
anything else is only named, so a large or binary upload never floods the context.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import discord

from hermitcrab.host.events import Attachment

MAX_IMAGE_BYTES = 20 * 1024 * 1024
TEXT_SUFFIXES = frozenset(
    {".txt", ".md", ".py", ".js", ".ts", ".json", ".yaml", ".yml", ".toml", ".csv", ".log", ".sh", ".html", ".css"}
    | {".xml", ".ini", ".cfg", ".sql", ".rs", ".go", ".java", ".c", ".h"}
)


def _is_text(attachment: discord.Attachment) -> bool:
    kind = attachment.content_type or ""
    return (
        kind.startswith("text/")
        or kind in ("application/json", "application/xml")
        or (Path(attachment.filename).suffix.lower() in TEXT_SUFFIXES)
    )


async def describe(
    attachments: Sequence[discord.Attachment], inbox: Path, message_id: int, max_text: int
) -> tuple[str, tuple[Attachment, ...]]:
    """Text to append to the message for its attachments (empty when there are none), and the images saved."""
    blocks: list[str] = []
    images: list[Attachment] = []
    for attachment in attachments:
        try:
            text, image = await _describe(attachment, inbox, message_id, max_text)
        except (discord.HTTPException, OSError) as exc:
            text, image = f"[attached {attachment.filename}: could not be downloaded ({exc})]", None
        blocks.append(text)
        images.extend([image] if image is not None else [])
    return "\n\n".join(blocks), tuple(images)


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)[-80:] or "file"


async def _describe(
    attachment: discord.Attachment, inbox: Path, message_id: int, max_text: int
) -> tuple[str, Attachment | None]:
    name = attachment.filename
    if _is_text(attachment) and attachment.size <= max_text:
        body = (await attachment.read()).decode("utf-8", errors="replace")
        fence = "`" * max([3, *(len(run) + 1 for run in re.findall(r"`+", body))])
        return f"[attached file {name}]\n{fence}\n{body}\n{fence}", None
    kind = attachment.content_type or ""
    if kind.startswith("image/") and attachment.size <= MAX_IMAGE_BYTES:
        inbox.mkdir(parents=True, exist_ok=True)
        path = inbox / f"{message_id}-{_safe(name)}"
        await attachment.save(path)
        return f"[attached image {name}, saved at {path}]", Attachment(str(path), kind, _safe(name))
    return f"[attached {name} ({attachment.size:,} bytes), not read: too large or not text]", None
