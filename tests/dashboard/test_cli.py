"""`hermitcrab dashboard` and doctor's dashboard row, with and without a run serving it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx

from tests.support.cli import CLI, cli_env
from tests.support.dashboard import dashboard_run
from tests.support.fake_llm import FakeLLM, free_port


def cli(home: Path, llm: FakeLLM, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], env=cli_env(home, llm, env), capture_output=True, text=True, timeout=60)


def test_a_link_minted_before_run_starts_logs_in_once_it_does(tmp_path: Path, llm: FakeLLM):
    home = tmp_path / "home"
    port = free_port()
    listen = {"HERMITCRAB_DASHBOARD_LISTEN": f"127.0.0.1:{port}"}
    minted = cli(home, llm, "dashboard", env=listen)
    assert minted.returncode == 0, minted.stderr
    assert minted.stdout.startswith(f"http://127.0.0.1:{port}/login?token=")
    assert "no `hermitcrab run` serves the dashboard now" in minted.stderr
    with dashboard_run(home, llm, env=listen) as run:
        assert run.url == f"http://127.0.0.1:{port}"
        with httpx.Client() as browser:
            landed = browser.get(minted.stdout.strip())
            assert landed.status_code == 200 and "<h1>Chat</h1>" in browser.get(f"{run.url}/chat").text
        again = cli(home, llm, "dashboard")
        assert again.returncode == 0 and "no `hermitcrab run`" not in again.stderr


def test_the_link_goes_through_the_public_url_when_one_is_set(tmp_path: Path, llm: FakeLLM):
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text('[dashboard]\npublic_url = "https://assistant.example.org/"\n')
    minted = cli(home, llm, "dashboard")
    assert minted.returncode == 0, minted.stderr
    assert minted.stdout.startswith("https://assistant.example.org/login?token=")


def test_doctor_says_whether_the_dashboard_is_served(tmp_path: Path, llm: FakeLLM):
    home = tmp_path / "home"
    none = tmp_path / "none.json"
    none.write_text('{"mcpServers": {}}')
    free = cli(home, llm, "doctor", "--mcp-config", str(none), env={"COLUMNS": "300"})
    assert "dashboard" in free.stdout and "is free" in free.stdout, free.stdout
    with dashboard_run(home, llm) as run:
        served = cli(home, llm, "doctor", "--mcp-config", str(none), env={"COLUMNS": "300"})
        assert f"{run.url} (hermitcrab dashboard prints a login link)" in served.stdout, served.stdout


def test_run_stops_cleanly_with_a_page_following_its_event_stream(tmp_path: Path, llm: FakeLLM):
    with dashboard_run(tmp_path / "home", llm) as run, httpx.Client() as client:
        client.get(run.login_link(), follow_redirects=True)
        with client.stream("GET", f"{run.url}/api/chat/stream") as live:
            assert live.status_code == 200
            assert run.stop() == 0
        logged = run.stderr + (run.home / "state" / "logs" / "host.log").read_text()
    assert "Exception in ASGI application" not in logged and "Traceback" not in logged
