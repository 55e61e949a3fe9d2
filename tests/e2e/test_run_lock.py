"""`hermitcrab run` refuses to start beside another on the same home, or on a taken webhook port, with one line."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.cli import CLI, cli_env, wait_for
from tests.support.fake_llm import FakeLLM, free_port, openai_text
from tests.support.webhook_host import TOKEN, Host, hosts

from .conftest import TEST_SERVER


@pytest.fixture
def desktop(tmp_path: Path) -> Path:
    path = tmp_path / "desktop.json"
    server = {"command": sys.executable, "args": [str(TEST_SERVER), "--name", "kit"]}
    path.write_text(json.dumps({"mcpServers": {"kit": server}}))
    return path


@pytest.fixture
def start(hermitcrab_home: Path, llm: FakeLLM, desktop: Path, tmp_path: Path) -> Iterator[Callable[[], Host]]:
    """`hermitcrab run` on `desktop`, started as test_run starts it, as often as a test asks."""
    with hosts(hermitcrab_home, llm, desktop, tmp_path) as launch:
        yield launch


def run_beside(home: Path, llm: FakeLLM, desktop: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "run", "--mcp-config", str(desktop)],
        capture_output=True,
        text=True,
        env=cli_env(home, llm, env),
        timeout=60,
        check=False,
    )


def answered_by(host: Host, llm: FakeLLM, text: str) -> None:
    """A webhook turn runs on `host` and its reply reaches the sink."""
    llm.enqueue(openai_text(text))
    body = {"message": "still there?", "delivery": {"channel": "webhook", "to": llm.sink_url}}
    url = f"http://127.0.0.1:{host.port}/hooks/agent"
    response = httpx.post(url, json=body, headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 202
    wait_for(lambda: {"text": text} in llm.delivered, f"{text!r} was not delivered: {host.stderr}")


def test_a_second_run_on_the_same_home_exits_1_naming_the_first_which_keeps_serving(
    start: Callable[[], Host], llm: FakeLLM, hermitcrab_home: Path, desktop: Path
):
    first = start()
    same_port = {"HERMITCRAB_WEBHOOK_LISTEN": f"127.0.0.1:{first.port}", "HERMITCRAB_WEBHOOK_TOKEN": TOKEN}

    second = run_beside(hermitcrab_home, llm, desktop, same_port)  # the lock is checked first: not the port

    assert second.returncode == 1
    assert second.stderr == (
        f"error: hermitcrab run is already running for {hermitcrab_home} (pid {first.process.pid})\n"
    )
    answered_by(first, llm, "still serving")
    assert first.stop() == 0


def test_after_kill_9_of_the_first_run_a_new_one_starts(start: Callable[[], Host], llm: FakeLLM):
    first = start()
    first.process.kill()
    first.process.wait(timeout=10)

    second = start()

    answered_by(second, llm, "back again")
    assert second.stop() == 0


@pytest.mark.parametrize("where", ["environment", "config.toml"])
def test_a_webhook_port_in_use_is_one_line_naming_the_setting(
    llm: FakeLLM, hermitcrab_home: Path, desktop: Path, where: str
):
    port = free_port()
    listen = f"127.0.0.1:{port}"
    if where == "environment":
        env = {"HERMITCRAB_WEBHOOK_LISTEN": listen, "HERMITCRAB_WEBHOOK_TOKEN": TOKEN}
    else:
        env = {"HERMITCRAB_WEBHOOK_LISTEN": "", "HERMITCRAB_WEBHOOK_TOKEN": ""}
        (hermitcrab_home / "config.toml").write_text(f'[webhook]\nlisten = "{listen}"\ntoken = "{TOKEN}"\n')

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        result = run_beside(hermitcrab_home, llm, desktop, env)

    assert result.returncode == 1
    assert result.stderr == (
        f"error: the webhook cannot listen on {listen} (address in use): "
        "set [webhook] listen or HERMITCRAB_WEBHOOK_LISTEN to a free port\n"
    )
