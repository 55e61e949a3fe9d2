"""A tool result's MCP content as the model gets it: text it reads, and images it may be shown.

Text blocks and text resources become text; images (image blocks, and embedded blobs of an image type) are kept as
bytes for the turn to fit to its budget and hand to a provider that takes them (`turn/exchange.py`); audio, other
blobs and resource links are stated in one line each, since no provider takes them in a tool result.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from mcp import types

from ..providers.images import RawImage


@dataclass(frozen=True)
class Rendered:
    text: str
    images: tuple[RawImage, ...] = ()


def render(result: types.CallToolResult) -> Rendered:
    """The text of `result`'s blocks, one block a line, and its images in order (stated later, once fitted)."""
    parts: list[str] = []
    images: list[RawImage] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent):
            _add_image(block.data, block.mime_type, "image", parts, images)
        elif isinstance(block, types.AudioContent):
            parts.append(f"[audio: {block.mime_type}, {_size(block.data)}, not heard: no model API here takes audio]")
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                parts.append(f"[resource {resource.uri}]\n{resource.text}")
            elif (resource.mime_type or "").startswith("image/"):
                _add_image(resource.blob, resource.mime_type or "", f"resource {resource.uri}", parts, images)
            else:
                kind = resource.mime_type or "binary"
                parts.append(f"[resource {resource.uri}: {kind}, {_size(resource.blob)}, not shown: not text]")
        else:
            parts.append(f"[resource link {block.uri}" + (f": {block.mime_type}]" if block.mime_type else "]"))
    if not parts and not images and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return Rendered("\n".join(parts), tuple(images))


def _add_image(data: str, media_type: str, label: str, parts: list[str], images: list[RawImage]) -> None:
    try:
        images.append(RawImage(media_type, base64.b64decode(data, validate=True), label))
    except (binascii.Error, ValueError):
        parts.append(f"[{label}: {media_type}, not shown: its data is not valid base64]")


def _size(data: str) -> str:
    return f"{len(data) * 3 // 4:,} bytes"
