"""Every message answered exactly once across kill -9: `hermitcrab run` with the real discord.py client against a fake
Discord and the scripted LLM, killed in the middle of turns and started again."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.cli import CLI, cli_env, wait_for
from tests.support.discord_host import STREAMED, DiscordRun, start_run, stop
from tests.support.fake_discord import OWNER, FakeDiscord
from tests.support.fake_llm import FakeLLM, Reply, free_port, openai_text, openai_tool_calls

from .conftest import TEST_SERVER

HOOK_PORT = free_port()
HOOK_TOKEN = "hook-token-for-delivery-tests"
SLOW_S = 0.8
TRIALS = 3
"""Kill -9 trials in the suite; bench/chaos.py runs many more (`--part messages`)."""


@pytest.fixture
def start(
    hermitcrab_home: Path, llm: FakeLLM, discord_api: FakeDiscord, tmp_path: Path
) -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    """Start `hermitcrab run` (the owner named, the test kit as its one server, its queue in `kit-queue.json`, the
    webhook on `HOOK_PORT`); each start logs to its own file."""
    (hermitcrab_home / "config.toml").write_text(
        f"""
[heartbeat]
every_minutes = 0

[agent]
retry_wait_s = 0.1

[webhook]
listen = "127.0.0.1:{HOOK_PORT}"
token = "{HOOK_TOKEN}"

[discord]
owners = ["{OWNER}"]
"""
    )
    desktop = tmp_path / "desktop.json"
    queue = ["--queue-file", str(tmp_path / "kit-queue.json")]
    kit = {"command": sys.executable, "args": [str(TEST_SERVER), "--name", "kit", *queue]}
    desktop.write_text(json.dumps({"mcpServers": {"kit": kit}}))
    runs: list[DiscordRun] = []

    def launch() -> subprocess.Popen[bytes]:
        runs.append(
            start_run(
                hermitcrab_home, llm, discord_api, tmp_path / f"run-{len(runs)}.log", mcp_config=desktop, env=STREAMED
            )
        )
        return runs[-1].process

    yield launch
    for run in runs:
        run.kill()


def kill_9(process: subprocess.Popen[bytes]) -> None:
    process.kill()
    process.wait(timeout=10)


def test_a_message_cut_off_while_the_model_answers_is_answered_once_after_the_restart(
    start, discord_api: FakeDiscord, llm: FakeLLM, hermitcrab_home: Path
):
    host = start()
    llm.enqueue(Reply(openai_text("too late"), delay_s=30))
    message = discord_api.user_says(OWNER, "what is the capital of Peru?")
    wait_for(lambda: len(llm.requests) == 1, "the model was never asked")

    kill_9(host)
    llm.enqueue(openai_text("Lima."))
    again = start()
    wait_for(lambda: discord_api.replies_to(message) != [], f"no answer after the restart: {discord_api.sent}")
    discord_api.user_says(OWNER, "what is the capital of Peru?", message_id=message)  # a replay of the same message
    stop(again)

    assert [sent.content for sent in discord_api.replies_to(message)] == ["Lima."]
    assert len(llm.requests) == 2
    transcript = next((hermitcrab_home / "state" / "sessions").glob("main-*.jsonl")).read_text().splitlines()
    users = [json.loads(line) for line in transcript if json.loads(line)["kind"] == "user"]
    assert [entry["text"] for entry in users] == ["what is the capital of Peru?"]  # resumed, not asked twice


def test_a_turn_that_ran_tools_is_not_repeated_after_a_crash_the_sender_is_told(
    start, discord_api: FakeDiscord, llm: FakeLLM
):
    host = start()
    llm.enqueue(openai_tool_calls(("e1", "echo", json.dumps({"text": "sent the invoice"}))))
    llm.enqueue(Reply(openai_text("Invoice sent."), delay_s=30))
    message = discord_api.user_says(OWNER, "send the invoice to ACME")
    wait_for(lambda: len(llm.requests) == 2, "the tool never ran")

    wait_for(lambda: "echo" in "".join(s.content for s in discord_api.replies_to(message)), "no draft of the tool")
    kill_9(host)
    again = start()
    notice = "I restarted while working on “send the invoice to ACME”; ask again if you still need it."

    def said() -> list[str]:
        return [sent.content for sent in discord_api.replies_to(message)]

    wait_for(lambda: said() == [notice], f"no word after the restart: {discord_api.sent}")  # the draft, replaced
    stop(again)

    assert said() == [notice] and discord_api.deleted == []
    assert len(llm.requests) == 2  # no model call repeated the turn


def test_kills_at_random_moments_leave_every_message_answered_once(start, discord_api: FakeDiscord, llm: FakeLLM):
    rng = random.Random(24_25)
    host = start()
    messages: list[str] = []
    for trial in range(TRIALS):
        llm.enqueue(*(Reply(openai_text(f"answer {trial}.{n}"), delay_s=SLOW_S) for n in range(2)))
        messages.append(discord_api.user_says(OWNER, f"question {trial}"))
        time.sleep(rng.uniform(0, SLOW_S * 1.5))  # before, during or after the model's answer and its delivery
        kill_9(host)
        host = start()
    wait_for(lambda: all(discord_api.replies_to(m) for m in messages), f"unanswered: {discord_api.sent}", 60)
    stop(host)

    answers = {message: [sent.content for sent in discord_api.replies_to(message)] for message in messages}
    assert [len(texts) for texts in answers.values()] == [1] * TRIALS, answers  # none lost, none doubled
    said = [texts[0] for texts in answers.values()]
    assert all(text.startswith(("answer ", "I restarted while working on")) for text in said), said
    assert len(set(said)) == TRIALS  # no answer was delivered for two messages


def test_poison_items_and_bodies_end_as_dead_letters_or_refusals_and_the_host_keeps_serving(
    start, discord_api: FakeDiscord, llm: FakeLLM, hermitcrab_home: Path, tmp_path: Path
):
    owner_dm = discord_api.dm_channel(OWNER)
    (hermitcrab_home / "state").mkdir(exist_ok=True)
    (hermitcrab_home / "state" / "last_target.json").write_text(
        json.dumps({"channel": "discord", "conversation": owner_dm, "user": OWNER})
    )
    nowhere = {"mode": "announce", "channel": "discord", "to": "not-a-channel"}
    (tmp_path / "kit-queue.json").write_text(
        json.dumps(
            [
                {"id": "job-1:run-1", "text": "remind the group", "kind": "cron", "delivery": nowhere},
                {"id": "job-2:run-1", "text": "summarise the day", "kind": "cron"},  # every turn of it fails
            ]
        )
    )
    host = start()
    auth = {"Authorization": f"Bearer {HOOK_TOKEN}"}
    body = {"message": "x", "delivery": {"channel": "discord", "to": "general"}}
    refused = httpx.post(f"http://127.0.0.1:{HOOK_PORT}/hooks/agent", json=body, headers=auth)

    notices = lambda: [s.content for s in discord_api.in_channel(owner_dm) if "set aside" in s.content]  # noqa: E731
    wait_for(lambda: len(notices()) == 2, f"not set aside: {discord_api.sent}", 30)
    listed = deadletters(hermitcrab_home, llm, "list")
    llm.enqueue(openai_text("Still here."))
    asked = discord_api.user_says(OWNER, "are you there?")
    wait_for(lambda: discord_api.replies_to(asked) != [], f"no answer: {discord_api.sent}")
    failing = next(line.split()[0] for line in listed.stdout.splitlines() if "summarise the day" in line)
    llm.enqueue(openai_text("Today: three meetings."))
    retried = deadletters(hermitcrab_home, llm, "retry", failing)
    wait_for(
        lambda: any(s.content == "Today: three meetings." for s in discord_api.sent), f"not run: {discord_api.sent}"
    )
    stop(host)

    assert refused.status_code == 400 and "delivery.to: 'general' is not a Discord channel id" in refused.text
    assert "not-a-channel" in listed.stdout and "is not a Discord channel id" in listed.stdout
    assert "summarise the day" in listed.stdout and "3 attempts" in listed.stdout
    assert retried.returncode == 0
    assert [m["messages"][-1]["content"] for m in llm.requests].count("are you there?") == 1
    assert json.loads((tmp_path / "kit-queue.json").read_text()) == []  # both acknowledged to the server
    assert "summarise the day" not in deadletters(hermitcrab_home, llm, "list").stdout


def deadletters(home: Path, llm: FakeLLM, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "deadletters", *args], capture_output=True, text=True, env=cli_env(home, llm), timeout=30, check=False
    )
