"""The official MCP conformance suite, run as an outside check: every server scenario against each of our five
servers over streamable HTTP, and every client scenario against the host's pool (tests/support/conformance_client.py),
under both requirement sets (2025-11-25 at the handshake wire, 2026-07-28 stateless) and the scenarios outside them.

Only the failures listed with their reasons in tests/conformance_expected.toml may happen; any other failure fails,
and so does a listed one that now passes (remove it), so the list stays honest.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from tests.support.browser import needs_chromium
from tests.support.conformance_client import serve_scenarios
from tests.support.conformance_runs import (
    EXTRA,
    NODE,
    REVISIONS,
    SUITE,
    Check,
    Expected,
    Results,
    judge,
    launch_command,
    load_expected,
    our_servers,
    suite_command,
)

needs_suite = pytest.mark.skipif(
    not (NODE.exists() and SUITE.exists()), reason="the conformance suite and its Node 22 are installed by scripts/test"
)


@needs_suite
@needs_chromium
@pytest.mark.timeout(300)  # some 20 runs of the suite at once; about a minute on an idle machine
async def test_conformance_suite_fails_only_as_expected(tmp_path: Path):
    socket = str(tmp_path / "runner.sock")
    env = {**os.environ, "HERMITCRAB_CONFORMANCE_SOCKET": socket}
    results = Results()
    missing: list[str] = []
    limit = anyio.CapacityLimiter(6)

    async def suite(leg: str, target: str, aim: str, selection: str) -> None:
        revision = selection if selection in REVISIONS else "extra"
        out = tmp_path / "results" / leg / target / selection.replace("/", "_")
        async with limit:
            began = time.monotonic()
            ran = await anyio.run_process(suite_command(leg, aim, selection, out), check=False, env=env)
            print(f"{leg} {target} {selection}: {time.monotonic() - began:.1f} s")  # shown with -s: where the time goes
        results.read(leg, target, revision, out)
        if not any(out.rglob("checks.json")):
            missing.append(
                f"{leg} {target} {selection}: no results (exit {ran.returncode}): {ran.stderr.decode()[-500:]}"
            )

    async with our_servers(tmp_path) as urls, anyio.create_task_group() as runner:
        await runner.start(serve_scenarios, socket)
        async with anyio.create_task_group() as runs:
            for selection in (*REVISIONS, *EXTRA["server"]):
                for name, url in urls.items():
                    runs.start_soon(suite, "server", name, url, selection)
            for selection in (*REVISIONS, *EXTRA["client"]):
                runs.start_soon(suite, "client", "pool", launch_command(), selection)
        runner.cancel_scope.cancel()

    assert not missing, "\n".join(missing)
    problems = judge(results, load_expected())
    assert not problems, "\n".join(problems)


def test_judging_flags_an_unlisted_failure_and_a_listed_check_that_passes_unless_timed():
    results = Results()
    results.ran |= {("server", "memory", "2026-07-28", "caching"), ("server", "exec", "2026-07-28", "caching")}
    results.ran |= {("server", "memory", "2026-07-28", "ping")}
    results.failed[Check("server", "memory", "2026-07-28", "caching", "ttl")] = "no ttlMs"
    results.failed[Check("server", "exec", "2026-07-28", "caching", "ttl")] = "no ttlMs"
    results.failed[Check("server", "memory", "2026-07-28", "ping", "pong")] = "no pong"
    listed = [Expected("server", "caching:ttl", "why"), Expected("server", "caching:scope", "why", ("exec",))]
    listed.append(Expected("server", "ping:delay", "may be late", timed=True))  # passed: fine for a timed check

    problems = judge(results, listed)

    assert problems == [
        "unexpected failure: server memory [2026-07-28] ping:pong: no pong",
        "now passes, remove it from conformance_expected.toml: server exec [2026-07-28] caching:scope",
    ]
