"""The Chat page in a real Chromium, talking to the agent of a real `hermitcrab run` through the web channel."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, expect

from tests.support.cli import wait_for
from tests.support.dashboard import chromium, dashboard_run, logged_in, own_server, serious_violations
from tests.support.fake_llm import FakeLLM, Reply, openai_text, openai_tool_calls


def say(page: Page, text: str) -> None:
    """Type `text` in the message box and press Enter, as the owner would."""
    box = page.get_by_label("Message")
    box.fill(text)
    box.press("Enter")
    expect(box).to_have_value("")  # the page took it: the box empties once the host accepted the message


def stream_events(client: httpx.Client, last_seen: str, until: str) -> list[tuple[str, dict[str, Any]]]:
    """The Chat stream's events after `last_seen`, as a reconnecting browser gets them, up to the entry containing
    `until` (or a reset)."""
    events: list[tuple[str, dict[str, Any]]] = []
    kind = ""
    with client.stream("GET", "/api/chat/stream", headers={"Last-Event-ID": last_seen}, timeout=20) as response:
        for line in response.iter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((kind, json.loads(line.removeprefix("data: "))))
                if kind == "reset" or (kind == "entry" and until in line):
                    break
    return events


def replies(page: Page):
    return page.locator("#conversation .entry.agent")


def test_hello_streams_in_renders_safely_and_a_reload_shows_the_history(tmp_path: Path, llm: FakeLLM):
    reply = (
        "Hello, **owner**! Here is `code` and <script>document.title='owned'</script> as text, "
        "[a link](javascript:document.title='owned') and ![an image](http://203.0.113.9/pixel.png), "
        "[a local port](http://127.0.0.1:9/), [a local name](http://app.localhost/), [the LAN](http://[fe80::1]/), "
        "[a number](http://2130706433/) and [a site](https://example.com/)."
    )
    llm.enqueue(Reply(openai_text(reply), hold_after=3))
    with dashboard_run(tmp_path / "home", llm) as run, chromium() as browser:
        page = logged_in(browser, run)
        say(page, "hello")

        draft = page.locator("#draft")
        expect(draft).to_contain_text("Hello, **owner**!")  # the first words, streamed before the rest exists
        expect(replies(page)).to_have_count(0)
        llm.release()
        expect(replies(page)).to_have_count(1)
        expect(draft).to_be_hidden()
        shown = replies(page).first
        expect(shown.locator("strong")).to_have_text("owner")
        expect(shown).to_contain_text("<script>document.title='owned'</script> as text")
        assert shown.locator("script").count() == 0 and shown.locator("img").count() == 0
        assert shown.locator('a[href^="javascript"]').count() == 0 and "owned" not in page.title()
        expect(shown.locator("a")).to_have_count(1)  # links to this machine or its network would get the cookie
        expect(shown.locator("a")).to_have_attribute("href", "https://example.com/")
        expect(shown).to_contain_text("[a local port](http://127.0.0.1:9/), [a local name](http://app.localhost/)")

        page.reload()
        expect(page.locator("#conversation .entry.user .text")).to_have_text("hello")
        expect(replies(page)).to_have_count(1)
        expect(replies(page).first.locator("strong")).to_have_text("owner")
        assert serious_violations(page) == []


def test_an_exec_approval_is_answered_with_the_buttons(tmp_path: Path, llm: FakeLLM):
    workspace, state = tmp_path / "ws", tmp_path / "exec-state"
    workspace.mkdir()
    exec_server = own_server(
        "exec", "--root", str(workspace), "--state", str(state), "--ask", "on-miss", "--sandbox", "none"
    )
    llm.enqueue(
        openai_tool_calls(("x1", "exec", json.dumps({"command": "touch approved.txt"}))),
        openai_text("Made approved.txt."),
        openai_tool_calls(("x2", "exec", json.dumps({"command": "touch denied.txt"}))),
        openai_text("It was refused."),
    )
    with dashboard_run(tmp_path / "home", llm, servers={"exec": exec_server}) as run, chromium() as browser:
        page = logged_in(browser, run)
        say(page, "make approved.txt")
        question = page.locator(".entry.question.open")
        expect(question).to_contain_text("touch approved.txt")
        assert serious_violations(page) == []  # a conversation with a question and its buttons on it
        question.get_by_role("button", name="allow-once").click()

        expect(page.locator(".entry.question").first).to_contain_text("Answered: allow-once")
        expect(replies(page).last).to_contain_text("Made approved.txt.")
        expect(page.locator(".entry.tool").first).to_contain_text("exec")
        expect(page.locator(".entry.tool .mark.ok")).to_have_count(1)
        assert (workspace / "approved.txt").exists()

        say(page, "make denied.txt")
        page.locator(".entry.question.open").get_by_role("button", name="deny").click()
        expect(replies(page).last).to_contain_text("It was refused.")
        expect(page.locator(".entry.tool .mark.bad")).to_have_count(1)
        assert not (workspace / "denied.txt").exists()


def test_new_from_the_page_starts_a_new_session_without_a_model_call(tmp_path: Path, llm: FakeLLM):
    home = tmp_path / "home"
    llm.enqueue(openai_text("Hi."))
    with dashboard_run(home, llm) as run, chromium() as browser:
        page = logged_in(browser, run)
        say(page, "hello")
        expect(replies(page)).to_have_count(1)
        sessions = home / "state" / "sessions" / "sessions.json"
        before = json.loads(sessions.read_text())["main"]

        page.get_by_role("button", name="/new").click()

        expect(replies(page).last).to_contain_text("Started a new session")
        assert json.loads(sessions.read_text())["main"] != before
        assert len(llm.requests) == 1
        expect(page.locator("#conversation .entry.user .text").last).to_have_text("/new")


def test_the_plain_forms_work_without_the_script_and_bad_input_is_a_sentence(tmp_path: Path, llm: FakeLLM):
    llm.enqueue(openai_text("Got it."))
    with dashboard_run(tmp_path / "home", llm) as run, chromium() as browser:
        context = browser.new_context(java_script_enabled=False)
        page = context.new_page()
        page.goto(run.login_link())
        page.get_by_label("Message").fill("sent by a plain form")
        page.get_by_role("button", name="Send", exact=True).click()
        expect(page.locator("#conversation .entry.user .text")).to_have_text("sent by a plain form")

        def answered() -> bool:
            page.reload()  # without the script nothing is live: the reply shows on a later load
            return "Got it." in page.locator("#conversation").inner_text()

        wait_for(answered, "the reply never showed")
        cursor = page.locator("#conversation").get_attribute("data-after") or ""
        llm.enqueue(openai_text("Second."))
        page.get_by_label("Message").fill("again")
        page.get_by_role("button", name="Send", exact=True).click()
        cookies = {cookie["name"]: cookie["value"] for cookie in context.cookies()}
        with httpx.Client(base_url=run.url, cookies=cookies) as client:
            since = stream_events(client, cursor, until="Second.")
            assert stream_events(client, "another-run.3", until="") == [("reset", {})]
        entries = [data["html"] for kind, data in since if kind == "entry"]
        assert len([html for html in entries if "again" in html]) == 1 and "Got it." not in str(since)
        assert len([html for html in entries if "Second." in html]) == 1

        page.get_by_role("button", name="Send", exact=True).click()  # the box is required: nothing is sent
        csrf = page.locator('meta[name="csrf-token"]').get_attribute("content") or ""
        bad = page.request.post(f"{run.url}/chat/answer", form={"csrf": csrf, "question": "7", "choice": "allow-once"})
        assert bad.status == 200 and "no longer waiting" in bad.text()
        odd = page.request.post(f"{run.url}/chat/send", form={"csrf": csrf, "id": "x", "text": "hi"})
        assert "without a proper id" in odd.text()
        assert len(llm.requests) == 2  # "sent by a plain form" and "again"; nothing for the refused ones


def test_a_message_accepted_before_a_kill_is_answered_once_after_the_restart(tmp_path: Path, llm: FakeLLM):
    home = tmp_path / "home"
    llm.enqueue(Reply(openai_text("This answer never arrives."), hold_after=0))
    with chromium() as browser:
        with dashboard_run(home, llm) as run:
            page = logged_in(browser, run)
            say(page, "remember the milk")
            wait_for(lambda: len(llm.requests) == 1, "the turn did not reach the model")
            run.kill()
        llm.enqueue(openai_text("Noted: milk."))
        with dashboard_run(home, llm) as again:
            inbox = home / "state" / "inbox" / "inbox.jsonl"
            wait_for(lambda: '"op": "ended"' in inbox.read_text(), "the message was not answered after the restart")
            page = logged_in(browser, again)
            expect(page.locator("#conversation .entry.user .text")).to_have_text(["remember the milk"])
            expect(replies(page)).to_have_count(1)
            expect(replies(page).locator(".text")).to_have_text(["Noted: milk."])
            assert len(llm.requests) == 2
