"""Fixtures of the dashboard tests: the scripted LLM and the fake Discord, as in the e2e tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_discord import FakeDiscord, running_fake_discord
from tests.support.fake_llm import FakeLLM, running_fake_llm


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with running_fake_llm() as fake:
        yield fake


@pytest.fixture
def discord_api() -> Iterator[FakeDiscord]:
    with running_fake_discord() as fake:
        yield fake
