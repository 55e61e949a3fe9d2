"""The heartbeat: a model call only when HEARTBEAT.md has tasks, the hours are right and the session is free."""

from __future__ import annotations

import datetime as dt
from dataclasses import replace
from importlib.resources import files
from pathlib import Path

import anyio
import pytest

from hermitcrab.host.config import AgentSettings, HeartbeatSettings, Settings
from hermitcrab.host.events import OWNER, Event, Target
from hermitcrab.host.gateway.commands import status
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.gateway.heartbeat import Heartbeat, has_tasks, is_heartbeat_ok
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent
from tests.support.channels import RecordingChannel
from tests.support.scripted_provider import ScriptedProvider

ROOM = Target("test", "room-1", "alice")
NOON = dt.datetime(2026, 12, 1, 12, 0, tzinfo=dt.UTC)
TASKS = "# Heartbeat\n<!-- checked every 30 minutes -->\n- If a deploy failed, tell me.\n"


@pytest.mark.parametrize(
    ("reply", "quiet"),
    [
        ("HEARTBEAT_OK", True),
        ("  HEARTBEAT_OK\n", True),
        ("All calm. HEARTBEAT_OK", True),
        ("HEARTBEAT_OK " + "x" * 300, True),
        ("HEARTBEAT_OK " + "x" * 301, False),
        ("The deploy failed at 11:40.", False),
        ("Note: HEARTBEAT_OK is what I say when calm, but the deploy failed.", False),
    ],
)
def test_only_an_ok_with_little_around_it_is_quiet(reply: str, quiet: bool):
    assert is_heartbeat_ok(reply) is quiet


@pytest.mark.parametrize(
    ("markdown", "tasks"),
    [("", False), ("# Heartbeat\n\n## Daily\n", False), ("# H\n<!--\n- not a task\n-->\n", False), (TASKS, True)],
)
def test_headings_and_comments_are_not_tasks(markdown: str, tasks: bool):
    assert has_tasks(markdown) is tasks


def test_active_hours_in_their_own_zone_and_across_midnight():
    berlin_day = HeartbeatSettings(30, (dt.time(8), dt.time(22)), "Europe/Berlin")  # UTC+1 in December
    night = HeartbeatSettings(30, (dt.time(22), dt.time(6)), "UTC")

    assert not berlin_day.active_at(dt.datetime(2026, 12, 1, 6, 30, tzinfo=dt.UTC))
    assert berlin_day.active_at(dt.datetime(2026, 12, 1, 7, 0, tzinfo=dt.UTC))
    assert not berlin_day.active_at(dt.datetime(2026, 12, 1, 21, 30, tzinfo=dt.UTC))
    assert night.active_at(dt.datetime(2026, 12, 1, 23, 0, tzinfo=dt.UTC))
    assert night.active_at(dt.datetime(2026, 12, 1, 5, 59, tzinfo=dt.UTC))
    assert not night.active_at(NOON)


def heartbeat(tmp_path: Path, submitted: list[Event], *, busy: bool = False, every: float = 30) -> Heartbeat:
    async def submit(event: Event) -> None:
        submitted.append(event)

    return Heartbeat(HeartbeatSettings(every), tmp_path, submit, lambda: busy, lambda: ROOM, lambda: NOON)


async def test_a_beat_is_skipped_while_the_main_session_is_busy_or_there_is_nothing_to_check(tmp_path: Path):
    submitted: list[Event] = []

    assert not await heartbeat(tmp_path, submitted).beat()  # no HEARTBEAT.md
    (tmp_path / "HEARTBEAT.md").write_text("# Heartbeat\n<!-- nothing yet -->\n")
    assert not await heartbeat(tmp_path, submitted).beat()
    (tmp_path / "HEARTBEAT.md").write_text(TASKS)
    assert not await heartbeat(tmp_path, submitted, busy=True).beat()
    assert submitted == []
    assert await heartbeat(tmp_path, submitted).beat()
    assert [(e.kind, e.session_key, e.target) for e in submitted] == [("heartbeat", "main", ROOM)]


async def test_the_timer_beats_every_interval(tmp_path: Path):
    (tmp_path / "HEARTBEAT.md").write_text(TASKS)
    submitted: list[Event] = []

    with anyio.move_on_after(0.5):
        await heartbeat(tmp_path, submitted, every=0.1 / 60).run()

    assert 3 <= len(submitted) <= 5


async def test_heartbeat_ok_is_not_delivered_but_a_finding_is(tmp_path: Path):
    channel = RecordingChannel()
    settings = Settings(home=tmp_path, providers=(), servers=(), agent=AgentSettings())
    provider = ScriptedProvider().say("HEARTBEAT_OK").say("Heads up: the nightly deploy failed.")
    gateway = Gateway(Agent(settings, provider, None, SessionStore(tmp_path / "s")), {"test": channel}, ask_timeout_s=1)
    settings.workspace.mkdir()
    (settings.workspace / "HEARTBEAT.md").write_text(TASKS)
    beat = Heartbeat(
        HeartbeatSettings(30), settings.workspace, gateway.submit, lambda: False, lambda: ROOM, lambda: NOON
    )

    async with anyio.create_task_group() as group:
        await group.start(gateway.serve)
        await beat.beat()
        await beat.beat()
        await channel.next_message()
        group.cancel_scope.cancel()

    assert [text for _, text in channel.sent] == ["Heads up: the nightly deploy failed."]
    assert "HEARTBEAT.md" in provider.seen[0]["messages"][-1].content


async def test_inits_heartbeat_file_costs_no_model_call_until_a_task_is_written(tmp_path: Path):
    settings = Settings(home=tmp_path, providers=(), servers=(), agent=AgentSettings())
    provider = ScriptedProvider().say("HEARTBEAT_OK")
    gateway = Gateway(Agent(settings, provider, None, SessionStore(tmp_path / "s")), {}, ask_timeout_s=1)

    async def run_now(event: Event) -> None:
        await gateway.process(event)

    settings.workspace.mkdir()
    template = files("hermitcrab.workspace").joinpath("HEARTBEAT.md").read_text(encoding="utf-8")
    (settings.workspace / "HEARTBEAT.md").write_text(template)
    beat = Heartbeat(HeartbeatSettings(30), settings.workspace, run_now, lambda: False, lambda: ROOM, lambda: NOON)

    sent = [await beat.beat() for _ in range(10)]
    assert sent == [False] * 10
    assert provider.seen == []

    (settings.workspace / "HEARTBEAT.md").write_text(template + "- If a deploy failed, tell me.\n")
    assert await beat.beat()
    assert len(provider.seen) == 1


async def test_a_quiet_heartbeat_leaves_the_main_context_as_it_was_and_shows_in_status(tmp_path: Path):
    settings = Settings(home=tmp_path, providers=(), servers=(), agent=AgentSettings())
    provider = ScriptedProvider().say("Hello.").say("HEARTBEAT_OK").say("Still here.").say("The deploy failed.")
    agent = Agent(settings, provider, None, SessionStore(tmp_path / "s"), clock=lambda: NOON)
    gateway = Gateway(agent, {"test": RecordingChannel()}, ask_timeout_s=1)
    settings.workspace.mkdir()
    (settings.workspace / "HEARTBEAT.md").write_text(TASKS)

    async def run_now(event: Event) -> None:
        await gateway.process(event)

    beat = Heartbeat(HeartbeatSettings(30), settings.workspace, run_now, lambda: False, lambda: ROOM, lambda: NOON)
    message = Event("message", "hi", ROOM, principal=OWNER)
    await gateway.process(message)
    before = agent.session("main").messages()

    assert await beat.beat()
    assert agent.session("main").messages() == before
    assert "Last heartbeat: 2026-12-01T12:00:00+00:00, nothing needed attention" in await status(agent, message)
    await gateway.process(replace(message, text="still there?"))
    sent = provider.seen[2]["messages"]  # the next turn's request: the same history, then its own messages
    assert sent[: len(before)] == before and [m.role for m in sent[len(before) :]] in (["user"], ["user", "user"])
    assert not any("[heartbeat]" in m.content or "HEARTBEAT_OK" in m.content for m in sent)
    assert [e["kind"] for e in agent.session("main").transcript.entries()].count("aside") == 1

    assert await beat.beat()  # a finding stays: the user may answer it
    assert agent.session("main").messages()[-1].content == "The deploy failed."
    assert "Last heartbeat: 2026-12-01T12:00:00+00:00, reported: The deploy failed." in await status(agent, message)
