"""`hermitcrab deadletters` lists, retries and drops what the running host set aside; doctor warns while any wait."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hermitcrab.host.cli.app import app
from hermitcrab.host.inbox.deadletters import FOLDER, DeadLetters, Letter
from tests.support.cli_output import flowing

runner = CliRunner()


@pytest.fixture
def store(hermitcrab_home: Path) -> DeadLetters:
    """The store `hermitcrab run` would use: the CLI shares it through the file."""
    return DeadLetters(hermitcrab_home / "state" / FOLDER)


def letter(store: DeadLetters, key: str = "cron:run-1") -> Letter:
    return store.add(
        key=key,
        kind="server-item",
        source="cron",
        session="main",
        text="check the weather",
        reason="TimeoutError: no answer",
        attempts=3,
        event={"kind": "cron"},
    )


def minute(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp).astimezone().strftime("%Y-%m-%d %H:%M")


def test_list_says_none_when_nothing_was_set_aside(store: DeadLetters):
    result = runner.invoke(app, ["deadletters", "list"])

    assert result.exit_code == 0 and result.stdout == "none\n"


def test_list_shows_one_line_per_letter(store: DeadLetters):
    cron = letter(store)
    message = store.add(
        key="discord:42",
        kind="message",
        source="discord",
        session="dm:7",
        text="hi\nthere",
        reason="SendError",
        attempts=1,
        event={},
    )

    result = runner.invoke(app, ["deadletters", "list"])

    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"{cron.id}  server-item from cron, session main, 3 attempts, ended {minute(cron.created)}: "
        "'check the weather'; reason: TimeoutError: no answer",
        f"{message.id}  message from discord, session dm:7, 1 attempt, ended {minute(message.created)}: "
        "'hi there'; reason: SendError",
    ]


def test_retry_marks_the_letter_for_the_running_host(store: DeadLetters):
    wanted = letter(store)

    result = runner.invoke(app, ["deadletters", "retry", wanted.id])
    listed = runner.invoke(app, ["deadletters", "list"])

    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"will retry {wanted.id} (server-item from cron): the running `hermitcrab run` tries it again within a few "
        "seconds\n"
    )
    assert "; retry asked: " in listed.stdout
    assert [taken.id for taken in store.take_retries()] == [wanted.id]


def test_drop_forgets_the_letter(store: DeadLetters):
    gone, kept = letter(store), letter(store, "cron:run-2")

    result = runner.invoke(app, ["deadletters", "drop", gone.id])

    assert result.exit_code == 0, result.output
    assert result.stdout == f"dropped {gone.id} (server-item from cron): it will not be tried again\n"
    assert store.list() == [kept]


@pytest.mark.parametrize("command", ["retry", "drop"])
def test_an_unknown_id_is_an_error_that_says_where_to_look(store: DeadLetters, command: str):
    letter(store)

    result = runner.invoke(app, ["deadletters", command, "deadbeef"])

    assert result.exit_code == 1
    assert result.stderr == "error: no dead letter deadbeef; hermitcrab deadletters list shows them\n"


@pytest.mark.parametrize("command", [[], ["list"], ["retry"], ["drop"]])
def test_every_command_has_help(command: list[str]):
    result = runner.invoke(app, ["deadletters", *command, "--help"])

    assert result.exit_code == 0 and "Usage:" in result.stdout


def doctor(home: Path) -> str:
    """Doctor's table as one line of words, with no MCP servers to start."""
    desktop = home / "desktop.json"
    desktop.write_text(json.dumps({"mcpServers": {}}))
    result = runner.invoke(app, ["doctor", "--mcp-config", str(desktop)], env={"COLUMNS": "300"})
    return flowing(result.output)


def test_doctor_says_none_then_warns_while_letters_wait(hermitcrab_home: Path, store: DeadLetters):
    assert "ok deadletters set aside none" in doctor(hermitcrab_home)

    letter(store)
    assert "warn deadletters set aside 1 dead letter: hermitcrab deadletters list" in doctor(hermitcrab_home)
    letter(store, "cron:run-2")
    assert "warn deadletters set aside 2 dead letters: hermitcrab deadletters list" in doctor(hermitcrab_home)
