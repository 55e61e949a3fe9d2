"""What does the exec server cost over running a command directly, and what does the policy check cost?

Run: .venv/bin/python bench/exec.py [--runs 200] [--json]

1. `exec {"command": "true"}` round trip over MCP (in-process client, and a real stdio subprocess), unsandboxed
   and (when bubblewrap works here) sandboxed, against `subprocess.run(["true"])` and
   `subprocess.run(["bash", "-c", "true"])` run directly: p50/p99 in ms and the ratio of p50s; sandboxed also in
   a hermitcrab workspace holding 10 git repositories, whose protected files the sandbox binds read-only.
2. The policy check (bashlex parse + binary resolution + rules) on a ~2,000-character pipeline of allowed
   commands: p50/p99 in ms.
3. Undo's walks on a workspace of 5,000 files (in-process, no sandbox): `exec true` and `exec` changing one file,
   undo on and off, and the first call, which saves a copy of every file.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from hermitcrab.servers.exec import Policy, build_server
from hermitcrab.servers.exec.changes import UndoLimits
from hermitcrab.servers.exec.policy import Checker
from hermitcrab.servers.exec.sandbox import probe


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 3),
    }


def time_sync(fn: Callable[[], object], runs: int) -> list[float]:
    fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


async def time_async(fn: Callable[[], Awaitable[object]], runs: int) -> list[float]:
    await fn()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - start)
    return samples


async def mcp_round_trip(client: Client, runs: int, command: str = "true") -> list[float]:
    async def call() -> None:
        result = await client.call_tool("exec", {"command": command})
        assert not result.is_error, result.content

    return await time_async(call, runs)


async def bench_mcp(root: Path, state: Path, runs: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    modes = ["none"] + (["bwrap"] if probe() is None else [])
    for mode in modes:
        server = build_server(roots=[root], state=state, policy=Policy(), sandbox=mode)  # type: ignore[arg-type]
        async with Client(server) as client:
            out[f"in-process, sandbox={mode}"] = stats(await mcp_round_trip(client, runs))
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "hermitcrab.servers.exec", "--root", str(root), "--state", str(state), "--sandbox", mode],
        )
        async with Client(params) as client:
            out[f"stdio, sandbox={mode}"] = stats(await mcp_round_trip(client, runs))
    if "bwrap" in modes:
        workspace = state.parent / "protected-ws"
        plant_workspace(workspace)
        server = build_server(roots=[workspace], state=state.parent / "protected-state", sandbox="bwrap")
        async with Client(server) as client:
            out["in-process, sandbox=bwrap, workspace + 10 repos"] = stats(await mcp_round_trip(client, runs))
    return out


def plant_workspace(root: Path, repositories: int = 10) -> None:
    """Persona files, memory/ and `repositories` git repositories: about 60 read-only binds and pins."""
    (root / "memory").mkdir(parents=True)
    for name in ("AGENTS.md", "SOUL.md", "TOOLS.md", "IDENTITY.md", "USER.md", "HEARTBEAT.md", "MEMORY.md"):
        (root / name).write_text(f"# {name}\n")
    for number in range(repositories):
        subprocess.run(["git", "init", "-q", str(root / "projects" / f"repo{number}")], check=True)


def plant(root: Path, folders: int = 50, files: int = 100) -> None:
    """`folders` x `files` files of about 1 KB: a middling project's source tree."""
    for folder in range(folders):
        (root / f"pkg{folder}").mkdir()
        for file in range(files):
            (root / f"pkg{folder}" / f"mod{file}.py").write_text(f"# {folder}/{file}\n" + "x = 1\n" * 170)


async def bench_undo(base: Path, runs: int) -> dict[str, Any]:
    root = base / "undo-ws"
    root.mkdir()
    plant(root)
    out: dict[str, Any] = {}
    for label, limits in (("undo off", UndoLimits(keep=0)), ("undo on", UndoLimits())):
        state = base / f"undo-state-{label.split()[1]}"
        server = build_server(roots=[root], state=state, policy=Policy(security="full"), sandbox="none", undo=limits)
        async with Client(server) as client:
            start = time.perf_counter()
            await client.call_tool("exec", {"command": "true"})
            out[f"first call, {label}"] = {"ms": round((time.perf_counter() - start) * 1000, 1)}
            out[f"exec true, {label}"] = stats(await mcp_round_trip(client, runs))
            changing = await mcp_round_trip(client, runs, "date +%N > pkg0/mod0.py")
            out[f"exec changing a file, {label}"] = stats(changing)
    return out


def pipeline(length: int = 2000) -> str:
    parts = ["cat a.txt", "grep -v '^#'", "sort", "uniq -c", "sort -rn", "head -n 50", "cut -c1-80", "wc -l"]
    line, index = "", 0
    while len(line) < length:
        line += (" | " if line else "") + parts[index % len(parts)]
        index += 1
    return line


def bench_policy(root: Path, runs: int) -> dict[str, Any]:
    checker = Checker(Policy(), [root], search_path=os.environ.get("PATH", "/usr/bin:/bin"), home=str(Path.home()))
    line = pipeline()
    verdict = checker.check(line, root)
    assert verdict.allowed, verdict
    samples = time_sync(lambda: checker.check(line, root), runs)
    return {"chars": len(line), "segments": line.count("|") + 1, **stats(samples)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root, state = Path(tmp) / "ws", Path(tmp) / "state"
        root.mkdir()
        direct = {
            'subprocess.run(["true"])': stats(time_sync(lambda: subprocess.run(["true"], check=True), args.runs)),
            'subprocess.run(["bash", "-c", "true"])': stats(
                time_sync(lambda: subprocess.run(["bash", "-c", "true"], check=True), args.runs)
            ),
        }
        via_mcp = anyio.run(bench_mcp, root, state, args.runs)
        policy = bench_policy(root, args.runs)
        undo = anyio.run(bench_undo, Path(tmp), max(10, args.runs // 4))
    base = direct['subprocess.run(["true"])']["p50_ms"]
    bash = direct['subprocess.run(["bash", "-c", "true"])']["p50_ms"]
    report = {
        "direct": direct,
        "exec over MCP": {
            name: {**s, "ratio_p50": round(s["p50_ms"] / base, 1), "ratio_vs_bash_p50": round(s["p50_ms"] / bash, 1)}
            for name, s in via_mcp.items()
        },
        "policy check, 2000-char pipeline": policy,
        "undo walks, 5,000 files": undo,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for section, rows in report.items():
        print(f"\n{section}")
        if "p50_ms" in rows:
            rows = {"": rows}
        for name, row in rows.items():
            print(f"  {name:45} " + "  ".join(f"{k}={v}" for k, v in row.items()))


if __name__ == "__main__":
    main()
