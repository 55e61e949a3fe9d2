"""Find a Chromium to drive: the one asked for, Playwright's own, or the system's."""

from __future__ import annotations

import shutil
from pathlib import Path

# Quiet, sandbox-friendly flags: no update checks, sync or first-run UI on a headless server.
LAUNCH_ARGS = (
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # WebRTC's UDP would bypass the proxy (so the outbound guard): only proxied (TCP) candidates, or none.
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
)
_SYSTEM_NAMES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome", "chrome")
_SYSTEM_PATHS = (
    "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
    "/Applications/Chromium.app/Contents/MacOS/Chromium",
    "/snap/bin/chromium",
)
INSTALL_HINT = (
    "install one with `playwright install chromium` or your package manager (e.g. `apt-get install chromium`), "
    "or pass --executable PATH"
)


class BrowserNotFound(RuntimeError):
    """No usable Chromium or Chrome executable exists."""


def find_executable(explicit: Path | None, bundled: str | None) -> Path | None:
    """Return the executable to launch, or None to let Playwright use its bundled browser.

    Order: `explicit` (--executable), Playwright's own download (`bundled`), then a system install.
    """
    if explicit is not None:
        if not explicit.is_file():
            raise BrowserNotFound(f"--executable {explicit} does not exist; {INSTALL_HINT}.")
        return explicit
    if bundled and Path(bundled).is_file():
        return None
    system = find_system_browser()
    if system is None:
        raise BrowserNotFound(f"No Chromium or Chrome was found: {INSTALL_HINT}.")
    return system


def find_system_browser() -> Path | None:
    for name in _SYSTEM_NAMES:
        found = shutil.which(name)
        if found:
            return Path(found)
    for candidate in _SYSTEM_PATHS:
        if Path(candidate).is_file():
            return Path(candidate)
    return None
