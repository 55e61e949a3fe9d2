"""Compaction: an over-long session is summarised, recorded, and rebuilt the same way after a restart."""

from __future__ import annotations

from pathlib import Path

from hermitcrab.host.config import AgentSettings, Settings
from hermitcrab.host.errors import ContextOverflowError
from hermitcrab.host.events import OWNER, Event, Target
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.session.transcript import SUMMARY_HEADER, SessionStore
from hermitcrab.host.turn.agent import Agent
from hermitcrab.host.turn.compaction import Budget, compact
from hermitcrab.host.turn.loop import run_turn
from tests.support.channels import RecordingChannel
from tests.support.scripted_provider import ScriptedProvider
from tests.support.toolboxes import Toolbox

LONG = "x" * 4_000  # about 1,000 tokens


def budget(**settings: int) -> Budget:
    return Budget.of(AgentSettings(**settings))


def long_session(tmp_path: Path, turns: int):
    session = SessionStore(tmp_path).open("main")
    for i in range(turns):
        session.transcript.append("user", text=f"question {i} {LONG}")
        session.transcript.append("assistant", text="")
        session.transcript.append("tool_call", call_id=f"c{i}", name="echo", arguments={"text": "hi"})
        session.transcript.append("tool_result", call_id=f"c{i}", name="echo", text="hi", is_error=False)
        session.transcript.append("assistant", text=f"answer {i} id=job-{i}")
    return session


async def test_older_turns_become_a_summary_and_recent_ones_stay_verbatim(tmp_path: Path):
    session = long_session(tmp_path, turns=6)
    provider = ScriptedProvider().say("- Tasks: job-0 .. job-3 answered")

    done = await compact(session, provider, budget(keep_recent_tokens=2_500))

    messages = SessionStore(tmp_path).open("main").messages()
    assert done.replaced == 20
    assert messages[0].content.startswith(f"{SUMMARY_HEADER}\n- Tasks: job-0 .. job-3 answered\n\n## Exact identifiers")
    assert [m.content.split(" ")[:2] for m in messages[1:] if m.role == "user"] == [
        ["question", "4"],
        ["question", "5"],
    ]
    assert messages[2].tool_calls[0].id == "c4" and messages[3].tool_call_id == "c4"
    prompt = provider.seen[0]
    assert "copy every identifier exactly" in prompt["system"].lower()
    assert "answer 3 id=job-3" in prompt["messages"][0].content and "question 4" not in prompt["messages"][0].content


async def test_a_second_compaction_folds_in_the_first_summary(tmp_path: Path):
    session = long_session(tmp_path, turns=6)
    provider = ScriptedProvider().say("first summary").say("second summary")

    await compact(session, provider, budget(keep_recent_tokens=2_500))
    session.transcript.append("user", text=f"question 6 {LONG}")
    session.transcript.append("assistant", text="answer 6")
    await compact(session, provider, budget(keep_recent_tokens=1_200))

    assert "Earlier summary:\nfirst summary" in provider.seen[1]["messages"][0].content
    assert "second summary" in session.messages()[0].content


async def test_the_loop_compacts_before_the_window_overflows(tmp_path: Path):
    session = long_session(tmp_path, turns=8)
    provider = ScriptedProvider(summary="summary of turns 0-5").say("fresh answer")
    settings = AgentSettings(context_window_tokens=6_000, reserve_tokens=500, keep_recent_tokens=2_500)

    result = await run_turn(
        provider=provider, toolbox=Toolbox(), session=session, system="S", user_text="next", settings=settings
    )

    assert result.reply == "fresh answer"
    sent = provider.seen[-1]["messages"]
    assert "summary of turns 0-5" in sent[0].content and sent[-1].content == "next"
    assert all(f"job-{i}" in sent[0].content for i in range(6))  # kept mechanically, the summary lacks them
    assert sum(len(m.content) for m in sent) < 6_000 * 4


class Overflowing(ScriptedProvider):
    """Refuses the first real request as too long, like a provider at its context limit."""

    refused: bool = False

    async def complete(self, system, messages, tools, on_delta=None):
        if tools and not self.refused:
            self.refused = True
            raise ContextOverflowError("HTTP 400: maximum context length exceeded")
        return await super().complete(system, messages, tools, on_delta)


async def test_a_context_overflow_error_compacts_and_retries_once(tmp_path: Path):
    session = long_session(tmp_path, turns=4)
    provider = Overflowing().say("summary").say("after retry")

    result = await run_turn(
        provider=provider, toolbox=Toolbox(), session=session, system="S", user_text="go", settings=AgentSettings()
    )

    assert result.reply == "after retry"
    assert "summary" in provider.seen[1]["messages"][0].content


async def test_nothing_to_compact_in_a_single_turn(tmp_path: Path):
    session = SessionStore(tmp_path).open("main")
    session.transcript.append("user", text="only one turn")

    assert (await compact(session, ScriptedProvider(), budget(keep_recent_tokens=10), required=True)).replaced == 0


async def test_compact_command_reports_what_it_did(tmp_path: Path):
    long_session(tmp_path / "sessions", turns=3)
    provider = ScriptedProvider().say("summary")
    settings = Settings(tmp_path, (), (), AgentSettings(keep_recent_tokens=100))
    gateway = Gateway(
        Agent(settings, provider, None, SessionStore(tmp_path / "sessions")),
        {"test": RecordingChannel()},
        ask_timeout_s=1,
    )

    first = await gateway.process(Event("message", "/compact", Target("test", "room"), principal=OWNER))
    again = await gateway.process(Event("message", "/compact", Target("test", "room"), principal=OWNER))

    assert first == "Compacted 10 earlier entries into a summary; the latest turns stay verbatim."
    assert again == "Nothing to compact yet."


async def test_status_after_a_restart_counts_every_model_call_including_compactions(tmp_path: Path):
    home = tmp_path / "home"
    settings = Settings(home=home, providers=(), servers=(), agent=AgentSettings())
    provider = ScriptedProvider().say("first answer").say("second answer").say("- summary").say("third answer")
    store = SessionStore(settings.state / "sessions")
    gateway = Gateway(Agent(settings, provider, None, store), {"test": RecordingChannel()}, ask_timeout_s=1)
    room = Target("test", "room")

    await gateway.process(Event("message", f"first {LONG}", room, principal=OWNER))
    await gateway.process(Event("message", "second", room, principal=OWNER))
    assert (await gateway.process(Event("message", "/compact", room, principal=OWNER)) or "").startswith("Compacted")
    await gateway.process(Event("message", "third", room, principal=OWNER))
    before = await gateway.process(Event("message", "/status", room, principal=OWNER))
    restarted = Agent(settings, ScriptedProvider(), None, SessionStore(settings.state / "sessions"))
    after = await Gateway(restarted, {"test": RecordingChannel()}, ask_timeout_s=1).process(
        Event("message", "/status", room, principal=OWNER)
    )

    assert "Tokens used: 400 in / 40 out" in (before or "")
    assert "Context: ~110 tokens (the provider's count plus what came since) of 128,000; compacts at 108,000" in (
        before or ""
    )
    assert "Tokens used: 400 in / 40 out" in (after or "")
