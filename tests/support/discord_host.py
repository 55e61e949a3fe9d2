"""`hermitcrab run` against a FakeDiscord and the scripted LLM, for the e2e tests and bench scripts alike: the
environment that points it there, and a start that returns only once the bot has logged in, so that nothing a caller
says on the fake afterwards can reach no one, or a run that is gone; the usual config, waiting for a reply, stopping a
run, and the pairing command beside it."""

from __future__ import annotations

import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.support.cli import CLI, cli_env, wait_for
from tests.support.fake_discord import GUILD_ID, OWNER, TOKEN, FakeDiscord, Sent
from tests.support.fake_llm import FakeLLM

CONFIG = f"""
[heartbeat]
every_minutes = 0

[discord]
owners = ["{OWNER}"]

[discord.guilds."{GUILD_ID}"]
require_mention = true
"""
"""The config.toml of most Discord runs: no heartbeat, the fake's OWNER as the owner, its guild answering mentions."""
WHOLE = {"HERMITCRAB_DISCORD_STREAM": "off", "HERMITCRAB_DISCORD_STREAM_IN_GUILDS": "off"}
"""Replies sent whole, as every run gets unless it streams: a test reads a reply once, never a draft half written."""
STREAMED = dict.fromkeys(WHOLE, "")
"""The stream modes of config.toml (or the defaults) instead: for the runs that test streaming."""


def discord_env(
    home: Path, llm: FakeLLM, discord: FakeDiscord, extra: dict[str, str] | None = None, *, token: str = TOKEN
) -> dict[str, str]:
    """The environment of a CLI process at `home` whose Discord channel talks to `discord` with `token` (the one the
    fake accepts unless a test wants it refused), sends replies whole (`WHOLE`), and whose model is the scripted
    `llm`; `extra` goes on top."""
    discord_vars = {
        **WHOLE,
        "DISCORD_TOKEN": token,
        "HERMITCRAB_DISCORD_API_BASE": discord.api_base,
        "HERMITCRAB_DISCORD_GATEWAY_URL": discord.gateway_url,
    }
    return cli_env(home, llm, {**discord_vars, **(extra or {})})


@dataclass(frozen=True)
class DiscordRun:
    """A started `hermitcrab run` and the file its stderr goes to, read when something went wrong."""

    process: subprocess.Popen[bytes]
    log: Path

    @property
    def stderr(self) -> str:
        return self.log.read_text()

    def kill(self) -> None:
        """kill -9 and reap: the crash of a restart test, and the teardown that leaves no run behind."""
        self.process.kill()
        self.process.wait(timeout=10)


def start_run(
    home: Path,
    llm: FakeLLM,
    discord: FakeDiscord,
    log: Path,
    *,
    mcp_config: Path | None = None,
    env: dict[str, str] | None = None,
    timeout_s: float = 20,
) -> DiscordRun:
    """Start `hermitcrab run` (with `--mcp-config` when given, `env` on top of `discord_env`), its stderr in `log`.

    Returns once this run has logged in: an IDENTIFY beyond those the fake saw before (after a restart, the old run's
    login proves nothing), connected, and its commands registered. A run that does not is killed, its log in the error.
    """
    identified = discord.identifies
    command = [*CLI, "run", *(["--mcp-config", str(mcp_config)] if mcp_config is not None else [])]
    with log.open("w") as stderr:
        process = subprocess.Popen(command, stderr=stderr, env=discord_env(home, llm, discord, env))
    run = DiscordRun(process, log)

    def logged_in() -> bool:
        return discord.identifies > identified and discord.connected and bool(discord.commands)

    try:
        wait_for(logged_in, "", timeout_s)
    except AssertionError:
        run.kill()
        raise AssertionError(f"hermitcrab run did not log in to the fake Discord: {run.stderr}") from None
    except BaseException:
        run.kill()
        raise
    return run


def pairing(home: Path, llm: FakeLLM, *args: str) -> subprocess.CompletedProcess[str]:
    """`hermitcrab pairing ARGS` at `home`, as the owner types it beside the running bot."""
    return subprocess.run(
        [*CLI, "pairing", *args], capture_output=True, text=True, env=cli_env(home, llm), timeout=30, check=False
    )


def first_reply(discord_api: FakeDiscord, message_id: str) -> Sent:
    wait_for(lambda: discord_api.replies_to(message_id) != [], f"no reply to {message_id}: {discord_api.sent}")
    return discord_api.replies_to(message_id)[0]


def stop(process: subprocess.Popen[bytes]) -> int:
    """SIGTERM: the running turn finishes and its reply is sent, so nothing can arrive after this returns."""
    process.send_signal(signal.SIGTERM)
    return process.wait(timeout=30)
