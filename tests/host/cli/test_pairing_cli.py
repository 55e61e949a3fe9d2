"""`hermitcrab pairing`: approving twice says so, deny turns a user away for a day, list shows who was denied."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hermitcrab.channels.pairing import DENY_BLOCK_S, Issued, PairingStore
from hermitcrab.host.cli.app import app

runner = CliRunner()


def minute(timestamp: float) -> str:
    return dt.datetime.fromtimestamp(timestamp).astimezone().strftime("%Y-%m-%d %H:%M")


@pytest.fixture
def store(hermitcrab_home: Path) -> PairingStore:
    return PairingStore(hermitcrab_home / "state" / "pairing")


def code_for(store: PairingStore, user: str, name: str) -> str:
    outcome = store.request("discord", user, name)
    assert isinstance(outcome, Issued)
    return outcome.request.code


def test_approving_a_code_twice_says_it_was_already_approved_and_when(store: PairingStore):
    code = code_for(store, "123", "alice")

    first = runner.invoke(app, ["pairing", "approve", code])
    again = runner.invoke(app, ["pairing", "approve", code.lower()])

    approved = store.allowed()[0].approved
    assert first.exit_code == 0 and first.stdout == "approved discord user 123 (alice)\n"
    assert again.exit_code == 0, again.output
    assert again.stdout == f"already approved: discord user 123 (alice) on {minute(approved)}\n"


def test_deny_drops_the_code_and_list_shows_the_user_denied_for_a_day(store: PairingStore):
    code = code_for(store, "666", "mallory")
    waiting = code_for(store, "7", "bob")

    denied = runner.invoke(app, ["pairing", "deny", code])
    listed = runner.invoke(app, ["pairing", "list"])

    until = store.denied()[0].until
    assert denied.exit_code == 0, denied.output
    assert denied.stdout == f"denied discord user 666 (mallory): their DMs are ignored until {minute(until)}\n"
    assert store.pending()[0].code == waiting and len(store.pending()) == 1
    lines = listed.stdout.splitlines()
    assert lines[lines.index("denied:") + 1] == (
        f"  discord user 666 (mallory) on {minute(until - DENY_BLOCK_S)}: ignored 24 h more (until {minute(until)})"
    )
    assert code not in listed.stdout and waiting in listed.stdout and "allowed: none" in lines


def test_deny_twice_says_so_and_a_denied_or_unknown_code_cannot_be_approved(store: PairingStore):
    code = code_for(store, "666", "mallory")
    runner.invoke(app, ["pairing", "deny", code])

    again = runner.invoke(app, ["pairing", "deny", code])
    approve = runner.invoke(app, ["pairing", "approve", code])
    unknown = runner.invoke(app, ["pairing", "deny", "ABCDEFGH"])

    assert again.exit_code == 0 and again.stdout.startswith("already denied: discord user 666 (mallory) on ")
    assert approve.exit_code == 1 and f"error: pairing code '{code}' was denied" in approve.stderr
    assert unknown.exit_code == 1 and "no pairing code 'ABCDEFGH' is waiting" in unknown.stderr
    assert store.allowed() == []


def test_list_says_none_under_each_heading_when_nothing_is_there():
    listed = runner.invoke(app, ["pairing", "list"])

    assert listed.exit_code == 0 and listed.stdout == "waiting: none\nallowed: none\ndenied: none\n"
