"""Pairing codes: unguessable, short-lived, few at a time, and shared on disk between `run` and the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermitcrab.channels.pairing import ALPHABET, CODE_TTL_S, PairingStore


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


def store(tmp_path: Path, clock: Clock) -> PairingStore:
    return PairingStore(tmp_path / "pairing", clock)


def test_a_code_is_8_characters_without_look_alikes_and_asking_again_gives_the_same(tmp_path: Path, clock: Clock):
    pairing = store(tmp_path, clock)

    first = pairing.request("discord", "42", "alice")
    again = pairing.request("discord", "42", "alice")

    assert first is not None and again == first
    assert len(first.code) == 8 and set(first.code) <= set(ALPHABET) and not set(first.code) & set("0O1I")


def test_at_most_three_codes_wait_per_channel(tmp_path: Path, clock: Clock):
    pairing = store(tmp_path, clock)

    codes = [pairing.request("discord", str(user), f"u{user}") for user in range(4)]

    assert None not in codes[:3] and codes[3] is None
    assert pairing.request("other", "9", "z") is not None


def test_codes_expire_after_an_hour(tmp_path: Path, clock: Clock):
    pairing = store(tmp_path, clock)
    request = pairing.request("discord", "42", "alice")
    assert request is not None

    clock.now += CODE_TTL_S + 1

    assert pairing.pending() == []
    with pytest.raises(LookupError, match="expire"):
        pairing.approve(request.code)
    assert pairing.request("discord", "43", "bob") is not None


def test_approve_lets_the_user_in_through_another_store_on_the_same_folder(tmp_path: Path, clock: Clock):
    running, cli = store(tmp_path, clock), store(tmp_path, clock)
    request = running.request("discord", "42", "alice")
    assert request is not None

    approved = cli.approve(request.code.lower())

    assert (approved.channel, approved.user) == ("discord", "42")
    assert running.is_allowed("discord", "42") and not running.is_allowed("other", "42")
    assert running.pending() == []
    assert list(json.loads(running.path.read_text())) == ["pending", "allowed"]


def test_revoke_by_id_or_name_removes_the_user(tmp_path: Path, clock: Clock):
    pairing = store(tmp_path, clock)
    for user, name in (("42", "alice"), ("43", "bob")):
        request = pairing.request("discord", user, name)
        assert request is not None
        pairing.approve(request.code)

    assert [a.user for a in pairing.revoke("42")] == ["42"]
    assert [a.user for a in pairing.revoke("bob")] == ["43"]
    assert pairing.revoke("nobody") == [] and pairing.allowed() == []
    assert not list((tmp_path / "pairing").glob("*.tmp"))
