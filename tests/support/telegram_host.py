"""`hermitcrab run` against a FakeTelegram and the scripted LLM: the environment that points it there, and a start
that returns only once the bot polls, so that nothing a test says on the fake afterwards can reach no one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.cli import CLI, cli_env, wait_for
from tests.support.discord_host import DiscordRun
from tests.support.fake_llm import FakeLLM
from tests.support.fake_telegram import GROUP, OWNER, TOKEN, FakeTelegram

TEST_SERVER = Path(__file__).parent / "mcp_test_server.py"
CONFIG = f"""
[heartbeat]
every_minutes = 0

[telegram]
owners = ["{OWNER}"]

[telegram.groups."{GROUP}"]
require_mention = true
"""
"""The config.toml of the Telegram runs: no heartbeat, the fake's OWNER as the owner, its group answering mentions."""
WHOLE = {"HERMITCRAB_TELEGRAM_STREAM": "off", "HERMITCRAB_TELEGRAM_STREAM_IN_GROUPS": "off"}
"""Replies sent whole: a test reads a reply once, never a draft half written."""


def start_telegram_run(
    home: Path,
    llm: FakeLLM,
    telegram: FakeTelegram,
    log: Path,
    *,
    servers: bool = False,
    env: dict[str, str] | None = None,
) -> DiscordRun:
    """Start `hermitcrab run` (with the test MCP server `kit` when `servers`), its stderr in `log`; returns once this
    run polls for updates (a getUpdates beyond those the fake saw before) with its commands registered."""
    command = [*CLI, "run"]
    if servers:
        desktop = home / "desktop.json"
        entry = {"command": sys.executable, "args": [str(TEST_SERVER), "--name", "kit"]}
        desktop.write_text(json.dumps({"mcpServers": {"kit": entry}}))
        command += ["--mcp-config", str(desktop)]
    polls = telegram.polls
    variables = {**WHOLE, "TELEGRAM_BOT_TOKEN": TOKEN, "HERMITCRAB_TELEGRAM_API_BASE": telegram.api_base, **(env or {})}
    with log.open("w") as stderr:
        process = subprocess.Popen(command, stderr=stderr, env=cli_env(home, llm, variables))
    run = DiscordRun(process, log)
    try:
        wait_for(lambda: telegram.polls > polls and bool(telegram.commands), "", 30)
    except AssertionError:
        run.kill()
        raise AssertionError(f"hermitcrab run did not poll the fake Telegram: {run.stderr}") from None
    except BaseException:
        run.kill()
        raise
    return run
