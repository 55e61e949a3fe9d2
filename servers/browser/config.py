"""The browser server's settings, resolved once at the edge and passed down frozen."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from hermitcrab.servers._common.paths import default_paths

ALLOW_HINT = "start hermitcrab-browser with --allow-outbound HOST:PORT (the host: [outbound] allow in config.toml)"
UPLOADS = "uploads"
"""The workspace's folder of files a page may be sent (`browser_file_upload`), the default upload root."""


def default_state_dir() -> Path:
    return default_paths("browser", os.environ)[1]


@dataclass(frozen=True)
class BrowserConfig:
    """Everything the session and the tools need to know; built by `__main__` or by tests."""

    state_dir: Path = field(default_factory=default_state_dir)
    # None means an isolated, throw-away profile; a path keeps cookies and logins there.
    profile_dir: Path | None = None
    headless: bool = True
    executable: Path | None = None
    allowed_origins: tuple[str, ...] = ()
    blocked_origins: tuple[str, ...] = ()
    # What on this machine or its network the browser may reach besides public addresses (`util.outbound`).
    outbound_allow: tuple[str, ...] = ()
    # Files may be uploaded from these directories only.
    roots: tuple[Path, ...] = ()
    enable_evaluate: bool = False
    snapshot_max_chars: int = 40_000
    viewport: tuple[int, int] = (1280, 720)
    action_timeout_ms: int = 5_000
    navigation_timeout_ms: int = 30_000
    # Every tool call ends within this; a page that does not answer by then is closed and replaced.
    call_timeout_s: float = 45.0

    @property
    def page_timeout_ms(self) -> float:
        """The longest one page operation may take: two thirds of the call's deadline, leaving time to report."""
        return self.call_timeout_s * 1000 * 2 / 3

    @property
    def output_dir(self) -> Path:
        """Where PDFs and downloads are written."""
        return self.state_dir / "outputs"
