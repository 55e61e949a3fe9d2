"""Shared fixtures: every test gets its own HERMITCRAB_HOME; async tests run under anyio (auto mode) on asyncio."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def hermitcrab_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "hermitcrab-home"
    home.mkdir()
    monkeypatch.setenv("HERMITCRAB_HOME", str(home))
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "HERMITCRAB_PROVIDER",
        "HERMITCRAB_LLM_BASE_URL",
        "HERMITCRAB_LLM_API_KEY",
        "HERMITCRAB_MODEL",
    ):
        monkeypatch.delenv(name, raising=False)
    return home
