"""`hermitcrab run` end to end: a real host process, a real stdio MCP server with a durable queue, the scripted LLM,
and replies delivered over HTTP by the webhook channel."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.support.cli import wait_for
from tests.support.fake_llm import FakeLLM, Reply, openai_text, openai_tool_calls
from tests.support.webhook_host import TOKEN, Host, events_in_main, hosts, remember_sink

TEST_SERVER = Path(__file__).parents[1] / "support" / "mcp_test_server.py"


@pytest.fixture
def queue_file(tmp_path: Path) -> Path:
    return tmp_path / "queue.json"


@pytest.fixture
def start(hermitcrab_home: Path, llm: FakeLLM, tmp_path: Path, queue_file: Path) -> Iterator[Callable[[], Host]]:
    """Start `hermitcrab run` with the test server (its queue kept in `queue_file`) and a webhook endpoint."""
    desktop = tmp_path / "desktop.json"
    server = {"command": sys.executable, "args": [str(TEST_SERVER), "--name", "kit", "--queue-file", str(queue_file)]}
    desktop.write_text(json.dumps({"mcpServers": {"kit": server}}))
    with hosts(hermitcrab_home, llm, desktop, tmp_path) as launch:
        yield launch


def test_a_waiting_item_is_run_announced_and_acknowledged_then_sigterm_exits_cleanly(
    start, llm: FakeLLM, hermitcrab_home: Path, queue_file: Path
):
    queue_file.write_text(json.dumps([{"id": "job-1:run-1", "text": "remind the user to stretch"}]))
    remember_sink(hermitcrab_home, llm)
    llm.enqueue(openai_text("Time to stretch!"))

    host = start()
    wait_for(lambda: json.loads(queue_file.read_text()) == [], "the item was not acknowledged")

    assert llm.delivered == [{"text": "Time to stretch!"}]
    assert "remind the user to stretch" in llm.requests[0]["messages"][-1]["content"]
    assert events_in_main(hermitcrab_home) == ["job-1:run-1"]
    assert host.stop() == 0


def test_an_item_interrupted_by_kill_9_mid_turn_runs_once_after_restart(
    start, llm: FakeLLM, hermitcrab_home: Path, queue_file: Path
):
    queue_file.write_text(json.dumps([{"id": "job-2:run-1", "text": "summarise the news"}]))
    remember_sink(hermitcrab_home, llm)
    llm.enqueue(Reply(openai_text("too late"), delay_s=30), openai_text("Here is the summary."))

    first = start()
    wait_for(lambda: len(llm.requests) == 1, "the first turn never reached the model")
    first.process.kill()
    first.process.wait(timeout=10)
    assert json.loads(queue_file.read_text()) != []  # not acknowledged: the turn never finished
    start()
    wait_for(lambda: json.loads(queue_file.read_text()) == [], "the item was not run after the restart")
    time.sleep(0.3)  # any second run would show up now

    assert llm.delivered == [{"text": "Here is the summary."}]
    assert events_in_main(hermitcrab_home) == ["job-2:run-1"]
    assert len(llm.requests) == 2


def test_a_webhook_runs_a_turn_and_delivers_to_its_callback(start, llm: FakeLLM):
    llm.enqueue(openai_text("Build 812 is green."))
    host = start()
    url = f"http://127.0.0.1:{host.port}/hooks/agent"
    body = {"message": "how is the build?", "delivery": {"channel": "webhook", "to": llm.sink_url}}

    refused = httpx.post(url, json=body, headers={"Authorization": "Bearer wrong"})
    accepted = httpx.post(url, json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    wait_for(lambda: llm.delivered != [], "the reply was not delivered")

    assert refused.status_code == 401 and accepted.status_code == 202
    assert llm.delivered == [{"text": "Build 812 is green."}]
    assert len(llm.requests) == 1 and TOKEN not in host.stderr


def test_a_reminder_the_agent_schedules_with_the_cron_server_fires_and_is_announced_once(
    hermitcrab_home: Path, llm: FakeLLM, tmp_path: Path
):
    cron_state = tmp_path / "cron"
    desktop = tmp_path / "desktop.json"
    cron = {"command": sys.executable, "args": ["-m", "hermitcrab.servers.cron", "--state", str(cron_state)]}
    desktop.write_text(json.dumps({"mcpServers": {"cron": cron}}))
    (hermitcrab_home / "config.toml").write_text("[webhook]\nowner = true\n")  # the hook speaks for the owner
    host = Host(hermitcrab_home, llm, desktop, tmp_path / "run.log")
    at = (datetime.now(UTC) + timedelta(seconds=3)).isoformat()
    job = {
        "name": "stretch",
        "schedule": {"kind": "at", "at": at},
        "payload": {"kind": "system_event", "text": "Remind the user to stretch."},
        "delivery": {"mode": "announce", "channel": "webhook", "to": llm.sink_url},
        "delete_after_run": True,
    }
    llm.enqueue(
        openai_tool_calls(("c1", "cron_add", json.dumps({"job": job}))),
        openai_text("Reminder set."),
        openai_text("Time to stretch!"),
    )
    try:
        ask = {"message": "remind me to stretch in 3 seconds", "delivery": {"channel": "webhook", "to": llm.sink_url}}
        response = httpx.post(
            f"http://127.0.0.1:{host.port}/hooks/agent", json=ask, headers={"Authorization": f"Bearer {TOKEN}"}
        )
        wait_for(lambda: len(llm.delivered) == 2, f"expected two deliveries, got {llm.delivered}")
        time.sleep(0.5)  # a second announcement would arrive now
        assert host.stop() == 0
    finally:
        host.process.kill()

    assert response.status_code == 202
    assert llm.delivered == [{"text": "Reminder set."}, {"text": "Time to stretch!"}]
    assert "Remind the user to stretch." in llm.requests[2]["messages"][-1]["content"]
    assert len(events_in_main(hermitcrab_home)) == 1
    assert json.loads((cron_state / "cron.json").read_text())["jobs"] in ([], {})
