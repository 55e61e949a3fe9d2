"""Pairing codes: unguessable, short-lived, per user, and shared on disk between `run` and the CLI; new accounts
cannot lock anyone out, a denial holds for a day, and approvals wait to be announced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hermitcrab.channels.pairing import (
    ALPHABET,
    CODE_TTL_S,
    DENY_BLOCK_S,
    MAX_PENDING,
    REQUEST_COOLDOWN_S,
    Issued,
    PairingStore,
    Refused,
    Request,
    Waiting,
)


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


def issue(pairing: PairingStore, user: str, name: str = "", channel: str = "discord") -> Request:
    outcome = pairing.request(channel, user, name or f"u{user}")
    assert isinstance(outcome, Issued), outcome
    return outcome.request


def test_a_code_is_8_characters_without_look_alikes_and_asking_again_gives_the_same(tmp_path: Path, clock: Clock):
    pairing = store(tmp_path, clock)

    first = issue(pairing, "42", "alice")
    again = pairing.request("discord", "42", "alice")

    assert again == Waiting(first)
    assert len(first.code) == 8 and set(first.code) <= set(ALPHABET) and not set(first.code) & set("0O1I")


def test_when_the_slots_are_full_the_oldest_request_makes_room_for_the_newcomer(tmp_path: Path, clock: Clock):
    pairing = store(tmp_path, clock)
    first = issue(pairing, "0")
    for user in range(1, MAX_PENDING):
        clock.now += 60
        issue(pairing, str(user))

    newcomer = pairing.request("discord", "new", "newcomer")

    assert isinstance(newcomer, Issued) and newcomer.dropped == first
    assert [r.user for r in pairing.pending()] == [*map(str, range(1, MAX_PENDING)), "new"]
    with pytest.raises(LookupError, match="no pairing code"):
        pairing.approve(first.code)
    assert issue(pairing, "9", channel="other").channel == "other"  # slots are per channel


def test_codes_expire_after_an_hour(tmp_path: Path, clock: Clock):
    pairing = store(tmp_path, clock)
    request = issue(pairing, "42", "alice")

    clock.now += CODE_TTL_S + 1

    assert pairing.pending() == []
    with pytest.raises(LookupError, match="expire"):
        pairing.approve(request.code)


def test_a_user_whose_code_expired_or_was_dropped_waits_ten_minutes_for_the_next(tmp_path: Path, clock: Clock):
    pairing = store(tmp_path, clock)
    expired = issue(pairing, "42")
    clock.now += CODE_TTL_S
    dropped = issue(pairing, "0")
    for user in range(1, MAX_PENDING + 1):
        issue(pairing, str(user))
    expired_at, dropped_at = expired.created + CODE_TTL_S, clock.now

    assert pairing.request("discord", "42", "u42") == Refused("cooling down", expired_at + REQUEST_COOLDOWN_S)
    assert pairing.request("discord", dropped.user, "u0") == Refused("cooling down", dropped_at + REQUEST_COOLDOWN_S)
    clock.now += REQUEST_COOLDOWN_S
    assert issue(pairing, "42").code != expired.code
    assert isinstance(pairing.request("discord", dropped.user, "u0"), Issued)


def test_a_denied_user_gets_no_code_for_a_day_and_their_code_cannot_be_approved(tmp_path: Path, clock: Clock):
    pairing = store(tmp_path, clock)
    request = issue(pairing, "42", "mallory")

    denial = pairing.deny(request.code.lower())

    assert not denial.already and (denial.denied.user, denial.denied.until) == ("42", clock.now + DENY_BLOCK_S)
    assert pairing.pending() == [] and pairing.denied() == [denial.denied]
    assert pairing.deny(request.code).already
    with pytest.raises(LookupError, match="was denied"):
        pairing.approve(request.code)
    clock.now += DENY_BLOCK_S - 1
    assert pairing.request("discord", "42", "mallory") == Refused("denied", denial.denied.until)
    clock.now += 1
    assert pairing.denied() == [] and issue(pairing, "42", "mallory").code != request.code


def test_approving_twice_says_already_approved_and_an_approved_code_cannot_be_denied(tmp_path: Path, clock: Clock):
    pairing = store(tmp_path, clock)
    request = issue(pairing, "42", "alice")
    first = pairing.approve(request.code)
    clock.now += 60

    again = pairing.approve(request.code)

    assert not first.already and again.already and again.allowed == first.allowed
    assert again.allowed.approved == request.created
    with pytest.raises(LookupError, match="was approved"):
        pairing.deny(request.code)
    with pytest.raises(LookupError, match="no pairing code"):
        pairing.deny("ABCDEFGH")


def test_approve_lets_the_user_in_through_another_store_on_the_same_folder(tmp_path: Path, clock: Clock):
    running, cli = store(tmp_path, clock), store(tmp_path, clock)
    request = issue(running, "42", "alice")

    approved = cli.approve(request.code.lower()).allowed

    assert (approved.channel, approved.user, approved.code) == ("discord", "42", request.code)
    assert running.is_allowed("discord", "42") and not running.is_allowed("other", "42")
    assert running.pending() == []
    assert list(json.loads(running.path.read_text())) == ["pending", "allowed", "denied", "ended"]
    assert running.path.stat().st_mode & 0o777 == 0o600


def test_an_approval_waits_to_be_announced_once(tmp_path: Path, clock: Clock):
    running, cli = store(tmp_path, clock), store(tmp_path, clock)
    approved = cli.approve(issue(running, "42", "alice").code).allowed
    before = running.stamp()

    assert running.unannounced("discord") == [approved] and running.unannounced("other") == []
    running.announced(approved)

    assert running.unannounced("discord") == [] and running.is_allowed("discord", "42")
    assert running.stamp() != before


def test_a_file_from_before_denials_and_announcements_loads_as_announced(tmp_path: Path, clock: Clock):
    pairing = store(tmp_path, clock)
    pairing.path.parent.mkdir()
    old = {
        "pending": [{"code": "ABCDEFGH", "channel": "discord", "user": "7", "name": "bob", "created": clock.now}],
        "allowed": [{"channel": "discord", "user": "42", "name": "alice", "approved": 1.0}],
    }
    pairing.path.write_text(json.dumps(old))

    assert pairing.is_allowed("discord", "42") and pairing.unannounced("discord") == []
    assert pairing.approve("abcdefgh").allowed.user == "7"
    assert [a.user for a in pairing.unannounced("discord")] == ["7"]


def test_a_request_that_changes_nothing_leaves_the_file_alone(tmp_path: Path, clock: Clock):
    pairing = store(tmp_path, clock)
    issue(pairing, "42")
    stamp = pairing.stamp()

    assert isinstance(pairing.request("discord", "42", "u42"), Waiting)
    assert pairing.stamp() == stamp is not None


def test_revoke_by_id_or_name_removes_the_user(tmp_path: Path, clock: Clock):
    pairing = store(tmp_path, clock)
    for user, name in (("42", "alice"), ("43", "bob")):
        pairing.approve(issue(pairing, user, name).code)

    assert [a.user for a in pairing.revoke("42")] == ["42"]
    assert [a.user for a in pairing.revoke("bob")] == ["43"]
    assert pairing.revoke("nobody") == [] and pairing.allowed() == []
    assert not list((tmp_path / "pairing").glob("*.tmp"))
