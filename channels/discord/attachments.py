"""Attachments as message text: small text files inline, images saved under the workspace with their path.

The agent reads text in the message; images are also handed to the host with the event (`Event.attachments`), so
a model that takes images sees them in the same turn, and any other can open them by path with its own tools;
anything else is only named, so a large or binary upload never floods the context.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import discord

from hermitcrab.channels.attachments import MAX_IMAGE_BYTES, is_text, safe_name, text_block
from hermitcrab.host.events import Attachment


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


async def _describe(
    attachment: discord.Attachment, inbox: Path, message_id: int, max_text: int
) -> tuple[str, Attachment | None]:
    name = attachment.filename
    if is_text(attachment.content_type, name) and attachment.size <= max_text:
        return text_block(name, await attachment.read()), None
    kind = attachment.content_type or ""
    if kind.startswith("image/") and attachment.size <= MAX_IMAGE_BYTES:
        inbox.mkdir(parents=True, exist_ok=True)
        path = inbox / f"{message_id}-{safe_name(name)}"
        await attachment.save(path)
        return f"[attached image {name}, saved at {path}]", Attachment(str(path), kind, safe_name(name))
    return f"[attached {name} ({attachment.size:,} bytes), not read: too large or not text]", None
