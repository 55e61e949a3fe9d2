"""Cached prompt tokens, as each provider counts them (whole and streamed), end up in the transcript's usage entry."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermitcrab.host.config import ProviderProfile
from hermitcrab.host.providers import Message, ToolSpec, Usage, create
from hermitcrab.host.session.transcript import Transcript
from tests.support.fake_llm import FakeLLM, anthropic_text, openai_text, running_fake_llm

ASK = [Message("user", "hello")]
# Anthropic's input_tokens leaves out the cached part; Usage.input_tokens is the whole prompt.
ANTHROPIC_USAGE = {
    "input_tokens": 50,
    "cache_read_input_tokens": 3000,
    "cache_creation_input_tokens": 200,
    "output_tokens": 7,
}
ANTHROPIC_SPENT = Usage(input_tokens=3250, output_tokens=7, cache_read_tokens=3000, cache_write_tokens=200)
OPENAI_USAGE = {"prompt_tokens": 3250, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 3072}}
OPENAI_SPENT = Usage(input_tokens=3250, output_tokens=7, cache_read_tokens=3072)


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with running_fake_llm() as fake:
        yield fake


def _with_usage(body: dict[str, Any], usage: dict[str, Any]) -> dict[str, Any]:
    return body | {"usage": usage}


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(
    ("kind", "body", "spent"),
    [
        ("anthropic", _with_usage(anthropic_text("hi"), ANTHROPIC_USAGE), ANTHROPIC_SPENT),
        ("openai", _with_usage(openai_text("hi"), OPENAI_USAGE), OPENAI_SPENT),
    ],
)
async def test_cached_tokens_are_counted_and_recorded_in_the_transcript(
    llm: FakeLLM, tmp_path: Path, kind: str, body: dict[str, Any], spent: Usage, streamed: bool
):
    llm.enqueue(body)
    base_url = llm.url if kind == "openai" else llm.url.removesuffix("/v1")
    async with httpx.AsyncClient() as client:
        provider = create(ProviderProfile(kind, "fake-model", base_url), client)
        completion = await provider.complete("sys", ASK, [], (lambda _: None) if streamed else None)

    assert bool(llm.requests[0].get("stream")) is streamed
    assert completion.usage == spent
    transcript = Transcript(tmp_path / "t.jsonl")
    transcript.append_answer(completion)
    assert transcript.entries()[0]["usage"] == spent.as_entry()
    assert Transcript(tmp_path / "t.jsonl").view().usage == spent


def test_a_usage_entry_written_before_cache_counts_reads_them_as_zero(tmp_path: Path):
    path = tmp_path / "old.jsonl"
    path.write_text(
        '{"id": "a1", "kind": "assistant", "text": "hi", "usage": {"input_tokens": 9, "output_tokens": 2}}\n'
    )
    assert Transcript(path).view().usage == Usage(input_tokens=9, output_tokens=2)


async def test_the_anthropic_request_marks_tools_system_and_the_recent_history_for_the_cache(llm: FakeLLM):
    history = [Message("user", f"message {n}") if n % 2 == 0 else Message("assistant", f"answer {n}") for n in range(7)]
    tools = [ToolSpec(name, "a tool", {"type": "object"}) for name in ("alpha", "beta", "gamma")]
    llm.enqueue(anthropic_text("hi"))
    async with httpx.AsyncClient() as client:
        provider = create(ProviderProfile("anthropic", "fake-claude", llm.url.removesuffix("/v1")), client)
        await provider.complete("the persona", history, tools)

    request = llm.requests[0]
    marked = [tool["name"] for tool in request["tools"] if "cache_control" in tool]
    assert marked == ["gamma"] and request["system"][0]["cache_control"] == {"type": "ephemeral"}
    in_history = [m["content"][0]["text"] for m in request["messages"] if "cache_control" in m["content"][-1]]
    assert in_history == ["message 4", "message 6"]  # where the previous call ended, and the newest
    assert len(marked) + 1 + len(in_history) == 4  # the API allows no more
