"""The People page: a stranger who DMs the bot on the (fake) Discord shows up waiting, and the owner's buttons let them
in, turn them down or let them out again, as `hermitcrab pairing` would; the owners and the allowlist are shown.

The real `hermitcrab run` with its Discord channel against the fake Discord, the scripted LLM, a real Chromium.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page

from hermitcrab.channels.pairing import Issued, PairingStore
from tests.support.cli import wait_for
from tests.support.dashboard import QUIET, DashboardRun, chromium, dashboard_run, logged_in, serious_violations
from tests.support.discord_host import CONFIG, discord_env
from tests.support.fake_discord import GUILD_ID, OWNER, STRANGER, FakeDiscord
from tests.support.fake_llm import FakeLLM, openai_text

APPROVED = "You're approved — you can talk to me now."
NEWCOMER = "700000000000000003"  # user03 by name, beside the fake's STRANGER (user02)


@pytest.fixture
def bot(tmp_path: Path, llm: FakeLLM, discord_api: FakeDiscord) -> Iterator[DashboardRun]:
    """`hermitcrab run` with its dashboard, logged in to the fake Discord with its OWNER as the owner."""
    home = tmp_path / "home"
    with dashboard_run(home, llm, config=CONFIG, env=discord_env(home, llm, discord_api)) as run:
        wait_for(lambda: discord_api.connected and bool(discord_api.commands), f"no Discord login: {run.stderr}")
        yield run


def code_for(discord_api: FakeDiscord, user: str, text: str = "hi, let me in") -> str:
    """What the bot answers `user`'s DM with: their pairing code."""
    said = discord_api.user_says(user, text)
    wait_for(lambda: discord_api.replies_to(said) != [], f"no code for {user}: {discord_api.sent}")
    code = re.search(r"\*\*([A-Z2-9]{8})\*\*", discord_api.replies_to(said)[0].content)
    assert code is not None
    return code.group(1)


def dm_texts(discord_api: FakeDiscord, user: str) -> list[str]:
    return [sent.content for sent in discord_api.in_channel(discord_api.dm_channel(user))]


def press(page: Page, table: str, who: str, button: str) -> None:
    """Press `button` in the row of `table` (its heading's name) that names `who`, and wait for the page after it."""
    row = page.get_by_role("table", name=table).get_by_role("row").filter(has_text=who)
    with page.expect_navigation():
        row.get_by_role("button", name=button).click()


def test_the_owner_approves_a_stranger_who_is_told_and_answered(
    bot: DashboardRun, discord_api: FakeDiscord, llm: FakeLLM
):
    code = code_for(discord_api, STRANGER)
    with chromium() as browser:
        page = logged_in(browser, bot)
        page.get_by_role("link", name="People").click()
        assert page.get_by_role("heading", level=1).inner_text() == "People"
        waiting = page.get_by_role("table", name="Waiting for approval")
        assert code in waiting.inner_text() and f"user02 (discord user {STRANGER})" in waiting.inner_text()
        assert "just now" in waiting.inner_text()
        assert f"discord user {OWNER}" in page.get_by_role("list").filter(has_text=OWNER).inner_text()
        assert GUILD_ID in page.get_by_role("table", name="Allowlisted guilds and channels").inner_text()
        assert serious_violations(page) == []

        press(page, "Waiting for approval", "user02", "Approve")
        assert page.get_by_role("status").inner_text() == (
            f"Approved user02 (discord user {STRANGER}); the bot tells them they are in."
        )
        assert page.get_by_text("No pairing requests are waiting.").is_visible()
        approved = page.get_by_role("table", name="Approved users").get_by_role("row").filter(has_text="user02")
        assert re.search(rf"peer.*pairing code {code}", approved.inner_text(), re.S)
        assert approved.get_by_role("button", name="Revoke").is_visible()
        assert serious_violations(page) == []

    wait_for(lambda: APPROVED in dm_texts(discord_api, STRANGER), f"not told: {discord_api.sent}")
    llm.enqueue(openai_text("Nice to meet you."))
    thanks = discord_api.user_says(STRANGER, "thanks!")
    wait_for(lambda: discord_api.replies_to(thanks) != [], f"no answer: {discord_api.sent}")
    assert discord_api.replies_to(thanks)[0].content == "Nice to meet you."
    assert "thanks!" in llm.requests[-1]["messages"][-1]["content"]


def test_the_owner_denies_one_stranger_and_revokes_another(bot: DashboardRun, discord_api: FakeDiscord, llm: FakeLLM):
    code_for(discord_api, STRANGER)
    first_code = code_for(discord_api, NEWCOMER)
    with chromium() as browser:
        page = logged_in(browser, bot)
        page.goto(f"{bot.url}/people")
        press(page, "Waiting for approval", "user02", "Deny")
        assert page.get_by_role("status").inner_text() == (
            f"Denied user02 (discord user {STRANGER}); their messages are ignored for a day."
        )
        assert "user02" in page.get_by_role("table", name="Denied").inner_text()
        press(page, "Waiting for approval", "user03", "Approve")
        wait_for(lambda: APPROVED in dm_texts(discord_api, NEWCOMER), f"not told: {discord_api.sent}")
        press(page, "Approved users", "user03", "Revoke")
        assert page.get_by_role("status").inner_text() == (
            f"Revoked user03 (discord user {NEWCOMER}); they can no longer DM the assistant."
        )
        assert page.get_by_text("Nobody besides the owners may DM the assistant.").is_visible()

    again = discord_api.user_says(STRANGER, "please?")
    log = bot.home / "state" / "logs" / "host.log"
    wait_for(lambda: f"ignored a DM from {STRANGER} (denied" in log.read_text(), "the denied user was not ignored")
    assert discord_api.replies_to(again) == []
    assert code_for(discord_api, NEWCOMER, "am I still in?") != first_code  # revoked: a fresh code, not the agent
    assert llm.requests == []


def test_without_discord_an_approval_waits_and_a_wrong_code_or_a_torn_file_changes_nothing(
    tmp_path: Path, llm: FakeLLM
):
    with dashboard_run(tmp_path / "home", llm) as run, httpx.Client(base_url=run.url) as client:
        client.get(run.login_link())
        csrf = re.search(r'name="csrf-token" content="(\w+)"', client.get("/people").text)
        assert csrf is not None
        store = PairingStore(run.home / "state" / "pairing")
        issued = store.request("discord", NEWCOMER, "user03")  # asked while the bot ran, which it does no more
        assert isinstance(issued, Issued)
        approved = client.post(
            "/people/approve", data={"csrf": csrf.group(1), "code": issued.request.code}, follow_redirects=True
        )
        assert f"Approved user03 (discord user {NEWCOMER}); the bot tells them they are in once Discord is on." in (
            approved.text
        )
        assert [a.user for a in store.unannounced("discord")] == [NEWCOMER]
        wrong = client.post("/people/approve", data={"csrf": csrf.group(1), "code": "NOPE2345"}, follow_redirects=True)
        assert "Nothing was changed: no pairing code &#39;NOPE2345&#39; is waiting" in wrong.text
        assert "Discord is off (no bot token)" in wrong.text

        torn = run.home / "state" / "pairing" / "pairing.json"
        torn.parent.mkdir(parents=True, exist_ok=True)
        torn.write_text('{"pending": [')
        shown = client.get("/people")
        assert shown.status_code == 200 and f"The pairing file {torn} cannot be read" in shown.text
        refused = client.post("/people/deny", data={"csrf": csrf.group(1), "code": "ABCD2345"}, follow_redirects=True)
        assert f"Nothing was changed: the pairing file {torn} cannot be read" in refused.text
        assert torn.read_text() == '{"pending": ['


def test_each_channel_has_its_own_owners_and_a_revoke_leaves_the_same_id_on_another_channel(
    tmp_path: Path, llm: FakeLLM
):
    config = f'{QUIET}[telegram]\nowners = ["99"]\n'
    with dashboard_run(tmp_path / "home", llm, config=config) as run, httpx.Client(base_url=run.url) as client:
        client.get(run.login_link())
        store = PairingStore(run.home / "state" / "pairing")
        for channel, name in (("discord", "dana"), ("telegram", "tess")):
            issued = store.request(channel, "99", name)
            assert isinstance(issued, Issued)
            store.approve(issued.request.code)
        shown = client.get("/people").text
        csrf = re.search(r'name="csrf-token" content="(\w+)"', shown)
        assert csrf is not None
        rows = {row.split("user 99)")[0].rsplit("(", 1)[1]: row for row in shown.split("<tr>")[1:] if "user 99)" in row}
        assert "<td>owner</td>" in rows["telegram "] and "<td>peer" in rows["discord "]
        revoked = client.post(
            "/people/revoke", data={"csrf": csrf.group(1), "channel": "telegram", "user": "99"}, follow_redirects=True
        )
        assert "Revoked tess (telegram user 99)" in revoked.text
        assert [(a.channel, a.user) for a in store.allowed()] == [("discord", "99")]
