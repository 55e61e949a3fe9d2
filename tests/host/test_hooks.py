"""Lifecycle hooks in one process: the real dispatcher running real subprocess hooks (HOOK.md folders), the real
exec server over MCP for the tool hooks, a gateway with a recording channel and a scripted model."""

from __future__ import annotations

import datetime as dt
import json
import stat
import sys
from pathlib import Path

import pytest

from hermitcrab.host.cli.hooks import report
from hermitcrab.host.config import AgentSettings, HookEntry, HookSettings, ServerConfig, Settings
from hermitcrab.host.events import OWNER, Event, Target, person
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.hooks.catalog import discover
from hermitcrab.host.hooks.dispatch import Hooks, last_errors
from hermitcrab.host.mcp.pool import McpPool
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent
from hermitcrab.host.turn.subagent import run_subagent
from tests.support.channels import RecordingChannel, run_turn_with_servers
from tests.support.hooks import command_hook, entry_point_package, seen
from tests.support.scripted_provider import ScriptedProvider

TEST_SERVER = Path(__file__).parents[1] / "support" / "mcp_test_server.py"
ROOM = Target("test", "room", "owner")
PEER_ROOM = Target("test", "dm-5", "5")


def exec_server(root: Path, state: Path) -> ServerConfig:
    args = ("-m", "hermitcrab.servers.exec", "--root", str(root), "--state", str(state))
    args += ("--security", "full", "--ask", "off", "--sandbox", "none")
    return ServerConfig("exec", command=sys.executable, args=args, timeout_s=30)


def settings_with(home: Path, *enabled: str, servers: tuple[ServerConfig, ...] = (), **each: HookEntry) -> Settings:
    return Settings(home, (), servers, AgentSettings(), hooks=HookSettings(enabled=enabled, each=each))


def gateway_for(
    settings: Settings, provider: ScriptedProvider, channel: RecordingChannel, at: dt.datetime | None = None
) -> Gateway:
    """A gateway whose agent's clock reads `at` (or the real time)."""
    store = SessionStore(settings.state / "sessions")
    made = (
        Agent(settings, provider, None, store)
        if at is None
        else Agent(settings, provider, None, store, clock=lambda: at)
    )
    return Gateway(made, {channel.name: channel}, ask_timeout_s=5)


async def test_a_tool_before_hook_denies_exec_with_a_reason_the_model_gets_and_the_command_never_runs(tmp_path: Path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    gate = command_hook(
        tmp_path / "hooks",
        "no-forbidden",
        ["tool:before"],
        """
        if "forbidden" in event["arguments"].get("command", ""):
            print(json.dumps({"action": "deny", "reason": "forbidden files stay unmade"}))
        """,
    )
    calls = (("x1", "exec", {"command": "touch forbidden.txt"}), ("x2", "exec", {"command": "touch fine.txt"}))
    provider = ScriptedProvider().call(*calls).say("done")
    settings = settings_with(
        tmp_path, "no-forbidden", "command-log", servers=(exec_server(workspace, tmp_path / "state" / "exec"),)
    )

    await run_turn_with_servers(settings, provider, RecordingChannel(), Event("message", "go", ROOM, principal=OWNER))

    denied, allowed = provider.seen[1]["messages"][-2:]
    assert denied.is_error and denied.content == (
        "exec was not called: the hook no-forbidden refused it: forbidden files stay unmade"
    )
    assert not allowed.is_error
    assert not (workspace / "forbidden.txt").exists() and (workspace / "fine.txt").exists()
    first = seen(gate)[0]
    assert (first["event"], first["version"], first["tool"], first["server"]) == ("tool:before", 1, "exec", "exec")
    assert first["principal"]["kind"] == "owner" and first["session"] == "main"
    log = tmp_path / "state" / "logs" / "commands.jsonl"
    (record,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert (record["command"], record["is_error"], record["rights"]) == ("touch fine.txt", False, "owner")
    assert stat.S_IMODE(log.stat().st_mode) == 0o600


@pytest.mark.parametrize(("on_error", "sent"), [("deny", False), ("allow", True)])
async def test_hooks_past_their_timeout_leave_the_turn_answered_and_tool_before_fails_as_declared(
    tmp_path: Path, on_error: str, sent: bool
):
    slow = "time.sleep(30)\n"
    command_hook(tmp_path / "hooks", "slow-inbox", ["message:received"], slow, timeout_s=0.5)
    command_hook(tmp_path / "hooks", "slow-gate", ["tool:before"], slow, timeout_s=0.5, on_error=on_error)
    provider = ScriptedProvider().call(("m1", "message", {"text": "progress note"})).say("all done")
    channel = RecordingChannel()
    gateway = gateway_for(settings_with(tmp_path, "slow-inbox", "slow-gate"), provider, channel)

    reply = await gateway.process(Event("message", "work on it", ROOM, principal=OWNER))

    assert reply == "all done" and channel.texts[-1] == "all done"
    assert ("progress note" in channel.texts) is sent
    result = provider.seen[1]["messages"][-1]
    assert result.is_error is not sent
    if not sent:
        assert (
            result.content
            == "message was not called: the hook slow-gate failed (no answer within 0.5 s), so the call was refused"
        )
    listed = report(gateway.agent.settings)
    assert "slow-inbox: on" in listed and "on message:received): no answer within 0.5 s" in listed


async def test_tool_before_may_rewrite_arguments_and_ask_the_owner_who_alone_can_approve(tmp_path: Path):
    command_hook(
        tmp_path / "hooks",
        "polite",
        ["tool:before"],
        """
        answer = {"action": "ask", "reason": "messages are checked", "arguments": {"text": "Kind regards"}}
        print(json.dumps(answer))
        """,
    )
    settings = settings_with(tmp_path, "polite")
    provider = ScriptedProvider().call(("m1", "message", {"text": "hey"})).say("sent it")
    channel = RecordingChannel(answer="allow", trigger="wants your approval")
    gateway = gateway_for(settings, provider, channel)
    channel.gateway = gateway

    await gateway.process(Event("message", "send a note", ROOM, principal=OWNER))

    question = channel.texts[0]
    assert "message" in question and "Kind regards" in question and "- polite: messages are checked" in question
    assert "Kind regards" in channel.texts and "hey" not in channel.texts
    peer = person("peer", "test", "5")
    provider.call(("m2", "message", {"text": "hey"})).say("could not")
    await gateway.process(Event("message", "send one", PEER_ROOM, session_key="dm:5", principal=peer))
    refused = provider.seen[-1]["messages"][-1]
    assert refused.is_error and "requires the owner's approval" in refused.content


async def test_quiet_hours_holds_replies_to_others_overnight_and_lets_the_owners_through(tmp_path: Path):
    night = dt.datetime(2026, 12, 3, 23, 30).astimezone()
    quiet = HookEntry(enabled=True, options={"start": "22:00", "end": "07:00"})
    settings = settings_with(tmp_path, **{"quiet-hours": quiet})
    provider = ScriptedProvider().say("for the friend").say("for the owner")
    channel = RecordingChannel()
    gateway = gateway_for(settings, provider, channel, night)
    peer = person("peer", "test", "5")

    held = await gateway.process(Event("message", "hi", PEER_ROOM, session_key="dm:5", principal=peer))
    await gateway.process(Event("message", "hi", ROOM, principal=OWNER))

    assert held == "for the friend" and channel.texts == ["for the owner"]
    assert gateway.agent.session("dm:5").transcript.view().live[-1]["text"] == "for the friend"


async def test_the_session_capture_is_a_hook_the_owner_can_turn_off(tmp_path: Path):
    off = settings_with(tmp_path, **{"session-capture": HookEntry(enabled=False)})
    gateway = gateway_for(off, ScriptedProvider().say("The ferry leaves at 09:40."), RecordingChannel())
    await gateway.process(Event("message", "when does the ferry leave", ROOM, principal=OWNER))

    said = await gateway.process(Event("message", "/reset", ROOM, principal=OWNER))

    assert (said or "").startswith("Started a new session") and "saved" not in (said or "")
    assert not (tmp_path / "workspace" / "memory").exists()


def test_hooks_are_found_by_precedence_and_one_that_cannot_load_says_why(tmp_path: Path):
    workspace_hooks, home_hooks = tmp_path / "workspace" / "hooks", tmp_path / "hooks"
    command_hook(workspace_hooks, "same", ["turn:done"], "", priority=5)
    command_hook(home_hooks, "same", ["turn:done"], "")
    command_hook(home_hooks, "typo", ["turn:finished"], "")
    (home_hooks / "nothing").mkdir()
    (home_hooks / "nothing" / "HOOK.md").write_text("---\nevents: [turn:done]\n---\nNo command.\n")

    found, broken = discover([workspace_hooks, home_hooks])

    assert [h.name for h in found if h.name == "same"] == ["same"] and found[0].priority == 5
    reasons = {b.name: b.reason for b in broken}
    assert reasons["same"] == "a hook of that name was found before it"
    assert reasons["typo"].startswith("unknown event 'turn:finished'; events are: gateway:start")
    assert reasons["nothing"].startswith("give exactly one of command")
    loaded = Hooks.load(settings_with(tmp_path, "same", "missing"))
    assert [h.name for h in loaded.hooks] == ["session-capture", "same"]  # priority 0 (the bundled one's), then 5
    assert ("missing", "no hook of that name was found") in {(b.name, b.reason) for b in loaded.broken}


async def test_an_entry_point_hook_installed_beside_the_host_is_found_and_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    source = '''
        """Counts finished turns."""

        class Counter:
            seen = []

            async def on_turn_done(self, payload, context):
                Counter.seen.append((payload["event"], payload["usage"]["output_tokens"], payload["reply"]))
        '''
    site = entry_point_package(tmp_path / "site", "turn-counter", "turn_counter", source, "turn_counter:Counter")
    monkeypatch.syspath_prepend(str(site))
    settings = settings_with(tmp_path, "turn-counter")
    gateway = gateway_for(settings, ScriptedProvider().say("hello"), RecordingChannel())

    await gateway.process(Event("message", "hi", ROOM, principal=OWNER))

    (hook,) = [h for h in gateway.agent.hooks.hooks if h.name == "turn-counter"]
    assert hook.events == ("turn:done",) and hook.source == "entry point turn_counter:Counter (turn_counter-hook)"
    assert sys.modules["turn_counter"].Counter.seen == [("turn:done", 10, "hello")]


async def test_message_received_may_rewrite_a_message_or_drop_it_unanswered(tmp_path: Path):
    command_hook(
        tmp_path / "hooks",
        "screen",
        ["message:received"],
        """
        if "lottery" in event["text"]:
            print(json.dumps({"action": "drop", "reason": "spam"}))
        else:
            print(json.dumps({"text": event["text"].replace("pls", "please")}))
        """,
    )
    provider = ScriptedProvider().say("Sure.")
    channel = RecordingChannel()
    gateway = gateway_for(settings_with(tmp_path, "screen"), provider, channel)

    dropped = await gateway.process(Event("message", "you won the lottery", ROOM, principal=OWNER))
    await gateway.process(Event("message", "pls water the plants", ROOM, principal=OWNER))

    assert dropped is None and channel.texts == ["Sure."]
    (request,) = provider.seen
    assert request["messages"][-1].content == "please water the plants"


async def test_a_hook_that_exits_badly_or_answers_garbage_is_skipped_with_its_error_kept(tmp_path: Path):
    scripts = {
        "exits": "sys.exit(3)",
        "not-json": "print('hello')",
        "floods": "sys.stdout.write('x' * 2_000_000)",
        "wrong-action": "print(json.dumps({'action': 'deny'}))",
    }
    for name, script in scripts.items():
        command_hook(tmp_path / "hooks", name, ["turn:done"], script)
    hooks = Hooks.load(settings_with(tmp_path, *scripts))

    assert await hooks.fire("turn:done", {"reply": "hi"}) == []

    errors = {name: entry["error"] for name, entry in last_errors(settings_with(tmp_path)).items()}
    assert errors == {
        "exits": "exited with status 3",
        "not-json": "its output is not JSON (print nothing, or one JSON object)",
        "floods": "more than 1,000,000 bytes on stdout",
        "wrong-action": "bad answer: action 'deny' does not apply to turn:done (its actions: none: it only observes)",
    }


async def test_compaction_is_told_before_and_after_with_its_sizes(tmp_path: Path):
    watch = command_hook(tmp_path / "hooks", "watch", ["compaction:before", "compaction:after"], "")
    small = AgentSettings(context_window_tokens=8_000, reserve_tokens=1_000, keep_recent_tokens=2_000)
    settings = Settings(tmp_path, (), (), small, hooks=HookSettings(enabled=("watch",)))
    gateway = gateway_for(settings, ScriptedProvider(summary="- the older turns"), RecordingChannel())
    transcript = gateway.agent.session("main").transcript
    for index in range(8):
        transcript.append("user", text=f"turn {index} " + "m" * 3_000)
        transcript.append("assistant", text=f"reply {index}")

    said = await gateway.process(Event("message", "/compact", ROOM, principal=OWNER))

    before, after = seen(watch)
    assert (before["event"], after["event"]) == ("compaction:before", "compaction:after")
    assert before["session"] == "main" and before["required"] is True
    assert after["replaced"] > 0 and after["after_chars"] < after["before_chars"] == before["before_chars"]
    assert after["failure"] is None and (said or "").startswith(f"Compacted {after['replaced']} earlier entries")


async def test_a_sub_agents_tool_calls_pass_the_same_hooks_and_nobody_can_approve_for_it(tmp_path: Path):
    gate = command_hook(
        tmp_path / "hooks",
        "gate",
        ["tool:before"],
        """
        action = "deny" if event["arguments"]["text"] == "no" else "ask"
        print(json.dumps({"action": action, "reason": "checked"}))
        """,
    )
    kit = ServerConfig("kit", command=sys.executable, args=(str(TEST_SERVER),))
    settings = settings_with(tmp_path, "gate", servers=(kit,))
    provider = ScriptedProvider().call(("e1", "echo", {"text": "no"}), ("e2", "echo", {"text": "maybe"})).say("done")
    async with McpPool(settings.servers) as pool:
        agent = Agent(settings, provider, pool, SessionStore(settings.state / "sessions"))
        result = await run_subagent(agent, "echo twice", "subagent:r1", "r1")

    denied, unasked = provider.seen[1]["messages"][-2:]
    assert result.reply == "done" and denied.content == "echo was not called: the hook gate refused it: checked"
    assert (
        unasked.content
        == "echo was not called: a hook requires the owner's approval, and a sub-agent has nobody to ask"
    )
    assert [(p["kind"], p["session"]) for p in seen(gate)] == [("subagent", "subagent:r1")] * 2
