"""Wire translation for both APIs, against the scripted LLM server on 127.0.0.1."""

from __future__ import annotations

import httpx
import pytest

from hermitcrab.host.config import ProviderProfile
from hermitcrab.host.errors import AllProvidersFailed
from hermitcrab.host.providers import FailoverProvider, Message, ToolCall, ToolSpec, create
from tests.support.fake_llm import (
    Reply,
    anthropic_text,
    anthropic_tool_use,
    openai_text,
    openai_tool_calls,
    running_fake_llm,
)

ADD = ToolSpec("add", "Add two numbers.", {"type": "object", "properties": {"a": {"type": "integer"}}})
HISTORY = [
    Message("user", "add 1 and 2"),
    Message("assistant", "", (ToolCall("c1", "add", {"a": 1, "b": 2}),)),
    Message("tool", "3", tool_call_id="c1"),
]


async def test_openai_sends_tools_and_tool_results_and_parses_tool_calls():
    with running_fake_llm() as llm:
        llm.enqueue(openai_tool_calls(("c2", "add", '{"a": 5}')))
        async with httpx.AsyncClient() as client:
            provider = create(ProviderProfile("openai", "m", llm.url, api_key="k"), client)
            completion = await provider.complete("be brief", HISTORY, [ADD])

    request = llm.requests[0]
    assert request["messages"][0] == {"role": "system", "content": "be brief"}
    assert request["messages"][2]["tool_calls"][0]["function"] == {"name": "add", "arguments": '{"a": 1, "b": 2}'}
    assert request["messages"][3] == {"role": "tool", "tool_call_id": "c1", "content": "3"}
    assert request["tools"][0]["function"]["name"] == "add"
    assert completion.message.tool_calls == (ToolCall("c2", "add", {"a": 5}),)
    assert completion.usage.input_tokens == 20


async def test_openai_bad_tool_arguments_become_an_argument_error():
    with running_fake_llm() as llm:
        llm.enqueue(openai_tool_calls(("c3", "add", "{not json")))
        async with httpx.AsyncClient() as client:
            completion = await create(ProviderProfile("openai", "m", llm.url), client).complete("", HISTORY, [ADD])

    assert "not valid JSON" in (completion.message.tool_calls[0].arguments_error or "")


async def test_anthropic_uses_tool_use_and_tool_result_blocks():
    with running_fake_llm() as llm:
        llm.enqueue(anthropic_tool_use("toolu_1", "add", {"a": 1}), anthropic_text("3"))
        base = llm.url.removesuffix("/v1")
        async with httpx.AsyncClient() as client:
            provider = create(ProviderProfile("anthropic", "claude", base, api_key="ak"), client)
            first = await provider.complete("sys", HISTORY, [ADD])
            second = await provider.complete(
                "sys", [*HISTORY, first.message, Message("tool", "1", tool_call_id="toolu_1", is_error=True)], [ADD]
            )

    request = llm.requests[0]
    assert request["system"] == [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}]
    assert request["tools"][0]["input_schema"]["type"] == "object"
    assert request["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert request["messages"][1]["content"] == [
        {"type": "tool_use", "id": "c1", "name": "add", "input": {"a": 1, "b": 2}}
    ]
    assert request["messages"][2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": "3",
        "is_error": False,
        "cache_control": {"type": "ephemeral"},
    }
    assert llm.headers[0]["x-api-key"] == "ak"
    assert first.message.content == "Let me check."
    assert first.message.tool_calls == (ToolCall("toolu_1", "add", {"a": 1}),)
    assert llm.requests[1]["messages"][-1]["content"][0]["is_error"] is True
    assert second.message.content == "3" and second.usage.output_tokens == 4


async def test_failover_names_every_failed_profile():
    with running_fake_llm() as llm:
        llm.enqueue(
            Reply({"error": {"message": "bad key"}}, status=401), Reply({"error": {"message": "nope"}}, status=400)
        )
        async with httpx.AsyncClient() as client:
            providers = [create(ProviderProfile("openai", m, llm.url, name=m), client) for m in ("one", "two")]
            with pytest.raises(
                AllProvidersFailed, match=r"openai:one \(one\): HTTP 401: bad key; openai:two \(two\): HTTP 400: nope"
            ):
                await FailoverProvider(providers).complete("", HISTORY, [])


async def test_failover_uses_the_next_profile():
    with running_fake_llm() as llm:
        llm.enqueue(Reply({"error": {"message": "bad key"}}, status=401), openai_text("ok"))
        async with httpx.AsyncClient() as client:
            providers = [create(ProviderProfile("openai", m, llm.url, name=m), client) for m in ("one", "two")]
            completion = await FailoverProvider(providers).complete("", HISTORY, [])

    assert completion.message.content == "ok" and completion.provider == "openai:two (two)"
