"""Sub-agents end to end: `hermitcrab run` with the real spawn server, children as real processes (the fake CLI, or
`hermitcrab subagent` against the scripted LLM), announcements delivered over the webhook channel."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from hermitcrab.host.config import PROFILE_VARIABLES
from tests.support.cli import wait_for
from tests.support.fake_llm import FakeLLM, Reply, openai_text, openai_tool_calls
from tests.support.fences import fenced
from tests.support.spawn import FAKE_CLI
from tests.support.webhook_host import TOKEN, Host, events_in_main, remember_sink

PROVIDER_ENV = ("HERMITCRAB_HOME", *PROFILE_VARIABLES)


@pytest.fixture
def start(hermitcrab_home: Path, llm: FakeLLM, tmp_path: Path) -> Iterator[Callable[[], Host]]:
    """Start `hermitcrab run` whose only server is hermitcrab-spawn, with two fake CLIs and the agent runtime."""
    spawn = {
        "command": sys.executable,
        "args": [
            *("-m", "hermitcrab.servers.spawn", "--state", str(hermitcrab_home / "state" / "spawn")),
            *("--cli", f"fast={sys.executable} {FAKE_CLI} --sleep 0.2 --stdin"),
            *("--cli", f"slow={sys.executable} {FAKE_CLI} --sleep 2 --stdin"),
            *("--agent", f"{sys.executable} -m hermitcrab.host.cli subagent"),
        ],
        "env": {name: f"${{{name}:-}}" for name in PROVIDER_ENV},  # passed on from the host's environment
    }
    desktop = tmp_path / "desktop.json"
    desktop.write_text(json.dumps({"mcpServers": {"spawn": spawn}}))
    remember_sink(hermitcrab_home, llm)
    (hermitcrab_home / "config.toml").write_text("[webhook]\nowner = true\n")  # hooks speak for the owner here
    started: list[Host] = []

    def launch() -> Host:
        started.append(Host(hermitcrab_home, llm, desktop, tmp_path / f"run-{len(started)}.log"))
        return started[-1]

    yield launch
    for host in started:
        host.process.kill()
        host.process.wait(timeout=10)


def ask(host: Host, llm: FakeLLM, message: str) -> None:
    body = {"message": message, "session": "main", "delivery": {"channel": "webhook", "to": llm.sink_url}}
    answer = httpx.post(
        f"http://127.0.0.1:{host.port}/hooks/agent", json=body, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert answer.status_code == 202


def spawn(call_id: str, label: str, **arguments: Any) -> tuple[str, str, str]:
    return (call_id, "sessions_spawn", json.dumps({"task": f"{label} task", "label": label, **arguments}))


def system_of(request: dict[str, Any]) -> str:
    return request["messages"][0]["content"]


def note_of(request: dict[str, Any]) -> str:
    """The host's runtime note on the turn, the message before the turn's own."""
    return request["messages"][-2]["content"]


def last_message(request: dict[str, Any]) -> str:
    """The newest message's text; a sub-agent's result arrives fenced as data, and this is what the fence holds."""
    text = request["messages"][-1]["content"]
    inside = fenced(text)
    return inside[1] if inside else text


def test_two_children_finishing_in_the_opposite_order_are_both_announced_before_the_final_reply(
    start, llm: FakeLLM, hermitcrab_home: Path
):
    llm.enqueue(
        openai_tool_calls(
            spawn("c1", "slowpoke", runtime="cli", cli="slow"), spawn("c2", "quick", runtime="cli", cli="fast")
        ),
        openai_text("Started two sub-agents."),
        openai_text("NO_REPLY"),
        openai_text("Both are done: slowpoke and quick."),
    )
    host = start()
    ask(host, llm, "research both")
    wait_for(lambda: len(llm.delivered) == 2, f"not both replies were delivered: {llm.delivered}\n{host.stderr}")

    assert [reply["text"] for reply in llm.delivered] == [
        "Started two sub-agents.",
        "Both are done: slowpoke and quick.",
    ]
    first, second = llm.requests[2], llm.requests[3]
    assert fenced(first["messages"][-1]["content"]) is not None  # a sub-agent's result is data, not an instruction
    assert last_message(first) == '[event from spawn]\n[sub-agent quick finished: ok] ["quick task"]'
    assert 'Sub-agents still working for this session (1): "slowpoke"' in note_of(first)
    assert last_message(second) == '[event from spawn]\n[sub-agent slowpoke finished: ok] ["slowpoke task"]'
    assert "Sub-agents still working" not in note_of(second)
    wait_for(lambda: len(events_in_main(hermitcrab_home)) == 2, "both runs should be recorded in the main session")


def test_an_agent_child_runs_hermitcrab_subagent_with_its_own_prompt_and_reports_back(
    start, llm: FakeLLM, hermitcrab_home: Path
):
    (hermitcrab_home / "workspace").mkdir()
    for name in ("SOUL.md", "MEMORY.md", "HEARTBEAT.md"):
        (hermitcrab_home / "workspace" / name).write_text(f"{name} text\n")
    llm.enqueue(
        openai_tool_calls(spawn("c1", "counter")),
        openai_text("Counting in the background."),
        openai_text("There are 7 crabs."),
        openai_text("Seven crabs, says the counter."),
    )
    host = start()
    ask(host, llm, "count the crabs")
    wait_for(lambda: len(llm.delivered) == 2, f"the result was not announced: {llm.delivered}\n{host.stderr}")

    child = llm.requests[2]
    assert system_of(child).startswith("You are a sub-agent")
    assert "SOUL.md text" in system_of(child)
    assert "MEMORY.md" not in system_of(child) and "HEARTBEAT.md" not in system_of(child)
    assert last_message(child) == "counter task" and "tools" not in child  # no ask_user, no message
    assert last_message(llm.requests[3]) == "[event from spawn]\n[sub-agent counter finished: ok] There are 7 crabs."
    assert llm.delivered[-1] == {"text": "Seven crabs, says the counter."}
    (run_dir,) = (hermitcrab_home / "state" / "spawn" / "runs").iterdir()
    assert list((run_dir / "sessions").glob("*.jsonl"))  # the child's transcript, kept with its run


def test_a_host_restart_between_a_childs_end_and_its_announcement_announces_it_exactly_once(
    start, llm: FakeLLM, hermitcrab_home: Path
):
    llm.enqueue(
        openai_tool_calls(spawn("c1", "quick", runtime="cli", cli="fast")),
        openai_text("Started."),
        Reply(openai_text("too late"), delay_s=30),
        openai_text("The sub-agent finished."),
    )
    first = start()
    ask(first, llm, "do it in the background")
    wait_for(lambda: len(llm.requests) == 3, "the announcement never reached the model")
    first.process.kill()
    first.process.wait(timeout=10)
    start()
    wait_for(lambda: len(llm.delivered) == 2, f"the announcement did not come after the restart: {llm.delivered}")
    time.sleep(0.5)  # a second announcement would show up now

    assert [reply["text"] for reply in llm.delivered] == ["Started.", "The sub-agent finished."]
    assert len(llm.requests) == 4 and "[sub-agent quick finished: ok]" in last_message(llm.requests[3])
    assert len(events_in_main(hermitcrab_home)) == 1  # recorded before the 0.5 s wait ended
