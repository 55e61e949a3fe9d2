"""The images a transcript refers to, one file each under `media/` beside the transcripts, named by their hash.

A transcript line stays small (a reference, not megabytes of base64 in every line forever) and a screenshot taken
twice is stored once; the model is shown an image for as long as its entry is in its view (until compaction
summarises it, where its statement in the entry's text stands for it).
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from hermitcrab.util.files import atomic_write_bytes

from ..providers.images import FORMATS, Image, image_tokens

logger = logging.getLogger(__name__)

SUFFIXES = {media_type: f".{name.lower()}" for name, media_type in FORMATS.items()}


class Reference(BaseModel):
    """An image as a transcript entry names it (its `images` field)."""

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    media_type: str
    width: int = Field(gt=0)
    height: int = Field(gt=0)

    @property
    def tokens(self) -> int:
        return image_tokens(self.width, self.height)


class MediaStore:
    """Image files named `<sha256><suffix>`, 0600 in a 0700 folder, written atomically and never changed."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def keep(self, image: Image) -> dict[str, Any]:
        """Store `image` (once per content) and return the reference a transcript entry carries."""
        digest = hashlib.sha256(image.data).hexdigest()
        path = self.root / f"{digest}{SUFFIXES[image.media_type]}"
        if not path.exists():
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            atomic_write_bytes(path, image.data)
        return Reference(
            sha256=digest, media_type=image.media_type, width=image.width, height=image.height
        ).model_dump()

    def load(self, reference: object) -> Image | None:
        """The image a reference names; None (logged) when the reference is malformed or its file is gone or
        altered: the entry's text still states it."""
        named = reference_of(reference)
        if named is None or named.media_type not in SUFFIXES:
            logger.warning("a transcript in %s names an image badly: %.200r", self.root.parent, reference)
            return None
        try:
            data = (self.root / f"{named.sha256}{SUFFIXES[named.media_type]}").read_bytes()
        except OSError as exc:
            logger.warning("the image %s is not shown: %s", named.sha256, exc)
            return None
        if hashlib.sha256(data).hexdigest() != named.sha256:
            logger.warning("the image %s in %s was altered; it is not shown", named.sha256, self.root)
            return None
        return Image(named.media_type, data, named.width, named.height)


def reference_of(value: object) -> Reference | None:
    """`value` read as an image reference; None when it is not one."""
    try:
        return Reference.model_validate(value)
    except ValidationError:
        return None
