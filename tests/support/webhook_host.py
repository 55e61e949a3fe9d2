"""`hermitcrab run` with the webhook channel on, for the e2e tests that drive it over HTTP: a started host (its
stderr in a log file), a context that kills every host it started, and readers of what the run left in its home."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.cli import CLI, cli_env, wait_for
from tests.support.fake_llm import FakeLLM, free_port

TOKEN = "run-test-token"
"""The webhook's bearer token."""


@contextmanager
def hosts(home: Path, llm: FakeLLM, desktop: Path, logs: Path) -> Iterator[Callable[[], Host]]:
    """A `Host` on `desktop` each call, each logging to its own file in `logs`; every one is killed at the end, so a
    test that fails midway, or restarts the host, leaves none running."""
    started: list[Host] = []

    def launch() -> Host:
        host = Host(home, llm, desktop, logs / f"run-{len(started)}.log")
        started.append(host)
        return host

    try:
        yield launch
    finally:
        for host in started:
            host.process.kill()
            host.process.wait(timeout=10)


class Host:
    def __init__(self, home: Path, llm: FakeLLM, desktop: Path, log: Path) -> None:
        self.port = free_port()
        self.log = log
        hook = {"HERMITCRAB_WEBHOOK_LISTEN": f"127.0.0.1:{self.port}", "HERMITCRAB_WEBHOOK_TOKEN": TOKEN}
        env = cli_env(home, llm, {**hook, "HERMITCRAB_OUTBOUND_ALLOW": "127.0.0.1"})  # callbacks go to the fake's sink
        with log.open("w") as stderr:
            self.process = subprocess.Popen([*CLI, "run", "--mcp-config", str(desktop)], stderr=stderr, env=env)
        wait_for(lambda: "hermitcrab is running" in log.read_text(), f"the host did not start: {self.stderr}")

    @property
    def stderr(self) -> str:
        return self.log.read_text()

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=20)


def remember_sink(home: Path, llm: FakeLLM) -> None:
    """Make the scripted LLM's sink the user's last conversation, where announcements go."""
    (home / "state").mkdir(exist_ok=True)
    target = {"channel": "webhook", "conversation": llm.sink_url, "user": None}
    (home / "state" / "last_target.json").write_text(json.dumps(target))


def events_in_main(home: Path) -> list[str]:
    index = json.loads((home / "state" / "sessions" / "sessions.json").read_text())
    lines = (home / "state" / "sessions" / f"{index['main']['id']}.jsonl").read_text().splitlines()
    return [entry["event_id"] for entry in map(json.loads, lines) if entry["kind"] == "event"]
