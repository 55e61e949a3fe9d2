"""Running the official MCP conformance suite (`@modelcontextprotocol/conformance`, installed with the Node 22 it
needs by scripts/test) and judging its results against the checked-in expected failures
(tests/conformance_expected.toml).

Each run writes one `checks.json` per scenario; a check whose status is FAILURE is a failure (WARNING is a SHOULD
the suite reports without failing). A failure is keyed by leg (server or client), target (one of our servers, or
`pool`), revision (the requirement set it ran under, or `extra`), scenario and check id.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process

from .fake_llm import free_port

ROOT = Path(__file__).parents[2]
NPM = ROOT / ".cache" / "npm" / "node_modules"
NODE = NPM / ".bin" / "node"
SUITE = NPM / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
EXPECTED = ROOT / "tests" / "conformance_expected.toml"
LAUNCH = Path(__file__).parent / "conformance_launch.py"
REVISIONS = ("2025-11-25", "2026-07-28")
"""The requirement sets each leg runs under, each at its own wire (initialize handshake, then stateless)."""
EXTRA = {
    "server": (),
    "client": ("auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback"),
}
"""Scenarios in neither requirement set that apply to us, run one by one: the 2025-03-26 auth back-compat. The
skills-over-MCP extension's (sep-2640-*) are left out: neither our servers nor the pool take part in it."""
_STAMP = re.compile(r"-\d{4}-\d\d-\d\dT[\d-]+Z$")


def suite_command(leg: str, target: str, selection: str, out: Path) -> list[str]:
    """The suite's command line for one run: `target` is a server's URL (server leg) or the client command;
    `selection` a requirement set's revision or one scenario's name."""
    chosen = ["--requirements", selection] if selection in REVISIONS else ["--scenario", selection]
    aimed = ["--url", target] if leg == "server" else ["--command", target, "--timeout", "30000"]
    return [str(NODE), str(SUITE), leg, *aimed, *chosen, "-o", str(out)]


def launch_command() -> str:
    """The client command the suite runs per scenario: the standard-library launcher, quick to start."""
    return f"{sys.executable} -I -S {LAUNCH}"


@dataclass(frozen=True)
class Check:
    leg: str
    target: str
    revision: str
    scenario: str
    check: str


@dataclass
class Results:
    """What one leg and target's runs found: every scenario that ran, and each failing check with its message."""

    ran: set[tuple[str, str, str, str]] = field(default_factory=set[tuple[str, str, str, str]])
    failed: dict[Check, str] = field(default_factory=dict[Check, str])

    def read(self, leg: str, target: str, revision: str, out: Path) -> None:
        """Take in the `checks.json` files a run wrote under `out`."""
        for checks in out.rglob("checks.json"):
            folder = checks.parent.relative_to(out)
            scenario = _STAMP.sub("", str(folder)).removeprefix("server-")
            self.ran.add((leg, target, revision, scenario))
            for check in json.loads(checks.read_text()):
                if check.get("status") == "FAILURE":
                    key = Check(leg, target, revision, scenario, str(check["id"]))
                    self.failed[key] = str(check.get("errorMessage") or check.get("description") or "")


@dataclass(frozen=True)
class Expected:
    """One entry of tests/conformance_expected.toml: a scenario, or one of its checks (`scenario:check-id`), that
    fails on the given targets (default: all) and revisions (default: all), and why. A `timed` check measures
    wall-clock delays, which a loaded machine can miss: it may fail, and is not stale when it passes."""

    leg: str
    check: str
    reason: str
    targets: tuple[str, ...] = ()
    revisions: tuple[str, ...] = ()
    timed: bool = False

    def covers(self, failure: Check) -> bool:
        scenario, _, check = self.check.partition(":")
        return (
            failure.leg == self.leg
            and failure.scenario == scenario
            and (not check or failure.check == check)
            and (not self.targets or failure.target in self.targets)
            and (not self.revisions or failure.revision in self.revisions)
        )

    def scope(self, ran: set[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str]]:
        """The runs of its scenario this entry speaks for: each must fail as it says, or the entry is stale."""
        scenario = self.check.partition(":")[0]
        return sorted(
            run
            for run in ran
            if run[0] == self.leg
            and run[3] == scenario
            and (not self.targets or run[1] in self.targets)
            and (not self.revisions or run[2] in self.revisions)
        )


def load_expected(path: Path = EXPECTED) -> list[Expected]:
    table: dict[str, Any] = tomllib.loads(path.read_text())
    return [
        Expected(
            leg,
            entry["check"],
            entry["reason"],
            tuple(entry.get("targets", ())),
            tuple(entry.get("revisions", ())),
            bool(entry.get("timed", False)),
        )
        for leg in ("server", "client")
        for entry in table.get(leg, [])
    ]


def judge(results: Results, expected: list[Expected]) -> list[str]:
    """Every failure no entry explains, and every entry (per run it covers) that no failure bears out."""
    problems = [
        f"unexpected failure: {c.leg} {c.target} [{c.revision}] {c.scenario}:{c.check}: {message}"
        for c, message in sorted(results.failed.items(), key=lambda item: str(item[0]))
        if not any(entry.covers(c) for entry in expected)
    ]
    for entry in (entry for entry in expected if not entry.timed):
        for leg, target, revision, scenario in entry.scope(results.ran):
            if not any(
                entry.covers(c)
                for c in results.failed
                if (c.target, c.revision, c.scenario) == (target, revision, scenario)
            ):
                problems.append(
                    f"now passes, remove it from {EXPECTED.name}: {leg} {target} [{revision}] {entry.check}"
                )
    return problems


SERVERS = ("memory", "exec", "browser", "cron", "spawn")


def server_command(name: str, root: Path, port: int) -> list[str]:
    """One of our servers over streamable HTTP on 127.0.0.1:`port`, its files under `root`."""
    workspace, state = root / name / "workspace", str(root / name / "state")
    (workspace / "memory").mkdir(parents=True, exist_ok=True)
    flags = {
        "memory": ["--workspace", str(workspace), "--state", state, "--embedder", "none"],
        "exec": ["--root", str(workspace), "--state", state],
        "browser": ["--isolated", "--state", state],
        "cron": ["--state", state],
        "spawn": ["--state", state],
    }[name]
    return [sys.executable, "-m", f"hermitcrab.servers.{name}", *flags, "--http", f"127.0.0.1:{port}"]


@asynccontextmanager
async def our_servers(root: Path) -> AsyncIterator[dict[str, str]]:
    """All five servers over streamable HTTP, started at once (each takes seconds): their MCP URLs by name."""
    ports = {name: free_port() for name in SERVERS}
    started: list[Process] = []
    try:
        for name, port in ports.items():
            command = server_command(name, root, port)
            started.append(await anyio.open_process(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with anyio.fail_after(60):
            for process, port in zip(started, ports.values(), strict=True):
                await _listening(process, port)
        yield {name: f"http://127.0.0.1:{port}/mcp" for name, port in ports.items()}
    finally:
        for process in started:
            process.terminate()
        with anyio.move_on_after(15, shield=True):
            for process in started:
                await process.wait()


async def _listening(process: Process, port: int) -> None:
    while True:
        try:
            await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
            return
        except OSError:
            assert process.returncode is None, f"{process} exited with {process.returncode}"
            await anyio.sleep(0.05)
