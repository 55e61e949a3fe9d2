"""Hooks end to end: `hermitcrab run` with the fake Discord and the scripted LLM, its hooks written as the owner
writes them (HOOK.md folders in the home, an entry point of a package on PYTHONPATH, the bundled boot hook)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import wait_for
from tests.support.discord_host import CONFIG, first_reply, start_run, stop
from tests.support.fake_discord import OWNER, FakeDiscord
from tests.support.fake_llm import FakeLLM, openai_text
from tests.support.hooks import command_hook, entry_point_package, seen

HOOKS = """
[hooks]
enabled = ["inbox-watch", "signature", "boot", "started"]
"""
STARTED = '''
    import json

    async def started(payload, context):
        """Notes that the gateway started, and with which channels."""
        (context.state / "started.json").write_text(json.dumps(payload["channels"]))

    started.events = ["gateway:start"]
    '''


def test_hooks_see_the_dm_rewrite_the_reply_and_boot_runs_at_start(
    hermitcrab_home: Path, llm: FakeLLM, discord_api: FakeDiscord, tmp_path: Path
):
    (hermitcrab_home / "config.toml").write_text(CONFIG + HOOKS)
    (hermitcrab_home / "workspace").mkdir()
    (hermitcrab_home / "workspace" / "BOOT.md").write_text("Check the calendar for the day ahead.")
    hooks = hermitcrab_home / "hooks"
    inbox = command_hook(hooks, "inbox-watch", ["message:received"], "")
    command_hook(
        hooks,
        "signature",
        ["message:sending"],
        """print(json.dumps({"text": event["text"] + " -- sent by hermitcrab"}))""",
    )
    site = entry_point_package(tmp_path / "site", "started", "started_hook", STARTED, "started_hook:started")
    llm.enqueue(openai_text("NO_REPLY"), openai_text("Lunch is at noon."))

    run = start_run(hermitcrab_home, llm, discord_api, tmp_path / "run.log", env={"PYTHONPATH": str(site)})
    try:
        wait_for(lambda: len(llm.requests) == 1, f"the boot turn never asked the model: {run.stderr}")
        message = discord_api.user_says(OWNER, "when is lunch?")
        reply = first_reply(discord_api, message)
    finally:
        assert stop(run.process) == 0

    assert "Check the calendar for the day ahead." in json.dumps(llm.requests[0]["messages"])
    assert reply.content == "Lunch is at noon. -- sent by hermitcrab"
    (received,) = seen(inbox)
    assert (received["event"], received["text"], received["channel"]) == (
        "message:received",
        "when is lunch?",
        "discord",
    )
    assert (received["principal"]["kind"], received["principal"]["user"]) == ("owner", OWNER)
    assert "discord" in json.loads((hermitcrab_home / "state" / "started.json").read_text())
