"""Keeping a session inside the window: compaction at the threshold, chunked summaries, identifiers kept
mechanically, failures that never fail the turn, overflow recovery that does not loop, the same view after a restart."""

from __future__ import annotations

import random
import uuid
from pathlib import Path
from typing import Any

import anyio

from hermitcrab.host.config import AgentSettings
from hermitcrab.host.errors import ContextOverflowError, ProviderError
from hermitcrab.host.providers import Message
from hermitcrab.host.session.transcript import Session, SessionStore
from hermitcrab.host.turn.compaction import Budget, compact
from hermitcrab.host.turn.loop import run_turn
from tests.support.scripted_provider import ScriptedProvider
from tests.support.toolboxes import Toolbox

SMALL = AgentSettings(context_window_tokens=8_000, reserve_tokens=1_000, keep_recent_tokens=2_000)


def filler(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(["alpha", "bravo", "delta", "river", "stone", "cloud", "amber"]) for _ in range(words))


def planted(rng: random.Random) -> str:
    kind = rng.randrange(3)
    if kind == 0:
        return str(uuid.UUID(int=rng.getrandbits(128)))
    if kind == 1:
        return f"/srv/{rng.choice(['app', 'data', 'logs'])}/{rng.getrandbits(32):x}/config-{rng.randrange(999)}.yaml"
    return f"https://{rng.choice(['git', 'ci', 'docs'])}.example.org/{rng.getrandbits(40):x}?page={rng.randrange(99)}"


def pairs_intact(messages: list[Message]) -> bool:
    """Every tool result answers a call of the assistant message before it, and every call has its result."""
    open_calls: set[str] = set()
    for message in messages:
        if message.role == "tool":
            if message.tool_call_id not in open_calls:
                return False
            open_calls.discard(message.tool_call_id)
        else:
            if open_calls:
                return False
            open_calls = {call.id for call in message.tool_calls}
    return not open_calls


async def turn(session: Session, provider: ScriptedProvider, text: str, settings: AgentSettings = SMALL):
    return await run_turn(
        provider=provider, toolbox=Toolbox(), session=session, system="SYSTEM", user_text=text, settings=settings
    )


def context_text(request: dict[str, Any]) -> str:
    return request["system"] + "\n".join(
        m.content + "".join(str(c.arguments) for c in m.tool_calls) for m in request["messages"]
    )


async def test_identifiers_survive_several_compactions_even_when_the_summary_is_useless(tmp_path: Path):
    for seed in range(3):
        rng = random.Random(seed)
        session = SessionStore(tmp_path / str(seed)).open("main")
        provider = ScriptedProvider(summary="Nothing much happened.", count_input=True)
        ids: list[str] = []
        for index in range(60):
            ident = planted(rng)
            ids.append(ident)
            if index % 3 == 0:
                provider.call((f"c{index}", "echo", {"text": f"{filler(rng, 40)} {ident}"})).say(filler(rng, 30))
                text = filler(rng, 120)
            else:
                provider.say(f"{filler(rng, 60)} noted {ident if index % 3 == 1 else ''}")
                text = f"{filler(rng, 100)} keep {ident} {filler(rng, 20)}"
            await turn(session, provider, text)
            sent = [r for r in provider.seen if r["tools"]][-1]
            missing = [i for i in ids if i not in context_text(sent)]
            assert not missing, (seed, index, missing)
            assert pairs_intact(sent["messages"])
        compactions = [e for e in session.transcript.entries() if e["kind"] == "compaction"]
        assert len(compactions) >= 3, seed


async def test_an_older_part_larger_than_the_window_is_summarised_in_chunks_then_merged(tmp_path: Path):
    session = SessionStore(tmp_path).open("main")
    for index in range(40):  # ~40,000 tokens against a 8,000-token window
        session.transcript.append("user", text=f"step {index} " + "y" * 4_000)
        session.transcript.append("assistant", text=f"done {index}")
    session.transcript.view().summary = None
    provider = ScriptedProvider(summary="- part summary")

    done = await compact(session, provider, Budget.of(SMALL))

    summaries = [r["messages"][0].content for r in provider.seen]
    assert done.replaced > 70 and len(summaries) > 3
    assert all(len(text) <= Budget.of(SMALL).chunk_chars + 200 for text in summaries)
    assert summaries[-1].startswith("Merge these summaries") and "Summary of part 1:" in summaries[-1]
    assert sum(len(m.content) for m in session.messages()) < SMALL.context_window_tokens * 4


async def test_the_previous_summary_is_an_input_of_the_merge(tmp_path: Path):
    session = SessionStore(tmp_path).open("main")
    session.transcript.append("user", text="first " + "z" * 40_000)
    session.transcript.append("assistant", text="ok")
    session.transcript.append("user", text="second")
    provider = ScriptedProvider(summary="- earlier: ticket OPS-77 open")
    await compact(session, provider, Budget.of(SMALL))
    for index in range(12):
        session.transcript.append("user", text=f"more {index} " + "w" * 4_000)
        session.transcript.append("assistant", text="fine")

    await compact(session, provider, Budget.of(SMALL))

    assert "Earlier summary:\n- earlier: ticket OPS-77 open" in provider.seen[-1]["messages"][0].content


async def test_a_failing_summary_call_leaves_the_turn_answered_and_the_history_intact(tmp_path: Path):
    class Failing(ScriptedProvider):
        async def complete(self, system, messages, tools, on_delta=None):
            if not tools:
                raise ProviderError("HTTP 500 from the summariser")
            return await super().complete(system, messages, tools, on_delta)

    session = SessionStore(tmp_path).open("main")
    for index in range(10):
        session.transcript.append("user", text=f"request {index} for host-{index}.lan " + "q" * 3_000)
        session.transcript.append("assistant", text=f"handled {index}")
    before = len(session.transcript.entries())
    provider = Failing().say("the answer")

    result = await turn(session, provider, "and now?")

    assert result.reply is not None and result.reply.startswith("the answer")
    assert "could not summarise" in result.reply and "Nothing was deleted" in result.reply
    entries = session.transcript.entries()
    assert len(entries) == before + 3  # the user's message, the compaction record, the answer
    record = next(e for e in entries if e["kind"] == "compaction")
    assert "HTTP 500" in record["failure"] and "handled 7" in record["summary"]  # the newest compacted, as written
    assert all(f"host-{i}.lan" in context_text(provider.seen[-1]) for i in range(10))
    again = await turn(session, provider.say("next answer"), "thanks")
    assert again.reply == "next answer"  # told once; no compaction is retried at once


async def test_a_second_overflow_is_answered_instead_of_looping(tmp_path: Path):
    class AlwaysTooLong(ScriptedProvider):
        async def complete(self, system, messages, tools, on_delta=None):
            if tools:
                self.seen.append({"system": system, "messages": list(messages), "tools": [t.name for t in tools]})
                raise ContextOverflowError("HTTP 400: prompt is too long: 9000000 tokens")
            return await super().complete(system, messages, tools, on_delta)

    session = SessionStore(tmp_path).open("main")
    for index in range(6):
        session.transcript.append("user", text=f"turn {index} " + "p" * 2_000)
        session.transcript.append("assistant", text="ok")
    provider = AlwaysTooLong(summary="- summary")

    result = await turn(session, provider, "hello", AgentSettings())

    assert result.reply is not None and "/new" in result.reply and "9000000" not in result.reply
    assert [bool(r["tools"]) for r in provider.seen] == [True, False, True]  # try, summarise, retry once
    assert [e["kind"] for e in session.transcript.entries()].count("compaction") == 1


async def test_a_single_long_turn_is_cut_between_answers_never_between_a_call_and_its_result(tmp_path: Path):
    session = SessionStore(tmp_path).open("main")
    provider = ScriptedProvider(summary="- looked at many files", count_input=True)
    for index in range(14):
        provider.call((f"h{index}", "echo", {"text": f"file {index} " + "r" * 3_000}))
    provider.say("all read")

    result = await turn(session, provider, "read every file")

    assert result.reply == "all read"
    assert any(e["kind"] == "compaction" for e in session.transcript.entries())
    assert all(pairs_intact(r["messages"]) for r in provider.seen if r["tools"])


async def test_a_restart_rebuilds_exactly_the_same_model_view(tmp_path: Path):
    session = SessionStore(tmp_path).open("main")
    provider = ScriptedProvider(summary="- summary", count_input=True)
    for index in range(20):
        provider.call((f"c{index}", "echo", {"text": "e" * 500})).say(f"answer {index} " + "a" * 1_500)
        await turn(session, provider, f"question {index} " + "u" * 1_000)

    restarted = SessionStore(tmp_path).open("main")

    assert any(e["kind"] == "compaction" for e in session.transcript.entries())
    assert restarted.messages() == session.messages()
    assert restarted.usage == session.usage
    assert restarted.transcript.view().context_tokens() == session.transcript.view().context_tokens()


async def test_the_context_is_counted_from_the_providers_report_plus_what_was_added(tmp_path: Path):
    session = SessionStore(tmp_path).open("main")
    session.transcript.append("user", text="hi")
    session.transcript.append("assistant", text="hello", usage={"input_tokens": 7_000, "output_tokens": 10})
    session.transcript.append("user", text="x" * 400)

    assert session.transcript.view().context_tokens() == 7_010 + (400 + 16) // 4


async def test_merging_ends_even_when_every_summary_is_as_long_as_allowed(tmp_path: Path):
    session = SessionStore(tmp_path).open("main")
    for index in range(60):
        session.transcript.append("user", text=f"step {index} " + "y" * 4_000)
        session.transcript.append("assistant", text=f"done {index}")
    budget = Budget.of(SMALL)
    provider = ScriptedProvider(summary="s" * budget.chunk_chars * 2)

    with anyio.fail_after(10):
        done = await compact(session, provider, budget)

    assert done.replaced and done.failure is None
    assert len(session.messages()[0].content) < budget.summary_chars + budget.identifier_chars + 500
