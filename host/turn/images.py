"""Images entering a turn (a tool's result, a chat attachment): fitted to the agent's budget, kept in the
session's media store, and stated in the text of the entry that carries them.

The statement goes into the text for every image, shown or not, so a model without vision, compaction's summary
and anyone reading the transcript know what was there; a provider whose model takes images shows them beside it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from ..config import AgentSettings
from ..events import Attachment
from ..providers.images import Image, ImageBudget, RawImage, fit
from ..session.media import MediaStore

logger = logging.getLogger(__name__)
_NAME_JUNK = re.compile(r"[^A-Za-z0-9._ -]")


@dataclass(frozen=True)
class Kept:
    """Images made ready for an entry: the lines stating them, the references it records, the images to show."""

    statements: tuple[str, ...] = ()
    references: tuple[dict[str, Any], ...] = ()
    images: tuple[Image, ...] = ()

    def text(self, text: str) -> str:
        """`text` with the statements after it, one a line."""
        return "\n".join([text, *self.statements]) if text else "\n".join(self.statements)

    def fields(self) -> dict[str, Any]:
        """The transcript entry's `images` field, when there are any to name."""
        return {"images": list(self.references)} if self.references else {}


def budget(settings: AgentSettings) -> ImageBudget:
    return ImageBudget(settings.image_max_side, settings.image_max_bytes)


async def keep(raws: Sequence[RawImage], budget: ImageBudget, media: MediaStore) -> Kept:
    """Fit and store `raws` off the event loop (decoding and re-encoding a large photo takes a while)."""
    if not raws:
        return Kept()
    return await anyio.to_thread.run_sync(_keep, raws, budget, media)


def _keep(raws: Sequence[RawImage], budget: ImageBudget, media: MediaStore) -> Kept:
    statements: list[str] = []
    references: list[dict[str, Any]] = []
    shown: list[Image] = []
    for fitted in (fit(raw, budget) for raw in raws):
        statements.append(fitted.statement)
        if fitted.image is None:
            continue
        try:
            references.append(media.keep(fitted.image))
        except OSError as exc:  # a full disk: the turn goes on, the image stated but not shown
            logger.warning("an image could not be stored in %s: %s", media.root, exc)
            statements[-1] = f"{statements[-1][:-1]}, not shown: it could not be stored ({exc.strerror or exc})]"
            continue
        shown.append(fitted.image)
    return Kept(tuple(statements), tuple(references), tuple(shown))


async def keep_attachments(attachments: Sequence[Attachment], budget: ImageBudget, media: MediaStore) -> Kept:
    """The images a channel saved for a message, read from their files, fitted and stored; one that cannot be
    read any more is stated as such."""
    raws: list[RawImage] = []
    unread: list[str] = []
    for attachment in attachments:
        name = _NAME_JUNK.sub("_", Path(attachment.name).name)[-80:] or "file"  # the sender's words
        try:
            data = await anyio.Path(attachment.path).read_bytes()
        except OSError as exc:
            unread.append(f"[image {name}: not shown, it could not be read ({exc.strerror or exc})]")
            continue
        raws.append(RawImage(attachment.media_type, data, f"image {name}"))
    kept = await keep(raws, budget, media)
    return Kept((*kept.statements, *unread), kept.references, kept.images)
