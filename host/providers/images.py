"""Images made fit for a model: decoded (so a corrupt one is caught here, not by the provider), turned upright, and
downscaled and re-encoded until they are within the agent's budget, in a format every vision API takes.

A tool's screenshot or a photo sent on Discord can be megabytes at 4000 pixels; the APIs shrink anything past about
1,500 pixels anyway (Anthropic's long side, OpenAI's tiles) and refuse whole requests over their byte limits, so the
host sends what the model can use and no more. An image that cannot be decoded is stated in text, never raised.
"""

from __future__ import annotations

import io
import re
import warnings
from dataclasses import dataclass, field

from PIL import Image as Pillow
from PIL import ImageOps, UnidentifiedImageError

FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}
"""The formats OpenAI's and Anthropic's vision inputs both take, by Pillow's name; anything else is re-encoded."""
JPEG_QUALITIES = (85, 70, 55, 40)
SHRINK = 0.75
"""How much smaller each try gets once the lowest JPEG quality is still over the byte budget."""
MAX_PIXELS = 64_000_000
"""Larger images are refused before decoding: a small file can claim a huge canvas (a decompression bomb)."""
TOKENS_PER_PIXEL = 1 / 750
"""Anthropic's documented estimate of an image's cost in tokens; OpenAI's tiles come to less, so this bounds both."""
ORIENTATION = 0x0112
"""The EXIF tag saying how a photo is turned; 1 is upright."""
_MIME_JUNK = re.compile(r"[^A-Za-z0-9.+/_-]")


@dataclass(frozen=True)
class Image:
    """An image the model is shown beside a message's text, within the size budget and in one of `FORMATS`."""

    media_type: str
    data: bytes = field(repr=False)
    width: int
    height: int

    @property
    def tokens(self) -> int:
        return image_tokens(self.width, self.height)


def image_tokens(width: int, height: int) -> int:
    """About what showing an image costs, for counting the context before a provider has."""
    return int(width * height * TOKENS_PER_PIXEL) + 1


@dataclass(frozen=True)
class RawImage:
    """An image as it came (a tool's result, a chat attachment): bytes said to be `media_type`, not yet checked."""

    media_type: str
    data: bytes = field(repr=False)
    label: str = "image"
    """How its statement names it: `image`, `image cat.jpg`, `resource file:///shot.png`."""


@dataclass(frozen=True)
class ImageBudget:
    """The largest image sent to a model: longest side in pixels and encoded size in bytes."""

    max_side: int
    max_bytes: int


@dataclass(frozen=True)
class Fitted:
    """What became of one image: the image to show (None when it could not be decoded) and one line saying so,
    which goes into the message's text, so a model without vision, compaction and the transcript's readers know."""

    image: Image | None
    statement: str


def fit(raw: RawImage, budget: ImageBudget) -> Fitted:
    """`raw` as an image within `budget`; re-encoded only when it must be."""
    data, label = raw.data, raw.label
    declared = _MIME_JUNK.sub("", raw.media_type)[:60] or "an unnamed type"  # a server's or sender's words
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Pillow.DecompressionBombWarning)
            opened = Pillow.open(io.BytesIO(data))
            width, height = opened.size
            if width * height > MAX_PIXELS:
                raise ValueError(f"{width}x{height} pixels is more than the host decodes")
            if max(width, height) > budget.max_side:
                opened.draft("RGB", (budget.max_side, budget.max_side))  # a JPEG decodes at a fraction of its size
            opened.load()
            turned = opened.getexif().get(ORIENTATION, 1) != 1
            upright = ImageOps.exif_transpose(opened) if turned else opened
    except UnidentifiedImageError:
        return _undecoded(data, declared, label, "not an image format the host reads")
    except Exception as exc:  # decoders of untrusted bytes raise many kinds: OSError, SyntaxError, struct.error...
        return _undecoded(data, declared, label, str(exc) or type(exc).__name__)
    original = f"{width}x{height}"
    media_type = FORMATS.get(opened.format or "")
    fits = max(width, height) <= budget.max_side and len(data) <= budget.max_bytes
    if media_type is not None and fits and not turned:
        return Fitted(
            Image(media_type, data, width, height), f"[{label}: {media_type}, {original}, {len(data):,} bytes]"
        )
    image = _shrunk(upright, budget, lossless=opened.format in ("PNG", "GIF") or "A" in upright.getbands())
    size = f"{image.width}x{image.height}"
    return Fitted(
        image,
        f"[{label}: {declared} {original}, sent as {image.media_type} {size}, {len(image.data):,} bytes]",
    )


def _undecoded(data: bytes, declared: str, label: str, reason: str) -> Fitted:
    return Fitted(None, f"[{label}: {declared}, {len(data):,} bytes, not shown: it could not be decoded ({reason})]")


def _shrunk(picture: Pillow.Image, budget: ImageBudget, *, lossless: bool) -> Image:
    """`picture` within the budget: PNG for a `lossless` source (a screenshot's text stays sharp) when that fits,
    else JPEG at falling quality, then smaller and smaller until it fits (each step almost halves the pixels)."""
    picture = picture.copy()
    picture.thumbnail((budget.max_side, budget.max_side), Pillow.Resampling.LANCZOS)
    while True:
        encoded = _encoded(picture, budget.max_bytes, lossless=lossless)
        if encoded is not None or max(picture.size) <= 16:
            return encoded or _jpeg(picture, JPEG_QUALITIES[-1])
        smaller = (max(1, int(picture.width * SHRINK)), max(1, int(picture.height * SHRINK)))
        picture = picture.resize(smaller, Pillow.Resampling.LANCZOS)


def _encoded(picture: Pillow.Image, max_bytes: int, *, lossless: bool) -> Image | None:
    if lossless:
        buffer = io.BytesIO()
        picture.save(buffer, "PNG", optimize=True)
        if buffer.tell() <= max_bytes:
            return Image("image/png", buffer.getvalue(), picture.width, picture.height)
    for quality in JPEG_QUALITIES:
        image = _jpeg(picture, quality)
        if len(image.data) <= max_bytes:
            return image
    return None


def _jpeg(picture: Pillow.Image, quality: int) -> Image:
    buffer = io.BytesIO()
    picture.convert("RGB").save(buffer, "JPEG", quality=quality, optimize=True)
    return Image("image/jpeg", buffer.getvalue(), picture.width, picture.height)
