"""Per-turn overhead: the time from a message reaching the gateway to its model request, with 20 skills, five
persona files of ~20,000 characters and the spawn server connected; side by side with another commit's code.

Before issue 30 every turn re-read the skills' YAML and the persona files and asked spawn for running sub-agents
over MCP; now each is done again only when something changed (SkillShelf, PersonaReader, SubagentWatch).

Run: .venv/bin/python bench/turn_overhead.py [--turns 40] [--baseline COMMIT]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import anyio

from hermitcrab.host.config import AgentSettings, ServerConfig, Settings
from hermitcrab.host.events import OWNER, Event, Target
from hermitcrab.host.gateway.gateway import Gateway
from hermitcrab.host.mcp.pool import McpPool
from hermitcrab.host.providers import Completion, Message, TextSink, ToolSpec, Usage
from hermitcrab.host.session.transcript import SessionStore
from hermitcrab.host.turn.agent import Agent

ROOT = Path(__file__).parents[1]
CHAT = Target("bench", "chat-1", "ada")
SKILLS = 20
PERSONA = ("AGENTS.md", "SOUL.md", "USER.md", "MEMORY.md", "TOOLS.md")


class Stopwatch:
    """A provider that notes when each request arrives and answers at once."""

    label = "stopwatch"

    def __init__(self) -> None:
        self.at: list[float] = []

    async def complete(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], on_delta: TextSink | None = None
    ) -> Completion:
        self.at.append(time.perf_counter())
        return Completion(Message("assistant", "ok"), Usage(100, 10), model="stopwatch", provider=self.label)


def seed(settings: Settings) -> None:
    for i in range(SKILLS):
        folder = settings.workspace / "skills" / f"skill-{i:02d}"
        folder.mkdir(parents=True)
        frontmatter = f"name: skill-{i:02d}\ndescription: Does thing {i} when asked.\nrequires:\n  bins: [sh]\n"
        (folder / "SKILL.md").write_text(f"---\n{frontmatter}---\n" + "A step of the workflow.\n" * 200)
    for name in PERSONA:
        (settings.workspace / name).write_text(f"# {name}\n" + "A line of the persona, as people write them.\n" * 450)


async def measure(turns: int) -> list[float]:
    """Milliseconds from each message to its model request (the first turn, which reads everything, left out)."""
    home = Path(tempfile.mkdtemp(prefix="hermitcrab-overhead-"))
    settings = Settings(home=home, providers=(), servers=(), agent=AgentSettings())
    seed(settings)
    spawn = ServerConfig(
        "spawn", command=sys.executable, args=("-m", "hermitcrab.servers.spawn", "--state", str(home / "spawn"))
    )
    provider = Stopwatch()
    took: list[float] = []
    async with McpPool([spawn]) as pool:
        gateway = Gateway(Agent(settings, provider, pool, SessionStore(home / "sessions")), {}, ask_timeout_s=1)
        for n in range(turns + 1):
            start = time.perf_counter()
            message = Event("message", f"hello {n}", CHAT, session_key="chat-1", principal=OWNER)
            await gateway.process(message, deliver=False)
            if n:
                took.append((provider.at[-1] - start) * 1000)
    return took


def report(label: str, took: list[float]) -> str:
    ordered = sorted(took)
    p90 = ordered[int(len(ordered) * 0.9)]
    return f"{label:>12}: median {statistics.median(ordered):6.1f} ms  p90 {p90:6.1f} ms  over {len(ordered)} turns"


def baseline(commit: str, turns: int) -> None:
    """The same measurement with `commit`'s code (exported, imported ahead of this checkout)."""
    with tempfile.TemporaryDirectory() as folder:
        package = Path(folder) / "hermitcrab"
        package.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(package)], input=archive.stdout, check=True)
        script = package / "bench" / "turn_overhead.py"
        script.write_bytes(Path(__file__).read_bytes())  # this measurement, over the old code
        env = {**os.environ, "PYTHONPATH": folder}
        subprocess.run([sys.executable, str(script), "--turns", str(turns), "--label", commit], check=True, env=env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--baseline", metavar="COMMIT", help="also measure this commit's code")
    parser.add_argument("--label", default="this tree", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline:
        baseline(args.baseline, args.turns)
    print(report(args.label, anyio.run(measure, args.turns)))


if __name__ == "__main__":
    main()
