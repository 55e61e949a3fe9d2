"""Only the owner's logged-in browser gets into the dashboard, and only with the page's own requests."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from hermitcrab.dashboard.access import Access
from hermitcrab.dashboard.auth import Sessions
from tests.support.cli import CLI, cli_env
from tests.support.dashboard import DashboardRun, chromium, dashboard_run, logged_in, serious_violations
from tests.support.fake_llm import FakeLLM, running_fake_llm
from tests.support.static_files import serve_directory


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory):
    """One run for the module: each test logs in with its own link, so none sees another's session."""
    with running_fake_llm() as llm, dashboard_run(tmp_path_factory.mktemp("access") / "home", llm) as started:
        yield started


@contextmanager
def logged_in_client(run: DashboardRun) -> Iterator[httpx.Client]:
    """An HTTP client holding a fresh session's cookie, as a browser has after the link's page."""
    with httpx.Client() as client:
        landed = client.get(run.login_link())
        assert landed.status_code == 200 and 'http-equiv="refresh" content="0;url=/chat"' in landed.text
        yield client


def test_the_printed_link_logs_a_browser_in_once(run):
    link = run.login_link()
    with httpx.Client() as client:
        first = client.get(link, follow_redirects=True)
        assert first.status_code == 200 and 'href="/chat"' in first.text
        cookie = client.cookies.get("hermitcrab_session")
        assert cookie
        assert "<h1>Chat</h1>" in client.get(f"{run.url}/chat").text
    with httpx.Client() as stranger:
        again = stranger.get(link, headers={"Accept": "text/html"})
    assert again.status_code == 401 and "used up or expired" in again.text


def test_without_the_cookie_a_page_is_the_login_page_and_an_api_call_401(run):
    page = httpx.get(f"{run.url}/sessions", headers={"Accept": "text/html"})
    assert page.status_code == 401 and "hermitcrab dashboard" in page.text and "<h1>Log in</h1>" in page.text
    api = httpx.get(f"{run.url}/api/chat/stream")
    assert api.status_code == 401 and "not logged in" in api.json()["error"]


def test_a_post_without_the_csrf_token_is_refused(run):
    with logged_in_client(run) as client:
        refused = client.post(f"{run.url}/logout")
        assert refused.status_code == 403 and "CSRF" in refused.json()["error"]
        wrong = client.post(f"{run.url}/logout", data={"csrf": "0" * 64})
        assert wrong.status_code == 403
        assert client.get(f"{run.url}/chat").status_code == 200  # still logged in


def test_a_rebinding_host_name_is_refused(run):
    with logged_in_client(run) as client:
        port = run.url.rpartition(":")[2]
        refused = client.get(f"{run.url}/chat", headers={"Host": f"attacker.example:{port}"})
    assert refused.status_code == 400 and "Host header" in refused.text


def test_the_cookie_is_httponly_and_samesite_strict(run):
    with httpx.Client() as client:
        response = client.get(run.login_link(), follow_redirects=False)
    cookie = response.headers["set-cookie"].lower()
    assert response.status_code == 200 and "httponly" in cookie and "samesite=strict" in cookie


def test_another_apps_odd_cookie_on_the_same_host_hides_nothing(run):
    with logged_in_client(run) as client:
        session = client.cookies["hermitcrab_session"]
    cookies = f'prefs={{"theme": "dark"}}; hermitcrab_session={session}'
    shown = httpx.get(f"{run.url}/chat", headers={"Cookie": cookies, "Accept": "text/html"})
    assert shown.status_code == 200 and "<h1>Chat</h1>" in shown.text


def test_only_login_itself_and_static_files_skip_the_door(run):
    for path in ("/loginX", "/login/../chat", "/staticX/dashboard.css"):
        refused = httpx.get(f"{run.url}{path}")
        assert refused.status_code == 401, path
    assert httpx.get(f"{run.url}/static/dashboard.css").status_code == 200


def test_a_websocket_is_refused(tmp_path: Path):
    """No websocket reaches a page: the door closes it before anything else looks at it (uvicorn here has no
    websocket support, so this drives the middleware itself)."""
    reached: list[str] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        reached.append(scope["type"])

    sent: list[Message] = []

    async def receive() -> Message:
        return {"type": "websocket.connect"}

    async def send(message: Message) -> None:
        sent.append(message)

    door = Access(app, sessions=Sessions(tmp_path), hosts=[], login_page=app)
    scope = {"type": "websocket", "path": "/chat", "headers": [(b"host", b"127.0.0.1")]}
    anyio.run(door, scope, receive, send)
    assert reached == [] and sent == [{"type": "websocket.close", "code": 1008}]


def test_a_link_opened_from_another_sites_page_logs_in(run, tmp_path: Path):
    """The Strict cookie goes on no step of a navigation another site began: the link's own page moves on.
    `localhost` is another site than `127.0.0.1` (a site is scheme and host; the port does not count)."""
    (tmp_path / "mail.html").write_text(f'<a href="{run.login_link()}">log in</a>')
    with chromium() as browser, serve_directory(tmp_path) as other:
        page = browser.new_context().new_page()
        page.goto(f"{other.replace('127.0.0.1', 'localhost')}/mail.html")
        page.get_by_role("link", name="log in").click()
        page.wait_for_url(f"{run.url}/chat")
        assert page.get_by_role("heading", level=1).inner_text() == "Chat"


def test_logging_out_in_chromium_ends_the_session(run):
    with chromium() as browser:
        page = logged_in(browser, run)
        assert page.get_by_role("heading", level=1).inner_text() == "Chat"
        page.get_by_role("button", name="Log out").click()
        page.wait_for_url("**/login")
        page.goto(f"{run.url}/chat")
        assert page.get_by_role("heading", level=1).inner_text() == "Log in"
        assert serious_violations(page) == []


def test_a_listen_address_beyond_loopback_needs_public(tmp_path: Path, llm: FakeLLM):
    env = cli_env(tmp_path, llm, {"HERMITCRAB_DASHBOARD_LISTEN": "0.0.0.0:0"})
    done = subprocess.run([*CLI, "run"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0
    assert "--public" in done.stderr and "beyond this machine" in done.stderr


def test_a_unicode_digit_anywhere_a_number_is_read_is_bad_input_not_a_crash(run):
    """`"²".isdigit()` is True and `int("²")` raises: each place the dashboard reads a number answers it."""
    note = run.home / "workspace" / "memory" / "digits.md"
    note.parent.mkdir(parents=True, exist_ok=True)
    note.write_text("one\ntwo\n")
    with logged_in_client(run) as client:
        chat = client.get(f"{run.url}/chat").text
        csrf = re.search(r'name="csrf-token" content="(\w+)"', chat)
        cursor = re.search(r'data-after="(\w+)\.\d+"', chat)
        assert csrf is not None and cursor is not None
        for path in ("/usage?days=²", "/sessions?page=²", "/memory/file?path=memory/digits.md&line=²&to=²&from=²"):
            assert client.get(f"{run.url}{path}").status_code == 200, path
        with client.stream("GET", f"{run.url}/api/sessions/live/nothing?offset=²", timeout=20) as live:
            assert live.status_code == 200 and "event: replaced" in live.read().decode()
        with client.stream("GET", f"{run.url}/api/chat/stream?after={cursor.group(1)}.²", timeout=20) as stream:
            assert any(line == "event: reset" for line in stream.iter_lines())
        answered = client.post(
            f"{run.url}/chat/answer",
            data={"question": "²", "choice": "yes"},
            headers={"X-CSRF-Token": csrf.group(1), "Accept": "application/json"},
        )
        assert answered.status_code == 400 and "lacks the question" in answered.json()["error"]
