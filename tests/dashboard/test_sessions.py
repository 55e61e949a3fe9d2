"""The Sessions page on a real run: sessions written by webhook turns (a tool call of the real memory server among
them) listed with their sizes and tokens, a transcript with its tool call folded, a turn appearing in an open
transcript as it is written, and `/new` and `/compact` run from their buttons as the owner's commands."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.support.cli import wait_for
from tests.support.dashboard import DashboardRun, chromium, dashboard_run, logged_in, own_server, serious_violations
from tests.support.fake_llm import FakeLLM, free_port, openai_text, openai_tool_calls, running_fake_llm
from tests.support.webhook_host import TOKEN

KEY = "discord:dm:42"
OTHER = "reports"
ARCHIVE = "archive"
ANSWER = "You like <b>green tea</b>."


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory):
    """A run with the real memory server, two webhook turns in `KEY` (the first searched memory) and one in `OTHER`;
    the tests below go on from each other's state, in their order."""
    root = tmp_path_factory.mktemp("sessions")
    workspace = root / "home" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "MEMORY.md").write_text("# Memory\n\n- The owner likes green tea.\n")
    memory = own_server("memory", "--workspace", str(workspace), "--state", str(root / "index"), "--embedder", "none")
    seed_archive(root / "home" / "state" / "sessions")
    port = free_port()
    hook = {"HERMITCRAB_WEBHOOK_LISTEN": f"127.0.0.1:{port}", "HERMITCRAB_WEBHOOK_TOKEN": TOKEN}
    with running_fake_llm() as llm, dashboard_run(root / "home", llm, servers={"memory": memory}, env=hook) as run:
        turns = Turns(run, llm, f"http://127.0.0.1:{port}")
        llm.enqueue(
            openai_tool_calls(("call-1", "memory_search", json.dumps({"query": "green tea"}))),
            openai_text(ANSWER, tokens=(1200, 300)),
        )
        turns.wait_for(turns.send(KEY, "What do I like to drink?"), ANSWER)
        llm.enqueue(openai_text("Standup is at 09:30.", tokens=(800, 100)))
        turns.wait_for(turns.send(KEY, "When is standup?"), "Standup is at 09:30.")
        llm.enqueue(openai_text("Nothing new today."))
        turns.wait_for(turns.send(OTHER, "Anything to report?"), "Nothing new today.")
        yield turns


def seed_archive(folder: Path) -> None:
    """`ARCHIVE`, a session of 450 entries last written on 1 December, as a long-lived home has."""
    folder.mkdir(parents=True)
    name = "archive-20261201T090000-abcdef"
    (folder / "sessions.json").write_text(json.dumps({ARCHIVE: {"id": name, "created": "2026-12-01T09:00:00+00:00"}}))
    times = [f"2026-12-01T09:{n // 60:02}:{n % 60:02}+00:00" for n in range(225)]
    pairs = [
        {"id": f"{kind}{n}", "ts": ts, "kind": kind, "text": f"{'note' if kind == 'user' else 'kept'} {n}"}
        for n, ts in enumerate(times)
        for kind in ("user", "assistant")
    ]
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(entry) + "\n" for entry in pairs))


class Turns:
    """Turns run through the run's webhook, as a program would send them."""

    def __init__(self, run: DashboardRun, llm: FakeLLM, webhook: str) -> None:
        self.run, self.llm, self.webhook = run, llm, webhook

    def send(self, session: str, text: str) -> str:
        answer = httpx.post(
            f"{self.webhook}/hooks/agent",
            headers={"Authorization": f"Bearer {TOKEN}"},
            json={"message": text, "session": session},
        )
        assert answer.status_code == 202, answer.text
        return session

    def entries(self, session: str, transcript: str | None = None) -> list[dict[str, Any]]:
        name = transcript or sessions(self.run.home).get(session)
        path = self.run.home / "state" / "sessions" / f"{name}.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    def wait_for(self, session: str, reply: str) -> None:
        said = lambda: any(e.get("text") == reply for e in self.entries(session))  # noqa: E731
        wait_for(said, f"no reply {reply!r} in {session}:\n{self.run.stderr}")


@pytest.fixture(scope="module")
def page(host: Turns) -> Iterator[Page]:
    """One browser logged in for the module's tests, each starting where it likes."""
    with chromium() as browser:
        yield logged_in(browser, host.run)


def sessions(home: Path) -> dict[str, str]:
    path = home / "state" / "sessions" / "sessions.json"
    index = json.loads(path.read_text()) if path.exists() else {}
    return {key: record["id"] for key, record in index.items()}


def test_the_list_shows_each_session_with_its_size_and_tokens(host: Turns, page: Page):
    entries = host.entries(KEY)
    texts = [e["text"] for e in entries if e["kind"] in ("user", "assistant", "tool_result")]
    assert len([t for t in texts if t]) == 5  # two questions, two answers and the search's result
    page.get_by_role("navigation", name="Pages").get_by_role("link", name="Sessions").click()
    assert page.get_by_role("heading", level=1).inner_text() == "Sessions"
    assert "Showing sessions 1 to 3 of 3" in page.get_by_role("main").inner_text()
    rows = page.get_by_role("row").all_inner_texts()
    assert rows[-1].startswith(ARCHIVE) and "2026-12-01" in rows[-1]  # the least recently active last
    cells = page.get_by_role("row", name=KEY).get_by_role("cell").all_inner_texts()
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d \((just now|\d+ min ago)\)", cells[0])  # the owner's zone
    assert cells[1:] == ["4", f"{sum(map(len, texts)):,}", "2,020", "408"]  # tokens: 20+1200+800 in, 8+300+100 out
    other = page.get_by_role("row", name=OTHER).get_by_role("cell").all_inner_texts()
    assert other[1] == "2" and other[3:] == ["10", "5"]
    assert serious_violations(page) == []


def test_a_transcript_folds_its_tool_call_and_follows_a_turn_as_it_is_written(host: Turns, page: Page):
    page.goto(f"{host.run.url}/sessions")
    page.get_by_role("link", name=KEY).click()
    assert page.get_by_role("heading", level=1).inner_text() == f"Session {KEY}"
    transcript = page.get_by_role("list", name="Transcript")
    entries = transcript.get_by_role("listitem")
    assert entries.count() == 6  # two questions, the call, its result, two answers
    assert "You like <b>green tea</b>." in entries.nth(3).inner_text()  # as text, not markup
    call = transcript.locator("details", has_text="Called memory_search")
    assert not call.get_attribute("open")
    call.locator("summary").click()
    assert '"query": "green tea"' in call.inner_text()
    assert transcript.locator("details", has_text="memory_search answered").is_visible()
    assert serious_violations(page) == []

    host.llm.enqueue(openai_text("It is at 09:30, as every weekday."))
    host.send(KEY, "Remind me when standup is")
    expect(entries.filter(has_text="It is at 09:30, as every weekday.")).to_be_visible()
    assert entries.count() == 8
    assert entries.filter(has_text="Remind me when standup is").count() == 1


def test_new_from_its_button_starts_a_fresh_transcript_and_keeps_the_old(host: Turns, page: Page):
    run = host.run
    before = sessions(run.home)[KEY]
    page.goto(f"{run.url}/sessions/{KEY}")
    page.get_by_role("button", name="Start a new session (/new)").click()
    assert "Started a new session" in page.get_by_role("status").first.inner_text()
    after = sessions(run.home)[KEY]
    assert after != before and after in page.get_by_role("main").inner_text()
    assert "No messages yet." in page.get_by_role("main").inner_text()
    assert page.get_by_role("list", name="Transcript").get_by_role("listitem").count() == 0
    assert any("When is standup?" in e.get("text", "") for e in host.entries(KEY, before))


def test_compact_from_its_button_marks_the_summary_in_the_transcript(host: Turns, page: Page):
    host.llm.enqueue(openai_text("Still nothing new.", tokens=(40, 6)))
    host.wait_for(host.send(OTHER, "And now?"), "Still nothing new.")
    host.llm.enqueue(openai_text("NO_REPLY"), openai_text("The owner asked twice for news; there was none."))
    page.goto(f"{host.run.url}/sessions/{OTHER}")
    page.get_by_role("button", name="Compact it (/compact)").click()
    assert "Compacted 2 earlier entries" in page.get_by_role("status").first.inner_text()
    marked = page.get_by_role("listitem").filter(has_text="was summarised; the model sees the summary from here on")
    assert marked.inner_text().startswith("Compaction")
    flush = page.get_by_role("listitem").filter(has_text="Host (memory flush)")
    assert "not shown to the model again" in flush.inner_text()
    marked.get_by_text("Read the summary").click()
    assert "The owner asked twice for news" in marked.inner_text()
    assert serious_violations(page) == []
    assert [e["kind"] for e in host.entries(OTHER)].count("compaction") == 1


def test_an_odd_key_a_torn_line_and_a_long_message_are_shown_as_text(host: Turns, page: Page):
    odd = "odd <b>&?#%/x"
    host.llm.enqueue(openai_text("Noted."))
    host.wait_for(host.send(odd, "word " * 1000), "Noted.")
    with (host.run.home / "state" / "sessions" / f"{sessions(host.run.home)[odd]}.jsonl").open("a") as transcript:
        transcript.write('{"kind": "user", "text": "torn\n')
    page.goto(f"{host.run.url}/sessions")
    page.get_by_role("link", name=odd).click()
    assert page.get_by_role("heading", level=1).inner_text() == f"Session {odd}"
    entries = page.get_by_role("list", name="Transcript").get_by_role("listitem")
    assert entries.count() == 2
    folded = entries.first.locator("details")
    assert folded.locator("summary").inner_text().startswith("Show the other ")
    assert not folded.get_attribute("open")
    assert serious_violations(page) == []

    missing = page.goto(f"{host.run.url}/sessions/no:such:session")
    assert missing is not None and missing.status == 404
    assert page.get_by_role("alert").inner_text() == "There is no session called “no:such:session”."


def test_a_long_transcript_shows_its_last_entries_and_all_on_request(host: Turns, page: Page):
    page.goto(f"{host.run.url}/sessions/{ARCHIVE}")
    assert "Showing the last 200 of 450 entries." in page.get_by_role("main").inner_text()
    entries = page.get_by_role("list", name="Transcript").get_by_role("listitem")
    assert entries.count() == 200
    assert "note 125" in entries.first.inner_text() and "kept 224" in entries.last.inner_text()
    page.get_by_role("link", name="Show all entries").click()
    assert entries.count() == 450 and "note 0" in entries.first.inner_text()
