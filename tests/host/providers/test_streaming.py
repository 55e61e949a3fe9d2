"""Streamed answers from both wire formats, against the scripted LLM server streaming server-sent events."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import stamina

from hermitcrab.host.config import ProviderProfile
from hermitcrab.host.errors import StreamCutError
from hermitcrab.host.providers import FailoverProvider, Message, ToolCall, create
from tests.support.fake_llm import (
    FakeLLM,
    Reply,
    anthropic_text,
    anthropic_tool_use,
    openai_text,
    openai_tool_calls,
    running_fake_llm,
)

ASK = [Message("user", "hello")]
ANSWER = "The tide comes in twice a day, and the crab moves house when its shell is too small."


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with running_fake_llm() as fake:
        yield fake


def openai(llm: FakeLLM, client: httpx.AsyncClient, name: str = "", *, stream: bool = True):
    return create(ProviderProfile("openai", "fake-model", llm.url, name=name, stream=stream), client)


def anthropic(llm: FakeLLM, client: httpx.AsyncClient):
    return create(ProviderProfile("anthropic", "fake-claude", llm.url.removesuffix("/v1")), client)


async def test_openai_streams_the_text_word_by_word_and_takes_the_usage_from_the_last_chunk(llm: FakeLLM):
    llm.enqueue(openai_text(ANSWER, tokens=(33, 21)))
    pieces: list[str] = []
    async with httpx.AsyncClient() as client:
        completion = await openai(llm, client).complete("sys", ASK, [], pieces.append)

    assert llm.requests[0]["stream"] is True
    assert llm.requests[0]["stream_options"] == {"include_usage": True}
    assert len(pieces) == len(ANSWER.split()) and "".join(pieces) == ANSWER
    assert completion.message.content == ANSWER
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (33, 21)
    assert completion.model == "fake-model"


async def test_openai_tool_calls_are_assembled_from_their_argument_pieces(llm: FakeLLM):
    llm.enqueue(openai_tool_calls(("c1", "add", '{"a": 12345, "b": 678910}'), ("c2", "note", '{"text": "x y z"}')))
    pieces: list[str] = []
    async with httpx.AsyncClient() as client:
        completion = await openai(llm, client).complete("sys", ASK, [], pieces.append)

    assert completion.message.tool_calls == (
        ToolCall("c1", "add", {"a": 12345, "b": 678910}),
        ToolCall("c2", "note", {"text": "x y z"}),
    )
    assert pieces == [] and completion.message.content == ""
    assert completion.usage.output_tokens == 8


async def test_openai_broken_arguments_in_a_stream_are_told_to_the_model_not_raised(llm: FakeLLM):
    llm.enqueue(openai_tool_calls(("c1", "add", '{"a": 1')))
    async with httpx.AsyncClient() as client:
        completion = await openai(llm, client).complete("sys", ASK, [], lambda _: None)
    (call,) = completion.message.tool_calls
    assert call.arguments == {} and call.arguments_error is not None and "not valid JSON" in call.arguments_error


async def test_anthropic_streams_text_and_a_tool_use_from_input_json_deltas(llm: FakeLLM):
    llm.enqueue(anthropic_tool_use("toolu_1", "add", {"a": 123456, "b": [1, 2, 3]}), anthropic_text(ANSWER))
    pieces: list[str] = []
    async with httpx.AsyncClient() as client:
        provider = anthropic(llm, client)
        first = await provider.complete("sys", ASK, [], pieces.append)
        second = await provider.complete("sys", ASK, [], pieces.append)

    assert llm.requests[0]["stream"] is True
    assert first.message.content == "Let me check."
    assert first.message.tool_calls == (ToolCall("toolu_1", "add", {"a": 123456, "b": [1, 2, 3]}),)
    assert (first.usage.input_tokens, first.usage.output_tokens) == (30, 9)
    assert second.message.content == ANSWER and second.model == "fake-claude"
    assert "".join(pieces) == "Let me check." + ANSWER and len(pieces) == 3 + len(ANSWER.split())


async def test_a_server_that_answers_a_stream_request_with_json_gives_the_whole_answer(llm: FakeLLM):
    llm.enqueue(Reply(openai_text(ANSWER), stream=False), Reply(anthropic_text(ANSWER), stream=False))
    pieces: list[str] = []
    async with httpx.AsyncClient() as client:
        whole = await openai(llm, client).complete("sys", ASK, [], pieces.append)
        claude = await anthropic(llm, client).complete("sys", ASK, [], pieces.append)

    assert whole.message.content == claude.message.content == ANSWER
    assert pieces == [ANSWER, ANSWER]  # told once each, as one piece


async def test_no_stream_is_asked_for_without_a_listener_or_with_stream_false(llm: FakeLLM):
    llm.enqueue(openai_text("one"), openai_text("two"))
    async with httpx.AsyncClient() as client:
        await openai(llm, client).complete("sys", ASK, [])
        await openai(llm, client, stream=False).complete("sys", ASK, [], lambda _: None)
    assert ["stream" in request for request in llm.requests] == [False, False]


async def test_a_stream_cut_before_its_first_word_fails_over_to_the_next_profile(llm: FakeLLM):
    llm.enqueue(Reply(openai_text(ANSWER), cut_after=1), openai_text("from the second"))
    pieces: list[str] = []
    async with httpx.AsyncClient() as client:
        providers = [openai(llm, client, name=name) for name in ("one", "two")]
        completion = await FailoverProvider(providers).complete("sys", ASK, [], pieces.append)

    assert completion.provider == "openai:fake-model (two)"
    assert "".join(pieces) == "from the second"


async def test_a_stream_cut_after_its_first_words_ends_with_what_was_said_and_is_not_failed_over(llm: FakeLLM):
    llm.enqueue(Reply(openai_text(ANSWER), cut_after=4), openai_text("a second answer nobody must see"))
    pieces: list[str] = []
    async with httpx.AsyncClient() as client:
        providers = [openai(llm, client, name=name) for name in ("one", "two")]
        with pytest.raises(StreamCutError, match="stream broke off") as cut:
            await FailoverProvider(providers).complete("sys", ASK, [], pieces.append)

    assert cut.value.said == "The tide comes" == "".join(pieces)  # events 1-3 are words; the role chunk has none
    assert len(llm.requests) == 1 and len(llm.script) == 1


async def test_an_anthropic_stream_cut_mid_way_keeps_the_words_that_came(llm: FakeLLM):
    llm.enqueue(Reply(anthropic_text(ANSWER), cut_after=6))
    async with httpx.AsyncClient() as client:
        with pytest.raises(StreamCutError) as cut:
            await anthropic(llm, client).complete("sys", ASK, [], lambda _: None)
    assert cut.value.said == "The tide comes"  # message_start, ping and the block's start carry no words


async def test_a_refused_stream_request_is_retried_like_any_other(llm: FakeLLM, retry_waits: list[float]):
    llm.enqueue(Reply({"error": {"message": "busy"}}, status=503), openai_text(ANSWER))
    with stamina.set_testing(True, attempts=3):
        async with httpx.AsyncClient() as client:
            completion = await openai(llm, client).complete("sys", ASK, [], lambda _: None)
    assert completion.message.content == ANSWER
    assert len(llm.requests) == 2 and len(retry_waits) == 1
