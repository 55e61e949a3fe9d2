"""Finding a Chromium executable, and the command line turned into a config."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client

from hermitcrab.servers.browser import BrowserConfig, build_server
from hermitcrab.servers.browser.__main__ import config_from_args, parse_args
from hermitcrab.servers.browser.launcher import BrowserNotFound, find_executable
from tests.support.browser import text_of


def test_explicit_executable_wins(tmp_path: Path) -> None:
    chrome = tmp_path / "chrome"
    chrome.write_text("")
    assert find_executable(chrome, bundled=None) == chrome


def test_missing_explicit_executable_names_the_install_command(tmp_path: Path) -> None:
    with pytest.raises(BrowserNotFound, match="playwright install chromium"):
        find_executable(tmp_path / "nope", bundled=None)


def test_playwright_bundle_is_preferred_to_the_system(tmp_path: Path) -> None:
    bundled = tmp_path / "chrome"
    bundled.write_text("")
    assert find_executable(None, bundled=str(bundled)) is None  # None: let Playwright use its own


def test_no_browser_anywhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("hermitcrab.servers.browser.launcher._SYSTEM_PATHS", ())
    with pytest.raises(BrowserNotFound, match="apt-get install chromium"):
        find_executable(None, bundled=str(tmp_path / "missing"))


def test_default_config_uses_a_persistent_profile_under_home(hermitcrab_home: Path) -> None:
    config = config_from_args(parse_args([]))
    assert config.profile_dir == hermitcrab_home / "state" / "browser" / "profile"
    assert config.roots == (hermitcrab_home / "workspace" / "uploads",), "its own folder, not the whole workspace"
    assert config.headless and not config.enable_evaluate and config.outbound_allow == ()


def test_outbound_allow_entries_from_the_flag_or_else_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMITCRAB_OUTBOUND_ALLOW", "10.0.0.0/8;intranet.example")
    assert config_from_args(parse_args([])).outbound_allow == ("10.0.0.0/8", "intranet.example")
    given = ["--allow-outbound", "127.0.0.1:3000;[::1]:8080", "--allow-outbound", "*.internal.example"]
    assert config_from_args(parse_args(given)).outbound_allow == ("127.0.0.1:3000", "[::1]:8080", "*.internal.example")


def test_isolated_headed_and_origins(tmp_path: Path) -> None:
    args = parse_args(
        [
            "--isolated",
            "--headed",
            "--allowed-origins",
            "a.com;b.com",
            "--root",
            str(tmp_path),
            "--enable-evaluate",
            "--state",
            str(tmp_path / "s"),
        ]
    )
    config = config_from_args(args)
    assert config.profile_dir is None and not config.headless
    assert config.allowed_origins == ("a.com", "b.com") and config.roots == (tmp_path,)
    assert config.enable_evaluate and config.output_dir == tmp_path / "s" / "outputs"


def test_call_timeout_flag_bounds_the_page_timeouts() -> None:
    config = config_from_args(parse_args(["--call-timeout", "3"]))
    assert config.call_timeout_s == 3 and config.page_timeout_ms == 2000
    assert config_from_args(parse_args([])).page_timeout_ms == 30_000  # the navigation timeout, unchanged
    for wrong in ("0.5", "nan", "1e308"):
        with pytest.raises(SystemExit):
            parse_args(["--call-timeout", wrong])


def test_log_level_is_warning_unless_asked() -> None:
    assert parse_args([]).log_level == "WARNING"
    assert parse_args(["--log-level", "info"]).log_level == "INFO"


def test_profile_and_isolated_exclude_each_other(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--isolated", "--profile", str(tmp_path)])


async def test_a_browser_that_fails_to_start_gives_a_clear_error(tmp_path: Path) -> None:
    config = BrowserConfig(state_dir=tmp_path, executable=Path("/bin/false"))
    async with Client(build_server(config)) as client:
        result = await client.call_tool("browser_navigate", {"url": "about:blank"})
    assert result.is_error
    assert "Chromium failed to start" in text_of(result)
