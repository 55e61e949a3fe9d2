"""Browser lifecycle: persistent profile, origin policy, restart after the browser process is killed."""

from __future__ import annotations

import os
import signal
import tempfile
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from mcp import Client

from hermitcrab.servers.browser import BrowserConfig, Session, build_server
from tests.support.browser import needs_chromium, ref_of, text_of

pytestmark = needs_chromium


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("profile")


@pytest.fixture(scope="module")
async def guarded(
    tmp_path_factory: pytest.TempPathFactory, profile: Path, local_config: Callable[..., BrowserConfig]
) -> AsyncIterator[Session]:
    """A persistent-profile browser that must not load anything from `localhost`, with evaluate on."""
    config = local_config(
        state_dir=tmp_path_factory.mktemp("state"),
        profile_dir=profile,
        blocked_origins=("localhost",),
        enable_evaluate=True,
    )
    session = Session(config)
    yield session
    await session.close(stop=True)


@pytest.fixture
async def client(guarded: Session) -> AsyncIterator[Client]:
    async with Client(build_server(session=guarded)) as client:
        yield client


def browser_pids(profile: Path) -> list[int]:
    """The main Chromium process using `profile` (the one without --type=, i.e. not a renderer or helper)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            args = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"--user-data-dir={profile}".encode() in args and not any(arg.startswith(b"--type=") for arg in args):
            found.append(int(entry.name))
    return found


async def test_blocked_origin_is_refused(client: Client, site: str) -> None:
    port = site.rsplit(":", 1)[1]
    result = await client.call_tool("browser_navigate", {"url": f"http://localhost:{port}/second.html"})
    assert result.is_error and "outside the origins" in text_of(result)


async def test_link_to_blocked_origin_does_not_load(client: Client, site: str) -> None:
    port = site.rsplit(":", 1)[1]
    page = f'data:text/html,<a href="http://localhost:{port}/second.html">away</a>'
    opened = text_of(await client.call_tool("browser_navigate", {"url": page}))
    clicked = text_of(await client.call_tool("browser_click", {"ref": ref_of(opened, 'link "away"')}))
    assert "Second page" not in clicked
    assert "failed to load" in clicked


async def test_profile_keeps_cookies_across_browser_restarts(client: Client, site: str) -> None:
    page = text_of(await client.call_tool("browser_navigate", {"url": f"{site}/login.html"}))
    ref = ref_of(page, 'textbox "Username"')
    await client.call_tool("browser_type", {"ref": ref, "text": "carol", "submit": True})
    closed = await client.call_tool("browser_close", {})
    assert not closed.is_error
    who = text_of(await client.call_tool("browser_navigate", {"url": f"{site}/whoami"}))
    assert "You are carol" in who


async def test_killed_browser_is_restarted_on_the_next_call(client: Client, site: str, profile: Path) -> None:
    await client.call_tool("browser_navigate", {"url": f"{site}/second.html"})
    pids = browser_pids(profile)
    assert len(pids) == 1
    os.kill(pids[0], signal.SIGKILL)
    result = await client.call_tool("browser_navigate", {"url": f"{site}/second.html"})
    assert not result.is_error, text_of(result)
    assert "restarted" in text_of(result) and "Second page" in text_of(result)
    assert browser_pids(profile) and browser_pids(profile) != pids


async def test_evaluate_when_enabled(client: Client, site: str) -> None:
    page = text_of(await client.call_tool("browser_navigate", {"url": f"{site}/second.html"}))
    result = text_of(await client.call_tool("browser_evaluate", {"function": "() => document.title"}))
    assert '- Result: "Second"' in result
    pressed = await client.call_tool(
        "browser_evaluate", {"function": "(button) => button.textContent", "ref": ref_of(page, 'button "Press me"')}
    )
    assert '- Result: "Press me"' in text_of(pressed)
    huge = await client.call_tool("browser_evaluate", {"function": "() => 1" + " " * 1_000_000})
    assert huge.is_error and "`function` is too long (1,000,007 characters; the limit is 100,000)" in text_of(huge)
    thrown = text_of(await client.call_tool("browser_evaluate", {"function": "() => { throw new Error('nope') }"}))
    assert "The function threw an error" in thrown
    assert "- Error: Page.evaluate: Error: nope" in thrown.split("<<<page-content-")[1]  # inside the untrusted fence


async def test_isolated_browser_writes_nothing_in_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, site: str, local_config: Callable[..., BrowserConfig]
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(name, raising=False)
    scratch_before = set(Path(tempfile.gettempdir()).glob("hermitcrab-browser-*"))
    async with Client(build_server(local_config(state_dir=tmp_path / "state"))) as client:
        page = await client.call_tool("browser_navigate", {"url": f"{site}/second.html"})
        shot = await client.call_tool("browser_take_screenshot", {})
    assert not page.is_error and not shot.is_error
    assert sorted(home.rglob("*")) == []  # Chromium wrote ~/.config/chromium/Crash Reports and ~/.cache/dconf
    assert set(Path(tempfile.gettempdir()).glob("hermitcrab-browser-*")) == scratch_before
