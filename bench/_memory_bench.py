"""What the memory benchmarks share: the systems compared, a server over stdio MCP (its vectors optionally seeded from
a cache), and the tally of a run."""

from __future__ import annotations

import shutil
import statistics
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

from hermitcrab.util.server_options import MEMORY

SPLITS = ("train", "validation", "all")  # of the development data: fitted on, chosen on and reported, or both
SYSTEMS = {
    "ours": [],
    "ours-bm25": ["--embedder", "none"],  # our ranking without vectors
    "bm25": ["--embedder", "none", "--search", "text"],
    "vector": ["--search", "vector"],
    "ours-e5": ["--embedder", "e5"],  # not in the default runs: the slower embedder, with its own model
}


def percentile(values: list[float], share: float) -> float:
    """The value `share` of the way up the sorted `values` (0.5: the median's upper neighbour, 0.99: p99)."""
    ordered = sorted(values)
    return ordered[min(int(share * len(ordered)), len(ordered) - 1)]


@dataclass
class Tally:
    """Per-system totals over every question of a run."""

    questions: int = 0
    hit6: int = 0
    all6: int = 0
    chars6: int = 0
    hit10: int | None = None  # only when a benchmark asks a second time for 10 results
    latencies: list[float] = field(default_factory=list[float])
    index_seconds: list[float] = field(default_factory=list[float])  # a server's first sync (BM25), or a whole build
    vector_seconds: list[float] = field(default_factory=list[float])  # a server's background embedding after it
    rss_mb: list[float] = field(default_factory=list[float])  # a server's once it has answered (embedder loaded)
    by_kind: dict[str, list[bool]] = field(default_factory=dict[str, list[bool]])

    def add(self, kind: str, top6: list[str], hit6: bool, all6: bool, hit10: bool | None = None) -> None:
        """Count one question from its 6-result search (and whether a 10-result one hit)."""
        self.questions += 1
        self.hit6 += hit6
        self.all6 += all6
        self.chars6 += sum(len(snippet) for snippet in top6[:6])
        if hit10 is not None:
            self.hit10 = (self.hit10 or 0) + hit10
        self.by_kind.setdefault(kind, []).append(hit6)

    def row(self, name: str, over: str, with_hit10: bool) -> str:
        """A Markdown table row under `table`'s columns."""
        n = max(self.questions, 1)
        lat = self.latencies
        p50 = f"{statistics.median(lat) * 1000:.1f}" if lat else "-"
        p99 = f"{percentile(lat, 0.99) * 1000:.1f}" if lat else "-"
        hit10 = f" {(self.hit10 or 0) / n:.3f} |" if with_hit10 else ""
        rss = f"{statistics.median(self.rss_mb):.0f}" if self.rss_mb else "-"
        return (
            f"| {name} | {self.hit6 / n:.3f} |{hit10} {self.all6 / n:.3f} | {self.chars6 / n:.0f} "
            f"| {_mean_max(self.index_seconds)} | {_mean_max(self.vector_seconds)} | {p50} | {p99} | {rss} | {over} |"
        )

    def kinds(self) -> str:
        """hit@6 per question kind, e.g. `temporal: 0.96 (156)`."""
        return ", ".join(f"{kind}: {sum(v) / len(v):.2f} ({len(v)})" for kind, v in sorted(self.by_kind.items()))


def _mean_max(seconds: list[float]) -> str:
    return f"{statistics.mean(seconds):.2f} / {max(seconds):.2f}" if seconds else "-"


def table(tallies: dict[str, Tally], in_process: str) -> str:
    """The systems' rows as a Markdown table; the one named `in_process` ran without MCP (its whole index build is
    under "sync s", and it has no server to measure RSS of). RSS is that of a server that has just answered, with
    its embedder loaded: bench/memory_index.py measures it idle, once the embedder is dropped."""
    with_hit10 = any(tally.hit10 is not None for tally in tallies.values())
    hit10 = " hit@10 |" if with_hit10 else ""
    columns = (
        f"| system | hit@6 |{hit10} all-evidence@6 | chars@6 | sync s (mean / max) | then vectors s (mean / max) "
        "| p50 ms | p99 ms | RSS MB after (median) | via |"
    )
    rows = [
        tally.row(name, "in-process" if name == in_process else "stdio MCP", with_hit10)
        for name, tally in tallies.items()
    ]
    return "\n".join([columns, "|" + "---|" * (columns.count("|") - 1), *rows])


def progress(message: str) -> None:
    """A line on stderr while a benchmark runs (the tables go to stdout)."""
    print(message, file=sys.stderr)


def embedder_of(flags: list[str]) -> str:
    """The embedder of a server started with `flags`: its `--embedder`, else the server's default."""
    return flags[flags.index("--embedder") + 1] if "--embedder" in flags else MEMORY.option("embedder").default


def seed_vectors(cached: Path, flags: list[str], state: Path) -> None:
    """Copy into `state` the vectors of a server with `flags` kept under `cached` (a workspace's folder in the cache
    that `_memory_misses.py` builds: `cached/state-EMBEDDER/vectors`), if there are any, so that it embeds only
    what they lack: the same vectors, without the minutes of embedding a whole validation split."""
    vectors = cached / f"state-{embedder_of(flags)}" / "vectors"
    if vectors.is_dir():
        shutil.copytree(vectors, state / "vectors")


@asynccontextmanager
async def serve(flags: list[str], workspace: Path, state: Path, tally: Tally) -> AsyncIterator[Client]:
    """A `hermitcrab-memory` over stdio with its first sync done and every vector in (the seconds of each added to
    `tally`: the sync's own, then the wall time until `all_embedded`)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hermitcrab.servers.memory", "--workspace", str(workspace), "--state", str(state), *flags],
    )
    async with Client(params) as client:
        await client.call_tool("memory_search", {"query": "warm up"})  # waits for the first sync (BM25)
        began = time.perf_counter()
        status = await all_embedded(client)
        tally.index_seconds.append(float(status.get("last_sync_seconds", 0.0)))
        if status.get("vectors") is not None:
            tally.vector_seconds.append(time.perf_counter() - began)
        yield client


async def all_embedded(client: Client) -> dict[str, Any]:
    """`memory_status` once every vector is in: the server embeds in the background, and a question asked before
    then would be ranked by BM25 alone (an earlier revision's server, without `vectors`, is done at once). A round
    of embedding that failed is not retried until the next search, so it ends the wait with its error."""
    while True:
        status = (await client.call_tool("memory_status", {})).structured_content or {}
        vectors = status.get("vectors") or {}
        if not (vectors.get("pending") or vectors.get("embedding")):
            return status
        if vectors.get("error") and not vectors.get("embedding"):
            raise RuntimeError(f"the memory server's embedding failed: {vectors['error']}")
        await anyio.sleep(0.05)


async def search(client: Client, query: str, k: int) -> list[str]:
    """The snippets of `memory_search` asked for `k` results, as a model would see them."""
    result = await client.call_tool("memory_search", {"query": query, "max_results": k})
    results: list[dict[str, Any]] = (result.structured_content or {}).get("results", [])
    return [item["snippet"] for item in results]
