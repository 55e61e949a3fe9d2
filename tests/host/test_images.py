"""Images fitted to the budget (downscaled, re-encoded, or stated when they cannot be decoded), kept in the session's
media store by hash, named in the transcript, shown again after a restart and counted in the context; a tool
result's content blocks as text, images and statements; a message's attachments across a restart."""

from __future__ import annotations

import base64
import io
import json
import stat
from pathlib import Path

from mcp import types
from PIL import Image as Pillow

from hermitcrab.host.events import Attachment, Event, Target
from hermitcrab.host.inbox.log import from_record, to_record
from hermitcrab.host.mcp.content import render
from hermitcrab.host.providers.images import ImageBudget, RawImage, fit
from hermitcrab.host.session.media import MediaStore
from hermitcrab.host.session.transcript import Transcript, entry_chars
from hermitcrab.host.turn.context import message_chars
from hermitcrab.host.turn.images import keep

BUDGET = ImageBudget(max_side=512, max_bytes=60_000)


def encoded(picture: Pillow.Image, form: str) -> bytes:
    buffer = io.BytesIO()
    picture.save(buffer, form)
    return buffer.getvalue()


def noise(width: int, height: int) -> Pillow.Image:
    """A picture that compresses badly, so the byte budget and not only the side is tested."""
    return Pillow.merge("RGB", [Pillow.effect_noise((width, height), 80) for _ in range(3)])


def test_a_huge_image_is_downscaled_and_reencoded_under_the_budget():
    data = encoded(noise(3000, 2000), "PNG")

    fitted = fit(RawImage("image/png", data), BUDGET)

    assert fitted.image is not None and len(data) > 10 * BUDGET.max_bytes
    assert max(fitted.image.width, fitted.image.height) <= BUDGET.max_side
    assert len(fitted.image.data) <= BUDGET.max_bytes
    shown = Pillow.open(io.BytesIO(fitted.image.data))
    assert (shown.width, shown.height) == (fitted.image.width, fitted.image.height)
    assert shown.format == "JPEG" and fitted.image.media_type == "image/jpeg"
    assert fitted.statement.startswith("[image: image/png 3000x2000, sent as image/jpeg ")


def test_a_small_image_in_a_taken_format_is_sent_as_it_came():
    data = encoded(Pillow.new("RGBA", (64, 48), (0, 0, 255, 128)), "PNG")

    fitted = fit(RawImage("image/png", data, "image cat.png"), BUDGET)

    assert fitted.image is not None and fitted.image.data == data
    assert fitted.statement == f"[image cat.png: image/png, 64x48, {len(data):,} bytes]"


def test_a_photo_taken_sideways_is_turned_upright():
    exif = Pillow.Exif()
    exif[0x0112] = 6  # the camera was turned: show it rotated by 90 degrees
    buffer = io.BytesIO()
    Pillow.new("RGB", (60, 30), "green").save(buffer, "JPEG", exif=exif)

    fitted = fit(RawImage("image/jpeg", buffer.getvalue()), BUDGET)

    assert fitted.image is not None and (fitted.image.width, fitted.image.height) == (30, 60)
    assert Pillow.open(io.BytesIO(fitted.image.data)).size == (30, 60)


def test_an_image_in_a_format_the_apis_do_not_take_is_converted():
    fitted = fit(RawImage("image/bmp", encoded(Pillow.new("RGB", (30, 20), "red"), "BMP")), BUDGET)

    assert fitted.image is not None and fitted.image.media_type in ("image/png", "image/jpeg")
    assert Pillow.open(io.BytesIO(fitted.image.data)).size == (30, 20)


def test_a_corrupt_or_lying_image_is_stated_in_text():
    for data in (b"\x89PNG\r\n\x1a\n not really", b"", encoded(noise(40, 40), "PNG")[:200]):
        fitted = fit(RawImage("image/png\n<script>", data), BUDGET)

        assert fitted.image is None
        assert fitted.statement.startswith(f"[image: image/pngscript, {len(data):,} bytes, not shown: it could not")


async def test_images_are_kept_by_hash_named_in_the_transcript_and_shown_after_a_restart(tmp_path: Path):
    path = tmp_path / "sessions" / "main.jsonl"
    transcript = Transcript(path)
    data = encoded(noise(700, 350), "PNG")
    kept = await keep([RawImage("image/png", data), RawImage("image/png", b"junk")], BUDGET, transcript.media)
    again = await keep([RawImage("image/png", data)], BUDGET, transcript.media)
    transcript.append("user", text="look")
    transcript.append("assistant", text="", model="m", provider="p", usage={})
    transcript.append("tool_call", call_id="c1", name="shot", arguments={})
    entry = transcript.append("tool_result", call_id="c1", name="shot", text=kept.text("a shot"), **kept.fields())

    (stored,) = (tmp_path / "sessions" / "media").iterdir()
    assert again.references == kept.references and stored.name == f"{kept.references[0]['sha256']}.jpeg"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600 and stat.S_IMODE(stored.parent.stat().st_mode) == 0o700
    assert len(path.read_text().splitlines()[-1]) < 1_000  # a reference, no base64
    assert entry["text"].splitlines()[0] == "a shot" and "could not be decoded" in entry["text"]
    shown = Transcript(path).view().messages()
    assert shown[-1].images == kept.images and len(kept.images) == 1
    image = kept.images[0]
    assert entry_chars(entry) > len(entry["text"]) + image.tokens * 3
    assert message_chars(shown[-1]) > len(entry["text"]) + image.tokens * 3

    stored.write_bytes(b"altered")
    assert Transcript(path).view().messages()[-1].images == ()  # left out, stated in the text all the same


def test_a_results_content_becomes_text_images_and_statements():
    shot = base64.b64encode(encoded(Pillow.new("RGB", (4, 4)), "PNG")).decode()
    result = types.CallToolResult(
        content=[
            types.TextContent(text="here"),
            types.ImageContent(data=shot, mime_type="image/png"),
            types.ImageContent(data="not base64!", mime_type="image/png"),
            types.AudioContent(data="AAAA", mime_type="audio/wav"),
            types.EmbeddedResource(resource=types.TextResourceContents(uri="file:///a.txt", text="inline")),
            types.EmbeddedResource(
                resource=types.BlobResourceContents(uri="file:///b.png", blob=shot, mime_type="image/png")
            ),
            types.EmbeddedResource(resource=types.BlobResourceContents(uri="file:///c.bin", blob="AAAA")),
            types.ResourceLink(name="d", uri="file:///d.pdf", mime_type="application/pdf"),
        ]
    )

    rendered = render(result)

    assert rendered.text.splitlines() == [
        "here",
        "[image: image/png, not shown: its data is not valid base64]",
        "[audio: audio/wav, 3 bytes, not heard: no model API here takes audio]",
        "[resource file:///a.txt]",
        "inline",
        "[resource file:///c.bin: binary, 3 bytes, not shown: not text]",
        "[resource link file:///d.pdf: application/pdf]",
    ]
    assert [(image.label, image.data) for image in rendered.images] == [
        ("image", base64.b64decode(shot)),
        ("resource file:///b.png", base64.b64decode(shot)),
    ]


def test_a_messages_attachments_survive_the_inbox_record(tmp_path: Path):
    photo = Attachment(str(tmp_path / "leaf.jpg"), "image/jpeg", "leaf.jpg")
    event = Event("message", "look", Target("discord", "1", "2"), inbound_id="discord:9", attachments=(photo,))

    assert from_record(json.loads(json.dumps(to_record(event)))).attachments == (photo,)


async def test_an_image_that_cannot_be_stored_is_stated_and_the_turn_goes_on(tmp_path: Path):
    (tmp_path / "sessions").write_text("a file where the folder should be")
    data = encoded(Pillow.new("RGB", (20, 10), "red"), "PNG")

    kept = await keep([RawImage("image/png", data)], BUDGET, MediaStore(tmp_path / "sessions" / "media"))

    assert kept.images == () and kept.references == ()
    assert kept.statements[0].startswith(
        f"[image: image/png, 20x10, {len(data):,} bytes, not shown: it could not be stored"
    )
