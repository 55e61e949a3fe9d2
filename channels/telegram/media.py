"""What a Telegram message carries besides text, as the agent receives it.

A photo (its largest size) and an image sent as a file are saved under the workspace and handed to the host with
the event (`Event.attachments`), so a model that takes images sees them in the turn; a text document up to the
configured size becomes part of the message; a voice note or audio file is saved there and its path given, for a
tool to transcribe; anything else is only named. A download that fails is named with the reason, never fatal.
"""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass
from pathlib import Path

from telegram import Message
from telegram.error import TelegramError

from hermitcrab.channels.attachments import MAX_IMAGE_BYTES, is_text, safe_name, text_block
from hermitcrab.host.events import Attachment


@dataclass(frozen=True)
class Media:
    text: str
    """What to append to the message's text: one block per file (empty when there are none)."""
    images: tuple[Attachment, ...]


async def describe(message: Message, inbox: Path, max_text: int) -> Media:
    try:
        return await _describe(message, inbox, max_text)
    except (TelegramError, OSError) as exc:
        return Media(f"[an attachment could not be downloaded ({exc})]", ())


async def _describe(message: Message, inbox: Path, max_text: int) -> Media:
    stem = f"{message.chat.id}-{message.message_id}"
    if message.photo:
        photo = message.photo[-1]  # the largest size
        if (photo.file_size or 0) > MAX_IMAGE_BYTES:
            return Media("[attached a photo, not read: too large]", ())
        path = await _save(message, photo.file_id, inbox / f"{stem}.jpg")
        return Media(f"[attached photo, saved at {path}]", (Attachment(str(path), "image/jpeg", path.name),))
    if message.voice or message.audio:
        sound = message.voice or message.audio
        assert sound is not None
        suffix = mimetypes.guess_extension(sound.mime_type or "") or ".ogg"
        path = await _save(message, sound.file_id, inbox / f"{stem}{suffix}")
        kind = "voice note" if message.voice else "audio file"
        return Media(f"[attached {kind} ({sound.duration} s), saved at {path}]", ())
    document = message.document
    if document is None:
        return Media("", ())
    name = document.file_name or "file"
    size = document.file_size or 0
    if is_text(document.mime_type, name) and size <= max_text:
        body = await (await message.get_bot().get_file(document.file_id)).download_as_bytearray()
        return Media(text_block(name, bytes(body[:max_text])), ())
    kind = document.mime_type or ""
    if kind.startswith("image/") and size <= MAX_IMAGE_BYTES:
        path = await _save(message, document.file_id, inbox / f"{stem}-{safe_name(name)}")
        return Media(f"[attached image {name}, saved at {path}]", (Attachment(str(path), kind, path.name),))
    return Media(f"[attached {name} ({size:,} bytes), not read: too large or not text]", ())


async def _save(message: Message, file_id: str, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    await (await message.get_bot().get_file(file_id)).download_to_drive(path)
    return path
