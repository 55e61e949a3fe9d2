"""Shared fixtures: every test gets its own HERMITCRAB_HOME; async tests run under anyio (auto mode) on asyncio.

In CI (`CI` set, as `.ci/run` does) a skipped test fails: a missing real part must not pass as green.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from stamina.instrumentation import RetryDetails, set_on_retry_hooks

from hermitcrab.host.config import PROVIDER_VARIABLES
from tests.support.fake_discord import FakeDiscord, running_fake_discord
from tests.support.fake_llm import FakeLLM, running_fake_llm


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    """The scripted LLM on 127.0.0.1 (OpenAI and Anthropic formats), for a test's host to talk to."""
    with running_fake_llm() as fake:
        yield fake


@pytest.fixture
def discord_api() -> Iterator[FakeDiscord]:
    """A fake Discord (REST and gateway) on 127.0.0.1, for `hermitcrab run` to log in to."""
    with running_fake_discord() as fake:
        yield fake


@pytest.fixture(autouse=True)
def hermitcrab_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "hermitcrab-home"
    home.mkdir()
    monkeypatch.setenv("HERMITCRAB_HOME", str(home))
    for name in PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """In CI every real part (Chromium, bubblewrap, node) must be there: a skip there is a failure."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if os.environ.get("CI") and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, where every real part must be installed: {_skip_reason(report)}"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """By hand, skips are allowed; one line at the end says what was skipped and why."""
    reports: list[pytest.TestReport] = terminalreporter.stats.get("skipped", [])
    if reports:
        reasons = Counter(_skip_reason(report) for report in reports)
        listed = "; ".join(f"{reason} ({count})" for reason, count in reasons.most_common())
        terminalreporter.write_line(f"skipped {len(reports)} tests: {listed}")


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    return str(longrepr[2]).removeprefix("Skipped: ") if isinstance(longrepr, tuple) else str(longrepr)


@pytest.fixture
def retry_waits() -> Iterator[list[float]]:
    """The waits stamina scheduled while the test ran (`hermitcrab.util.retry`), as its retry hook reports them."""
    waited: list[float] = []

    def record(details: RetryDetails) -> None:
        waited.append(details.wait_for)

    set_on_retry_hooks([record])
    yield waited
    set_on_retry_hooks(())
