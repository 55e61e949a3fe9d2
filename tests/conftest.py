"""Shared fixtures: every test gets its own HERMITCRAB_HOME, and coroutine tests run under anyio."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(item.obj):
            item.add_marker(pytest.mark.anyio)


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
