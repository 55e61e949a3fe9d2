"""Only the owner's logged-in browser gets into the dashboard, and only with the page's own requests."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx
import pytest

from tests.support.cli import CLI, cli_env
from tests.support.dashboard import chromium, dashboard_run, logged_in, serious_violations
from tests.support.fake_llm import FakeLLM


@pytest.fixture
def run(tmp_path: Path, llm: FakeLLM):
    with dashboard_run(tmp_path / "home", llm) as started:
        yield started


def test_the_printed_link_logs_a_browser_in_once(run):
    link = run.login_link()
    with httpx.Client() as client:
        first = client.get(link, follow_redirects=True)
        assert first.status_code == 200 and "<h1>Chat</h1>" in first.text
        cookie = client.cookies.get("hermitcrab_session")
        assert cookie
    with httpx.Client() as stranger:
        again = stranger.get(link, headers={"Accept": "text/html"})
    assert again.status_code == 401 and "used up or expired" in again.text


def test_without_the_cookie_a_page_is_the_login_page_and_an_api_call_401(run):
    page = httpx.get(f"{run.url}/sessions", headers={"Accept": "text/html"})
    assert page.status_code == 401 and "hermitcrab dashboard" in page.text and "<h1>Log in</h1>" in page.text
    api = httpx.get(f"{run.url}/api/sessions")
    assert api.status_code == 401 and "not logged in" in api.json()["error"]


def test_a_post_without_the_csrf_token_is_refused(run):
    with httpx.Client() as client:
        client.get(run.login_link(), follow_redirects=True)
        refused = client.post(f"{run.url}/logout")
        assert refused.status_code == 403 and "CSRF" in refused.json()["error"]
        wrong = client.post(f"{run.url}/logout", data={"csrf": "0" * 64})
        assert wrong.status_code == 403
        assert client.get(f"{run.url}/chat").status_code == 200  # still logged in


def test_a_rebinding_host_name_is_refused(run):
    with httpx.Client() as client:
        client.get(run.login_link(), follow_redirects=True)
        port = run.url.rpartition(":")[2]
        refused = client.get(f"{run.url}/chat", headers={"Host": f"attacker.example:{port}"})
    assert refused.status_code == 400 and "Host header" in refused.text


def test_the_cookie_is_httponly_and_samesite_strict(run):
    with httpx.Client() as client:
        response = client.get(run.login_link(), follow_redirects=False)
    cookie = response.headers["set-cookie"].lower()
    assert response.status_code == 303 and "httponly" in cookie and "samesite=strict" in cookie


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
