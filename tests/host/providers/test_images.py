"""Images on the wire, against the scripted LLM server: OpenAI's `image_url` parts (a tool's in a user message after
the results), Anthropic's `image` blocks (inside the `tool_result`), and text alone for a model without vision."""

from __future__ import annotations

import base64
import io
from typing import Any

import httpx
from PIL import Image as Pillow

from hermitcrab.host.config import ProviderProfile
from hermitcrab.host.providers import Message, ToolCall, create
from hermitcrab.host.providers.images import Image
from tests.support.fake_llm import anthropic_text, openai_text, running_fake_llm


def png(width: int, height: int) -> Image:
    buffer = io.BytesIO()
    Pillow.new("RGB", (width, height), (200, 30, 30)).save(buffer, "PNG")
    return Image("image/png", buffer.getvalue(), width, height)


RED, SMALL = png(40, 30), png(8, 8)
CALLS = (ToolCall("c1", "shot", {}), ToolCall("c2", "shot", {}))
HISTORY = [
    Message("user", "[attached image a.png, saved at /tmp/a.png]\nwhat is this?", images=(SMALL,)),
    Message("assistant", "", CALLS),
    Message("tool", "shot one\n[image: image/png, 40x30]", tool_call_id="c1", images=(RED,)),
    Message("tool", "no image here", tool_call_id="c2"),
]


def data_url(image: Image) -> str:
    return f"data:image/png;base64,{base64.b64encode(image.data).decode()}"


async def sent(profile: ProviderProfile, reply: dict[str, Any]) -> dict[str, Any]:
    """The request `profile`'s provider sends the scripted LLM for HISTORY."""
    with running_fake_llm() as llm:
        llm.enqueue(reply)
        base = llm.url if profile.kind == "openai" else llm.url.removesuffix("/v1")
        async with httpx.AsyncClient() as client:
            await create(ProviderProfile(profile.kind, "m", base, images=profile.images), client).complete(
                "sys", HISTORY, []
            )
    return llm.requests[0]


async def test_openai_sends_images_as_data_urls_and_a_tools_images_after_the_results():
    messages = (await sent(ProviderProfile("openai", images=True), openai_text("red")))["messages"]

    assert messages[1]["content"] == [
        {"type": "text", "text": HISTORY[0].content},
        {"type": "image_url", "image_url": {"url": data_url(SMALL)}},
    ]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": HISTORY[2].content}
    assert messages[5]["content"] == [
        {"type": "text", "text": "The image(s) of tool call c1:"},
        {"type": "image_url", "image_url": {"url": data_url(RED)}},
    ]


async def test_an_openai_compatible_server_gets_text_only_unless_its_profile_says_images():
    messages = (await sent(ProviderProfile("openai"), openai_text("red")))["messages"]

    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool"]
    assert all(isinstance(m["content"], str | None) for m in messages)
    assert messages[1]["content"] == HISTORY[0].content and messages[3]["content"] == HISTORY[2].content


async def test_anthropic_puts_a_tools_image_inside_its_tool_result_and_a_users_before_the_text():
    messages = (await sent(ProviderProfile("anthropic"), anthropic_text("red")))["messages"]

    def block(image: Image) -> dict[str, Any]:
        data = base64.b64encode(image.data).decode()
        return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}

    assert messages[0]["content"][0] == block(SMALL)
    assert messages[0]["content"][1]["text"] == HISTORY[0].content
    first, second = messages[2]["content"]
    assert first["content"] == [{"type": "text", "text": HISTORY[2].content}, block(RED)]
    assert second["content"] == "no image here"


async def test_anthropic_with_images_false_gets_text_only():
    messages = (await sent(ProviderProfile("anthropic", images=False), anthropic_text("red")))["messages"]

    assert [(b["type"], b["text"]) for b in messages[0]["content"]] == [("text", HISTORY[0].content)]
    assert messages[2]["content"][0]["content"] == HISTORY[2].content
