"""`doctor` against the scripted LLM: the profile's model checked against the provider's `/models` list, the rows
of run, webhook and heartbeat, and a table that stays readable at 80 columns (words wrap whole, never cut)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hermitcrab.host.cli.app import app
from hermitcrab.host.inbox.lock import holding_home
from tests.support.cli_output import table_rows
from tests.support.fake_llm import FakeLLM, fake_llm_env, running_fake_llm

runner = CliRunner()


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with running_fake_llm() as fake:
        yield fake


def doctor(home: Path, llm: FakeLLM, model: str, servers: dict[str, object]) -> tuple[int, str]:
    desktop = home.parent / "desktop.json"
    desktop.write_text(json.dumps({"mcpServers": servers}))
    env = {**fake_llm_env(home, llm), "HERMITCRAB_MODEL": model, "COLUMNS": "80"}
    result = runner.invoke(app, ["doctor", "--mcp-config", str(desktop)], env=env)
    return result.exit_code, result.output


def test_a_model_the_provider_does_not_list_is_a_warning_naming_what_it_offers(hermitcrab_home: Path, llm: FakeLLM):
    code, output = doctor(hermitcrab_home, llm, "gpt-nonexistent", {})

    assert code == 0  # a warning: the provider may serve models it does not list
    row = next(row for row in table_rows(output) if row[2].endswith("model"))
    assert row[:2] == ["warn", "provider"]
    assert row[2].replace(" ", "") == "openai:gpt-nonexistent(environment)model"  # a name too long folds
    assert row[3].startswith("gpt-nonexistent is not among the models http"), row
    assert row[3].endswith("lists; it offers fake-model: set model"), row


def test_a_listed_model_is_ok(hermitcrab_home: Path, llm: FakeLLM):
    code, output = doctor(hermitcrab_home, llm, "fake-model", {})

    assert code == 0, output
    assert [
        "ok",
        "provider",
        "openai:fake-model (environment) model",
        "fake-model is among the 1 it offers",
    ] in table_rows(output)


def test_at_80_columns_no_word_is_cut_and_the_new_rows_show(hermitcrab_home: Path, llm: FakeLLM):
    gone = {"gone": {"command": "/nonexistent/hermitcrab-gone"}}
    code, output = doctor(hermitcrab_home, llm, "fake-model", gone)

    assert code == 1  # the server that does not start is a FAIL
    assert max(len(line) for line in output.splitlines()) <= 80
    rows = {(row[1], row[2]): row for row in table_rows(output)}
    failed = rows["mcp", "gone"]
    assert failed[0] == "FAIL"
    # the fix text whole: a word cut by the table would read as two here
    fix = "or correct its `command` path. A running host stops restarting a server after 5 identical failures"
    assert fix in failed[3], failed
    assert rows["run", "running"][3] == "no `hermitcrab run` for this home now"
    assert rows["webhook", "served"][3].startswith("off (no [webhook] token")
    assert rows["heartbeat", "beats"][3].startswith("every 30 min; HEARTBEAT.md has no tasks")


def test_a_running_run_is_named_with_its_pid(hermitcrab_home: Path, llm: FakeLLM):
    with holding_home(hermitcrab_home, hermitcrab_home / "state"):  # as `hermitcrab run` holds it
        _, output = doctor(hermitcrab_home, llm, "fake-model", {})

    rows = {(row[1], row[2]): row for row in table_rows(output)}
    assert rows["run", "running"][3] == f"`hermitcrab run` is running for this home (pid {os.getpid()})"
