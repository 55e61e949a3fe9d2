"""How fast hermitcrab-memory indexes a LongMemEval haystack (~490 KB of chat logs), how fast it then answers and
how much memory it holds, over stdio MCP, beside baselines in the same run.

    .venv/bin/python bench/memory_index.py --limit 5
    .venv/bin/python bench/memory_index.py --baseline HEAD~3     # also an earlier commit's code (a git worktree)

Systems: `ours` (the defaults), `e5` (`--embedder e5`), `bm25` (`--embedder none`: the floor, no vectors) and,
with `--baseline REV`, `REV` (the defaults of that commit's code, run from a worktree in /tmp on this venv's
packages).
Per haystack (one LongMemEval question's sessions written as daily logs, `_memory_longmemeval.build_workspace`):
the first full sync (`memory_status.last_sync_seconds` after the first search, and where it went when the server
reports it: reading, BM25, the rest; vectors come after it, in the background), the seconds from starting the
server to the first search's answer (by BM25 while vectors are still missing) and to every vector embedded
(`memory_status.vectors.pending` 0), the server's CPU seconds from its start to then (imports included; the load
of the machine changes them much less than wall time), search latency at the client once the vectors are in (the
question and the other questions, 20 searches), and RSS of the server process: after the first index (the
embedder loaded), then on a restart over
the indexed state (idle), after one search there (the embedder loaded again for the query), and once the embedder
has been dropped (`--embedder-idle-s 5`). Timings depend on the load of the machine, printed with them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).parent))

import _memory_longmemeval as longmemeval
from _memory_bench import all_embedded, percentile

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("channels", "host", "install", "servers", "util", "workspace")  # those a revision has
SYSTEMS = {"ours": [], "e5": ["--embedder", "e5"], "bm25": ["--embedder", "none"]}
SEARCHES = 20
IDLE_S = 5.0


@dataclass
class Tally:
    """One system's measurements over every haystack."""

    kilobytes: list[float] = field(default_factory=list[float])
    seconds: list[float] = field(default_factory=list[float])
    first_answer: list[float] = field(default_factory=list[float])
    all_vectors: list[float] = field(default_factory=list[float])
    cpu: list[float] = field(default_factory=list[float])
    phases: dict[str, list[float]] = field(default_factory=dict[str, list[float]])
    latencies: list[float] = field(default_factory=list[float])
    rss: dict[str, list[float]] = field(default_factory=dict[str, list[float]])

    def index_row(self, name: str) -> str:
        rate = sum(self.kilobytes) / max(sum(self.seconds), 1e-9)
        phases = ", ".join(f"{phase} {statistics.median(s):.2f}" for phase, s in self.phases.items()) or "-"
        lat = self.latencies
        return (
            f"| {name} | {statistics.median(self.seconds):.2f} | {max(self.seconds):.2f} | {rate:.0f} "
            f"| {statistics.median(self.first_answer):.2f} | {statistics.median(self.all_vectors):.2f} "
            f"| {statistics.median(self.cpu):.1f} | {phases} "
            f"| {statistics.median(lat) * 1000:.1f} | {percentile(lat, 0.99) * 1000:.1f} |"
        )

    def rss_row(self, name: str) -> str:
        cells = [f"{statistics.median(v):.0f} / {max(v):.0f}" if v else "-" for v in self.rss.values()]
        return f"| {name} | " + " | ".join(cells) + " |"


RSS_POINTS = ("after first index", "restarted, idle", "after a search", "embedder dropped")


def server_pid() -> int:
    """The memory server this process started (one at a time)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            command = (entry / "cmdline").read_text()
        except (OSError, IndexError):
            continue
        if parent == os.getpid() and "hermitcrab.servers.memory" in command:
            return int(entry.name)
    raise RuntimeError("the memory server process was not found")


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far: unlike wall time, hardly changed by the load of the machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@asynccontextmanager
async def serve(flags: list[str], workspace: Path, state: Path, code: Path | None) -> AsyncIterator[Client]:
    """`hermitcrab-memory` over stdio, from this checkout or (with `code`) from the packages linked there."""
    env = {**os.environ, "PYTHONPATH": str(code)} if code else None
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hermitcrab.servers.memory", "--workspace", str(workspace), "--state", str(state), *flags],
        env=env,
    )
    async with Client(params) as client:
        yield client


async def status(client: Client) -> dict[str, Any]:
    return (await client.call_tool("memory_status", {})).structured_content or {}


async def measure(
    flags: list[str], item: dict[str, Any], queries: list[str], root: Path, code: Path | None, tally: Tally
) -> None:
    """Index one haystack from scratch, time searches, then restart over the index to see what it holds idle."""
    workspace, state = root / "workspace", root / "state"
    question = longmemeval.build_workspace(item, workspace)
    size = sum(path.stat().st_size for path in (workspace / "memory").glob("*.md")) / 1000
    rss = {point: 0.0 for point in RSS_POINTS}
    began = time.perf_counter()
    async with serve(flags, workspace, state, code) as client:
        await client.call_tool("memory_search", {"query": question.text})  # waits for the first sync (BM25)
        tally.first_answer.append(time.perf_counter() - began)
        done = await all_embedded(client)
        tally.all_vectors.append(time.perf_counter() - began)
        pid = server_pid()
        tally.cpu.append(cpu_seconds(pid))
        rss["after first index"] = rss_mb(pid)
        for query in [question.text, *queries][:SEARCHES]:
            began = time.perf_counter()
            await client.call_tool("memory_search", {"query": query})
            tally.latencies.append(time.perf_counter() - began)
    tally.kilobytes.append(size)
    tally.seconds.append(float(done["last_sync_seconds"]))
    for phase, seconds in (done.get("last_sync_phases") or {}).items():
        tally.phases.setdefault(phase, []).append(seconds)
    async with serve([*flags, "--embedder-idle-s", str(IDLE_S)], workspace, state, code) as client:
        while (await status(client)).get("last_sync") is None:
            await anyio.sleep(0.05)
        rss["restarted, idle"] = rss_mb(server_pid())
        await client.call_tool("memory_search", {"query": question.text})
        rss["after a search"] = rss_mb(server_pid())
        await anyio.sleep(IDLE_S + 1.5)
        rss["embedder dropped"] = rss_mb(server_pid())
    for point, value in rss.items():
        tally.rss.setdefault(point, []).append(value)


@contextmanager
def checkout(rev: str, root: Path) -> Iterator[Path]:
    """A worktree of `rev` and a folder whose `hermitcrab` package is that worktree's code (for PYTHONPATH)."""
    tree = root / "tree"
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", "-q", str(tree), rev], check=True)
    try:
        package = root / "path" / "hermitcrab"
        package.mkdir(parents=True)
        for name in PACKAGES:
            if (tree / name).is_dir():
                (package / name).symlink_to(tree / name)
        yield root / "path"
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, help="only the first N haystacks (default: all 40)")
    parser.add_argument("--systems", default="ours,bm25", help=f"comma-separated, of: {', '.join(SYSTEMS)}")
    parser.add_argument("--baseline", metavar="REV", help="also run the defaults of this commit's code")
    args = parser.parse_args()
    items = longmemeval.load()[: args.limit]
    questions = [item["question"] for item in items]
    systems = {name: (SYSTEMS[name], None) for name in args.systems.split(",")}
    with tempfile.TemporaryDirectory(prefix="memory-index-") as tmp, ExitStack() as stack:
        if args.baseline:
            systems[args.baseline] = ([], stack.enter_context(checkout(args.baseline, Path(tmp) / "baseline")))
        tallies = {name: Tally() for name in systems}
        for number, item in enumerate(items):
            others = questions[number + 1 :] + questions[:number]
            for name, (flags, path) in systems.items():
                root = Path(tmp) / f"{number}-{name.replace('/', '_')}"
                anyio.run(measure, flags, item, others, root, path, tallies[name])
                print(
                    f"haystack {number + 1}/{len(items)} {name}: sync {tallies[name].seconds[-1]:.2f} s, "
                    f"first answer {tallies[name].first_answer[-1]:.2f} s, "
                    f"all vectors {tallies[name].all_vectors[-1]:.2f} s, "
                    f"RSS {' / '.join(f'{v[-1]:.0f}' for v in tallies[name].rss.values())} MB",
                    file=sys.stderr,
                )
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"\nLongMemEval haystacks: {len(items)}, {os.cpu_count()} cores, load average {' '.join(load)}\n")
    print(
        "| system | first sync s (median) | max | KB/s | first answer s | all vectors s | CPU s "
        "| median s by phase | search p50 ms | p99 ms |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, tally in tallies.items():
        print(tally.index_row(name))
    print("\nRSS of the server, MB (median / max over haystacks)\n")
    print("| system | " + " | ".join(RSS_POINTS) + " |")
    print("|---|" + "---|" * len(RSS_POINTS))
    for name, tally in tallies.items():
        print(tally.rss_row(name))


if __name__ == "__main__":
    main()
