"""Images reach the model end to end: a real Chromium screenshot from the browser server, the test server's pictures
(huge, corrupt) and a Discord attachment, through `hermitcrab ask` / `run` to the scripted LLM, in both wire formats,
within the budget, or stated in text for a model without vision."""

from __future__ import annotations

import base64
import io
import json
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image as Pillow

from tests.support.browser import needs_chromium
from tests.support.cli import wait_for
from tests.support.discord_host import CONFIG, first_reply, start_run, stop
from tests.support.fake_discord import OWNER, FakeDiscord
from tests.support.fake_llm import (
    NO_PROVIDER_ENV,
    FakeLLM,
    anthropic_text,
    anthropic_tool_use,
    openai_text,
    openai_tool_calls,
)
from tests.support.static_files import serve_directory

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Shot</title></head>
<body style="background:#c00"><h1>A red page</h1></body></html>"""


def vision_config(llm: FakeLLM, kind: str, agent: str = "") -> str:
    """config.toml whose one profile is the scripted LLM in `kind`'s format, told its model takes images."""
    base = llm.url if kind == "openai" else llm.url.removesuffix("/v1")
    profile = f'[[providers]]\nkind = "{kind}"\nmodel = "fake"\nbase_url = "{base}"\napi_key = "k"\nimages = true\n'
    return f"[agent]\n{agent}\n{profile}"


def decoded(url_or_data: str) -> Pillow.Image:
    return Pillow.open(io.BytesIO(base64.b64decode(url_or_data.split("base64,")[-1])))


def encoded(picture: Pillow.Image, form: str = "PNG") -> bytes:
    buffer = io.BytesIO()
    picture.save(buffer, form)
    return buffer.getvalue()


def tool_results(home: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for path in (home / "state" / "sessions").glob("*.jsonl") for line in path.open()]
    return [entry for entry in lines if entry["kind"] == "tool_result"]


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "index.html").write_text(PAGE, encoding="utf-8")
    with serve_directory(tmp_path / "site") as base:
        yield base


@needs_chromium
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_real_screenshot_reaches_a_vision_model_as_an_image(
    kind: str, site: str, hermitcrab, llm: FakeLLM, hermitcrab_home: Path, tmp_path: Path
):
    (hermitcrab_home / "config.toml").write_text(vision_config(llm, kind))
    browser = [sys.executable, "-m", "hermitcrab.servers.browser", "--isolated", "--allow-outbound", "127.0.0.1"]
    entry = {"command": browser[0], "args": [*browser[1:], "--state", str(tmp_path / "browser")]}
    desktop = tmp_path / "desktop.json"
    desktop.write_text(json.dumps({"mcpServers": {"browser": entry}}))
    navigate, shoot = {"url": f"{site}/index.html"}, {"type": "png"}
    if kind == "openai":
        llm.enqueue(
            openai_tool_calls(("nav", "browser_navigate", json.dumps(navigate))),
            openai_tool_calls(("shot", "browser_take_screenshot", json.dumps(shoot))),
            openai_text("A red page."),
        )
    else:
        llm.enqueue(
            anthropic_tool_use("nav", "browser_navigate", navigate),
            anthropic_tool_use("shot", "browser_take_screenshot", shoot),
            anthropic_text("A red page."),
        )

    result = hermitcrab("ask", "--mcp-config", str(desktop), "What does the page look like?", env=NO_PROVIDER_ENV)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "A red page."
    messages = llm.requests[2]["messages"]
    if kind == "openai":
        tool, after = messages[-2:]
        assert tool["role"] == "tool" and tool["tool_call_id"] == "shot" and "[image: image/png, " in tool["content"]
        assert after["role"] == "user" and after["content"][0]["text"] == "The image(s) of tool call shot:"
        part = after["content"][1]
        assert part["type"] == "image_url" and part["image_url"]["url"].startswith("data:image/png;base64,")
        shown = decoded(part["image_url"]["url"])
    else:
        (result_block,) = [b for b in messages[-1]["content"] if b["type"] == "tool_result"]
        text, image = result_block["content"]
        assert result_block["tool_use_id"] == "shot" and "[image: image/png, " in text["text"]
        assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
        shown = decoded(image["source"]["data"])
    assert shown.format == "PNG" and shown.convert("RGB").getpixel((5, shown.height - 5)) == (204, 0, 0)
    (recorded,) = [entry for entry in tool_results(hermitcrab_home) if entry["call_id"] == "shot"]
    (reference,) = recorded["images"]
    stored = hermitcrab_home / "state" / "sessions" / "media" / f"{reference['sha256']}.png"
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600 and decoded(base64.b64encode(stored.read_bytes()).decode())


def test_a_huge_picture_is_downscaled_and_a_corrupt_one_stated(
    hermitcrab, llm: FakeLLM, hermitcrab_home: Path, tmp_path: Path, desktop_config
):
    agent = "image_max_side = 400\nimage_max_bytes = 40000"
    (hermitcrab_home / "config.toml").write_text(vision_config(llm, "openai", agent))
    noise = Pillow.merge("RGB", [Pillow.effect_noise((2400, 1600), 90) for _ in range(3)])
    (tmp_path / "huge.png").write_bytes(encoded(noise))
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n and then nothing an image has")
    llm.enqueue(
        openai_tool_calls(
            ("big", "picture", json.dumps({"path": str(tmp_path / "huge.png")})),
            ("bad", "picture", json.dumps({"path": str(tmp_path / "broken.png")})),
        ),
        openai_text("One picture, one broken file."),
    )

    result = hermitcrab("ask", "--mcp-config", str(desktop_config()), "Look at both", env=NO_PROVIDER_ENV)

    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "One picture, one broken file."
    *_, big, bad, after = llm.requests[1]["messages"]
    assert big["content"].startswith("the picture huge.png\n[image: image/png 2400x1600, sent as image/jpeg ")
    assert bad["content"].startswith("the picture broken.png\n[image: image/png, ")
    assert "not shown: it could not be decoded" in bad["content"]
    (header, part) = after["content"]  # only the huge one's image follows
    assert header["text"] == "The image(s) of tool call big:"
    shown = decoded(part["image_url"]["url"])
    assert max(shown.size) <= 400 and len(base64.b64decode(part["image_url"]["url"].split(",")[1])) <= 40_000


def test_a_model_without_vision_gets_the_picture_stated_in_text(
    hermitcrab, llm: FakeLLM, tmp_path: Path, desktop_config
):
    picture = encoded(Pillow.new("RGB", (40, 30), "blue"))
    (tmp_path / "blue.png").write_bytes(picture)
    llm.enqueue(
        openai_tool_calls(("p", "picture", json.dumps({"path": str(tmp_path / "blue.png")}))), openai_text("ok")
    )

    # the usual environment profile: an OpenAI-compatible server on loopback, not said to take images
    result = hermitcrab("ask", "--mcp-config", str(desktop_config()), "Look")

    assert result.returncode == 0, result.stderr
    messages = llm.requests[1]["messages"]
    assert messages[-1] == {
        "role": "tool",
        "tool_call_id": "p",
        "content": f"the picture blue.png\n[image: image/png, 40x30, {len(picture):,} bytes]",
    }
    assert all(isinstance(message["content"], str | None) for message in messages)


def test_a_discord_image_reaches_the_model_in_the_same_turn(
    llm: FakeLLM, discord_api: FakeDiscord, hermitcrab_home: Path, tmp_path: Path
):
    (hermitcrab_home / "config.toml").write_text(CONFIG + vision_config(llm, "openai").replace("[agent]\n", ""))
    photo = encoded(Pillow.new("RGB", (3000, 2000), (0, 160, 0)), "JPEG")
    run = start_run(hermitcrab_home, llm, discord_api, tmp_path / "run.log", env=NO_PROVIDER_ENV)
    try:
        llm.enqueue(openai_text("A green photo."))
        said = discord_api.user_says(OWNER, "what is this?", attachments=[("leaf.jpg", "image/jpeg", photo)])
        assert first_reply(discord_api, said).content == "A green photo."
        wait_for(lambda: len(llm.requests) == 1, "the photo never reached the model")
        assert stop(run.process) == 0
    finally:
        run.kill()

    text, part = llm.requests[0]["messages"][-1]["content"]
    assert text["text"].startswith("what is this?\n\n[attached image leaf.jpg, saved at ")
    assert "[image leaf.jpg: image/jpeg 3000x2000, sent as image/jpeg 1568x1045, " in text["text"]
    shown = decoded(part["image_url"]["url"])
    assert shown.size == (1568, 1045) and shown.getpixel((10, 10))[1] > 140
