"""A server's form (an elicitation) on Discord: `hermitcrab run` with the real discord.py client against the fake
Discord, the form server over legacy-era stdio. A free-text field is answered by a typed reply, its default by the
word `default` (Discord sends no empty message); choices beyond a message's 25 buttons are listed and typed."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.cli import wait_for
from tests.support.discord_host import CONFIG, DiscordRun, first_reply, start_run, stop
from tests.support.fake_discord import OWNER, FakeDiscord, Sent
from tests.support.fake_llm import FakeLLM, openai_text, openai_tool_calls

FORM_SERVER = str(Path(__file__).parents[1] / "support" / "form_server.py")


@pytest.fixture
def run_with_forms(
    hermitcrab_home: Path, llm: FakeLLM, discord_api: FakeDiscord, tmp_path: Path
) -> Iterator[DiscordRun]:
    (hermitcrab_home / "config.toml").write_text(CONFIG)
    desktop = tmp_path / "desktop.json"
    entry = {"command": sys.executable, "args": [FORM_SERVER], "protocol": "legacy"}
    desktop.write_text(json.dumps({"mcpServers": {"forms": entry}}))
    run = start_run(hermitcrab_home, llm, discord_api, tmp_path / "run.log", mcp_config=desktop)
    yield run
    run.kill()


def question(discord_api: FakeDiscord, asking: str, count: int = 1) -> Sent:
    """The `count`th message the bot posted containing `asking`, once it is there."""

    def asked() -> list[Sent]:
        return [sent for sent in discord_api.sent if asking in sent.content]

    wait_for(lambda: len(asked()) >= count, f"no question {asking!r}: {discord_api.sent}")
    return asked()[count - 1]


def answer_a_form(
    run: DiscordRun, discord_api: FakeDiscord, llm: FakeLLM, tool: str, answering: Callable[[], None]
) -> tuple[Sent, str]:
    """The owner asks for something, the model calls `tool`, `answering` answers its form; the reply and the tool
    result the model saw."""
    llm.enqueue(openai_tool_calls(("c1", tool, "{}")), openai_text("Done."))
    message = discord_api.user_says(OWNER, "go on")
    answering()
    reply = first_reply(discord_api, message)
    stop(run.process)
    return reply, llm.requests[1]["messages"][-1]["content"]


def test_a_typed_reply_answers_a_number_field_and_default_applies_its_default(
    run_with_forms: DiscordRun, discord_api: FakeDiscord, llm: FakeLLM
):
    shown: list[Sent] = []

    def answering() -> None:
        shown.append(question(discord_api, "How old are you?"))
        discord_api.user_says(OWNER, "thirty")
        shown.append(question(discord_api, "How old are you?", 2))
        discord_api.user_says(OWNER, "default")

    reply, tool_result = answer_a_form(run_with_forms, discord_api, llm, "profile", answering)

    first, again = shown
    assert first.components == [] and "A whole number from 0 to 150. Empty or `default`: `30`." in first.content
    assert "`decline` or `cancel` ends the form." in first.content
    assert again.content.endswith("Not taken: `thirty` is not a whole number. 2 tries left.")
    assert tool_result == "age 30 (int) over 2025-11-25"
    assert reply.content == "Done."


def test_choices_beyond_the_buttons_are_listed_and_answered_by_typing_their_number(
    run_with_forms: DiscordRun, discord_api: FakeDiscord, llm: FakeLLM
):
    shown: list[Sent] = []
    labels: list[str] = []

    def answering() -> None:
        shown.append(question(discord_api, "Which shade?"))
        labels.extend(button["label"] for row in shown[0].components for button in row["components"])
        discord_api.user_says(OWNER, "28")

    _, tool_result = answer_a_form(run_with_forms, discord_api, llm, "paint", answering)

    (asked,) = shown
    assert labels == [f"shade-{number}" for number in range(1, 26)]
    assert asked.components == []  # the typed answer took the buttons away
    assert asked.content.endswith(
        "Or type one of:\n26. shade-26\n27. shade-27\n28. shade-28\n29. shade-29\n30. shade-30"
    )
    assert tool_result == "painted with shade-28"
