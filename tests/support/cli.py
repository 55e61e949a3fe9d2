"""The real `hermitcrab` CLI as a subprocess, for tests and bench scripts alike: its command line, its environment,
and waiting for what it does (it runs beside the caller, so there is nothing to await)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from tests.support.fake_llm import FakeLLM, fake_llm_env

CLI = [sys.executable, "-m", "hermitcrab.host.cli"]


def cli_env(home: Path, llm: FakeLLM, extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a CLI process pointed at `home` and the scripted LLM."""
    return {
        **os.environ,
        **fake_llm_env(home, llm),
        "COLUMNS": "200",
        **(extra or {}),
    }


def wait_for(condition: Callable[[], bool], message: str, timeout_s: float = 20) -> None:
    """Poll `condition` until it holds: another process makes it so, or never does (then fail with `message`)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, message
        time.sleep(0.05)
