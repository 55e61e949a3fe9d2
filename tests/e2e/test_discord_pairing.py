"""Pairing end to end (issue 24): new accounts cannot lock a fourth person out, the owner hears of every request by
DM, and `hermitcrab pairing approve` in another process makes the running bot tell the user they are in.

`hermitcrab run` with the real discord.py client against the fake Discord on 127.0.0.1, the scripted LLM behind it.
"""

from __future__ import annotations

import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cli import wait_for
from tests.support.discord_host import pairing, start_run
from tests.support.fake_discord import OWNER, FakeDiscord
from tests.support.fake_llm import FakeLLM, openai_text

CONFIG = f"""
[heartbeat]
every_minutes = 0

[discord]
owners = ["{OWNER}"]
"""
NEWCOMERS = [f"7000000000000000{n}" for n in range(10, 14)]  # four fresh accounts, user10 … user13 by name
APPROVED = "You're approved — you can talk to me now."


@pytest.fixture
def bot(hermitcrab_home: Path, llm: FakeLLM, discord_api: FakeDiscord) -> Iterator[subprocess.Popen[bytes]]:
    """`hermitcrab run` connected to the fake Discord, with the fake's OWNER as the owner."""
    (hermitcrab_home / "config.toml").write_text(CONFIG)
    run = start_run(hermitcrab_home, llm, discord_api, hermitcrab_home / "run.log")
    try:
        yield run.process
    finally:
        run.kill()


def code_sent_for(discord_api: FakeDiscord, message_id: str) -> str:
    wait_for(lambda: discord_api.replies_to(message_id) != [], f"no code for {message_id}: {discord_api.sent}")
    code = re.search(r"\*\*([A-Z2-9]{8})\*\*", discord_api.replies_to(message_id)[0].content)
    assert code is not None
    return code.group(1)


def texts_in_dm(discord_api: FakeDiscord, user: str) -> list[str]:
    return [sent.content for sent in discord_api.in_channel(discord_api.dm_channel(user))]


def test_a_fourth_newcomer_gets_a_code_the_owner_hears_of_each_and_approval_is_announced_once(
    bot: subprocess.Popen[bytes], discord_api: FakeDiscord, llm: FakeLLM, hermitcrab_home: Path
):
    codes = [code_sent_for(discord_api, discord_api.user_says(user, "hi, let me in")) for user in NEWCOMERS]
    wait_for(lambda: len(texts_in_dm(discord_api, OWNER)) == 4, f"owner not told: {discord_api.sent}")
    notices = texts_in_dm(discord_api, OWNER)

    listed = pairing(hermitcrab_home, llm, "list")
    approved = pairing(hermitcrab_home, llm, "approve", codes[3])
    wait_for(lambda: APPROVED in texts_in_dm(discord_api, NEWCOMERS[3]), f"not announced: {discord_api.sent}")
    again = pairing(hermitcrab_home, llm, "approve", codes[3])
    llm.enqueue(openai_text("Welcome aboard."))
    thanks = discord_api.user_says(NEWCOMERS[3], "thanks!")
    wait_for(lambda: discord_api.replies_to(thanks) != [], f"no answer: {discord_api.sent}")
    dropped_again = discord_api.user_says(NEWCOMERS[0], "me again")
    log = hermitcrab_home / "state" / "logs" / "host.log"
    wait_for(lambda: f"ignored a DM from {NEWCOMERS[0]} (cooling down" in log.read_text(), "not logged as ignored")
    bot.send_signal(signal.SIGTERM)
    assert bot.wait(timeout=30) == 0

    about = {
        user: [n for n in notices if n.startswith(f"user{user[-2:]} (discord user {user}) asked")] for user in NEWCOMERS
    }
    for user, code in zip(NEWCOMERS, codes, strict=True):
        assert len(about[user]) == 1, notices  # the DMs may arrive in any order: each names one request
        assert f"`hermitcrab pairing approve {code}`, or `hermitcrab pairing deny {code}`." in about[user][0]
    assert [n for n in notices if "dropped" in n] == about[NEWCOMERS[3]]
    assert about[NEWCOMERS[3]][0].endswith(f"dropped the oldest waiting request: user10 (discord user {NEWCOMERS[0]}).")
    assert codes[0] not in listed.stdout and all(code in listed.stdout for code in codes[1:])
    assert approved.returncode == 0 and approved.stdout == f"approved discord user {NEWCOMERS[3]} (user13)\n"
    assert again.returncode == 0 and again.stdout.startswith(f"already approved: discord user {NEWCOMERS[3]} (")
    assert texts_in_dm(discord_api, NEWCOMERS[3]).count(APPROVED) == 1
    assert discord_api.replies_to(thanks)[0].content == "Welcome aboard."
    assert discord_api.replies_to(dropped_again) == []
    assert len(llm.requests) == 1 and "thanks!" in llm.requests[0]["messages"][-1]["content"]  # and nothing else
