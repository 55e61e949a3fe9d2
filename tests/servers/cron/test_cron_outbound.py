"""hermitcrab-cron as a real process: webhooks to this machine are refused unless its allow entries open them."""

from __future__ import annotations

import sys
from pathlib import Path

from mcp import Client, StdioServerParameters

from tests.servers.cron.conftest import call, error_of, job

HOOK = "http://127.0.0.1:8090/hooks/cron"


def cron(state: Path, *flags: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    args = ["-m", "hermitcrab.servers.cron", "--state", str(state), "--min-interval-s", "0", *flags]
    return StdioServerParameters(command=sys.executable, args=args, env=env)


def webhook_job(url: str) -> dict[str, object]:
    return job("ping", every=3600, delivery={"mode": "webhook", "url": url})


async def test_a_loopback_webhook_is_refused_by_default(state: Path):
    async with Client(cron(state)) as client:
        refused = await error_of(client, "cron_add", job=webhook_job(HOOK))
    assert "127.0.0.1 is a loopback address" in refused and "--allow-outbound" in refused


async def test_the_flag_or_the_variable_a_host_passes_allows_it(state: Path, tmp_path: Path):
    async with Client(cron(state, "--allow-outbound", "127.0.0.1:8090")) as client:
        assert (await call(client, "cron_add", job=webhook_job(HOOK)))["delivery"]["url"] == HOOK
    async with Client(cron(tmp_path / "other", env={"HERMITCRAB_OUTBOUND_ALLOW": "127.0.0.1"})) as client:
        assert (await call(client, "cron_add", job=webhook_job(HOOK)))["delivery"]["url"] == HOOK
