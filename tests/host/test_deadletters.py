"""Dead letters and attempt counts: shared on disk between processes, updated by key, private, never a crash; and
the line /status gives them."""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path

import pytest

from hermitcrab.host.config import AgentSettings, Settings
from hermitcrab.host.events import OWNER, Event, Target
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.inbox.deadletters import FOLDER, MAX_ATTEMPTS, Attempts, DeadLetters, Letter, backoff_s
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent
from tests.support.scripted_provider import ScriptedProvider


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "state" / "deadletters"


def add(store: DeadLetters, key: str = "cron:run-1", **changes: object) -> Letter:
    fields: dict[str, object] = {
        "key": key,
        "kind": "server-item",
        "source": "cron",
        "session": "main",
        "text": "check the weather",
        "reason": "TimeoutError: the provider did not answer",
        "attempts": 3,
        "event": {"kind": "cron", "item": {"id": "run-1"}},
    }
    fields.update(changes)
    return store.add(**fields)  # type: ignore[arg-type]


def test_a_letter_keeps_what_the_host_gave_it_and_gets_a_short_id(root: Path):
    store = DeadLetters(root, clock=lambda: 1000.0)

    letter = add(store)

    assert len(letter.id) == 8 and int(letter.id, 16) >= 0
    assert (letter.key, letter.kind, letter.source, letter.session) == ("cron:run-1", "server-item", "cron", "main")
    assert (letter.summary, letter.attempts, letter.created) == ("check the weather", 3, 1000.0)
    assert (letter.announced, letter.retry) == (False, False)
    assert letter.event == {"kind": "cron", "item": {"id": "run-1"}}
    assert store.list() == [letter] and store.get(letter.id) == letter and store.get("nope") is None


def test_adding_a_key_again_updates_its_letter_instead_of_duplicating_it(root: Path):
    times = iter([1000.0, 2000.0])
    store = DeadLetters(root, clock=lambda: next(times))
    first = add(store)
    store.mark_announced([first.id])

    again = add(store, reason="ValueError: still broken", attempts=5, event={"kind": "cron", "n": 2})

    assert store.list() == [again]
    assert (again.id, again.created, again.announced) == (first.id, 1000.0, True)
    assert (again.reason, again.attempts, again.event) == ("ValueError: still broken", 5, {"kind": "cron", "n": 2})


def test_summary_and_reason_are_one_cut_line(root: Path):
    letter = add(DeadLetters(root), text="line one\n" + "x" * 300, reason="Traceback:\n  boom\n" + "y" * 600)

    assert "\n" not in letter.summary and len(letter.summary) == 200 and letter.summary.startswith("line one x")
    assert letter.summary.endswith("…")
    assert "\n" not in letter.reason and len(letter.reason) == 500 and letter.reason.startswith("Traceback: boom y")


def test_an_event_that_cannot_be_stored_fails_at_add_and_leaves_the_file_alone(root: Path):
    store = DeadLetters(root)
    kept = add(store)

    with pytest.raises(TypeError):
        add(store, key="cron:run-2", event={"when": object()})

    assert store.list() == [kept]


def test_drop_removes_the_letter_and_an_unknown_id_is_named(root: Path):
    store = DeadLetters(root)
    letter, other = add(store), add(store, key="discord:42", kind="message", source="discord")

    assert store.drop(letter.id.upper()) == letter
    with pytest.raises(LookupError, match=f"no dead letter {letter.id}"):
        store.drop(letter.id)
    with pytest.raises(LookupError, match="no dead letter abc"):
        store.request_retry("abc")
    assert store.list() == [other]


def test_take_retries_returns_only_the_letters_asked_for_and_removes_them_once(root: Path):
    store = DeadLetters(root)
    wanted, left = add(store), add(store, key="cron:run-2")

    asked = store.request_retry(wanted.id)
    taken = store.take_retries()

    assert asked.retry and taken == [asked]
    assert store.take_retries() == [] and store.list() == [left]


def test_unannounced_letters_until_they_are_marked(root: Path):
    times = iter([1.0, 2.0, 3.0])
    store = DeadLetters(root, clock=lambda: next(times))
    one, two, three = add(store, key="a:1"), add(store, key="a:2"), add(store, key="a:3")

    store.mark_announced([one.id, three.id, "gone"])

    assert store.unannounced() == [two]
    assert [letter.announced for letter in store.list()] == [True, False, True]


def test_another_store_on_the_same_folder_sees_every_change(root: Path):
    host, cli = DeadLetters(root), DeadLetters(root)
    letter = add(host)

    cli.request_retry(letter.id)
    assert host.take_retries()[0].id == letter.id
    assert cli.list() == []


def test_the_stamp_changes_only_when_the_file_is_rewritten(root: Path):
    store = DeadLetters(root)
    assert store.stamp() is None and not store.changed_since(None)

    letter = add(store)
    stamp = store.stamp()
    store.mark_announced(["not-there"])  # changes nothing, so writes nothing
    store.take_retries()

    assert stamp is not None and not store.changed_since(stamp)
    DeadLetters(root).request_retry(letter.id)
    assert store.changed_since(stamp)


def test_the_files_and_folder_are_private(root: Path):
    add(DeadLetters(root))
    Attempts(root).bump("cron:run-1", "boom")

    for name in ("deadletters.json", "attempts.json", "deadletters.lock", "attempts.lock"):
        assert stat.S_IMODE((root / name).stat().st_mode) == 0o600, name
    assert stat.S_IMODE(root.stat().st_mode) == 0o700


def test_a_missing_file_reads_as_empty(root: Path):
    store = DeadLetters(root)

    assert store.list() == [] and store.unannounced() == [] and store.take_retries() == []
    assert not root.exists()  # reading, or asking for retries when none are marked, makes nothing


def test_a_torn_file_reads_as_empty_with_a_warning_and_is_kept_aside(root: Path, caplog: pytest.LogCaptureFixture):
    root.mkdir(parents=True)
    (root / "deadletters.json").write_text('{"letters": [{"id": "ab')
    store = DeadLetters(root)

    with caplog.at_level(logging.WARNING):
        assert store.list() == []
    letter = add(store)

    assert "deadletters.json is torn" in caplog.text
    assert store.list() == [letter]
    assert (root / "deadletters.json.torn").read_text() == '{"letters": [{"id": "ab'


def test_a_malformed_letter_is_left_out_and_the_rest_kept(root: Path, caplog: pytest.LogCaptureFixture):
    store = DeadLetters(root)
    good = add(store)
    data = json.loads(store.path.read_text())
    data["letters"].append({"id": "12345678", "kind": "nonsense"})
    store.path.write_text(json.dumps(data))

    with caplog.at_level(logging.WARNING):
        assert store.list() == [good]

    assert "leaving out a malformed dead letter" in caplog.text


@pytest.mark.parametrize("text", ["[1, 2]", "\xff\xfe", '{"letters": 7}'])
def test_a_file_of_the_wrong_shape_reads_as_empty(root: Path, text: str):
    root.mkdir(parents=True)
    (root / "deadletters.json").write_bytes(text.encode("latin-1"))

    assert DeadLetters(root).list() == []


def test_attempts_count_up_across_instances_and_clear(root: Path):
    first = Attempts(root)

    assert first.count("discord:42") == 0
    assert [first.bump("discord:42", "boom"), Attempts(root).bump("discord:42", "boom\nagain")] == [1, 2]

    later = Attempts(root)
    assert later.count("discord:42") == 2 and later.last_error("discord:42") == "boom again"
    later.bump("cron:run-1", "other")
    first.clear("discord:42")
    first.clear("never-bumped")
    assert later.count("discord:42") == 0 and later.count("cron:run-1") == 1 and later.last_error("x") == ""


def test_attempts_forget_counts_not_bumped_for_a_week(root: Path):
    now = [0.0]
    attempts = Attempts(root, clock=lambda: now[0])
    attempts.bump("old", "boom")
    now[0] = 8 * 86400.0

    assert attempts.bump("new", "boom") == 1
    assert attempts.count("old") == 0


def test_a_torn_attempts_file_counts_from_zero(root: Path, caplog: pytest.LogCaptureFixture):
    root.mkdir(parents=True)
    (root / "attempts.json").write_text('{"discord:42": {"cou')

    with caplog.at_level(logging.WARNING):
        assert Attempts(root).bump("discord:42", "boom") == 1

    assert "attempts.json is torn" in caplog.text


def test_backoff_grows_fourfold_from_five_seconds_and_is_capped():
    assert [backoff_s(n) for n in range(5)] == [0.0, 5.0, 20.0, 80.0, 300.0]
    assert backoff_s(100) == 300.0 and MAX_ATTEMPTS == 3


async def test_status_counts_the_dead_letters(tmp_path: Path):
    settings = Settings(home=tmp_path, providers=(), servers=(), agent=AgentSettings())
    agent = Agent(settings, ScriptedProvider(), None, SessionStore(tmp_path / "state" / "sessions"))
    gateway = Gateway(agent, {}, ask_timeout_s=1)
    status = Event("message", "/status", Target("test", "room-1", "alice"), principal=OWNER)

    before = await gateway.process(status, deliver=False)
    add(DeadLetters(settings.state / FOLDER))
    add(DeadLetters(settings.state / FOLDER), key="discord:42")
    after = await gateway.process(status, deliver=False)

    assert "\nDead letters: none" in (before or "")
    assert "\nDead letters: 2 (hermitcrab deadletters list)" in (after or "")
