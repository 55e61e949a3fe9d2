"""Helpers shared by the browser tests: result readers and the skip mark for machines without Chromium."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp_types import CallToolResult, TextContent

from hermitcrab.servers.browser.launcher import find_system_browser


def _bundled_chromium() -> bool:
    """True when Playwright's own Chromium download exists (checked without starting Playwright)."""
    return any(Path.home().glob(".cache/ms-playwright/chromium-*"))


needs_chromium = pytest.mark.skipif(
    find_system_browser() is None and not _bundled_chromium(), reason="no Chromium or Chrome installed"
)


def text_of(result: CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, TextContent))


def ref_of(text: str, fragment: str) -> str:
    """The ref on the first snapshot line containing `fragment`, e.g. ref_of(text, 'button "Sign in"')."""
    for line in text.splitlines():
        if fragment in line:
            found = re.search(r"\[ref=([a-z0-9]+)\]", line)
            if found:
                return found.group(1)
    raise AssertionError(f"no ref for {fragment!r} in:\n{text}")
