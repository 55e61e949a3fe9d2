"""Cost: how much of each request a provider's prompt cache could serve, and what a session costs with and without it.

Replays a scripted session (50 turns, two in three with tool calls on a real MCP server, `/compact` once half-way)
through the real gateway, agent and provider, for each wire format (OpenAI-compatible and Anthropic), against the
scripted server, which measures for each request the longest prefix it shares with an earlier one
(`tests/support/fake_llm.py`, `Prompt`). The agent's clock moves 37 s a turn, so turns cross minute boundaries.

Reported per wire format: the cacheable share of input after the first turn (the compaction's own summary call left
out: it is a prompt of its own), and the session's cost at a real model's prices (genai-prices' bundled table:
gpt-5 for the OpenAI format, claude-sonnet-4-5 for Anthropic's), without a cache and with one. `--baseline COMMIT`
replays the same session on that commit's code (a `git worktree`, imported in a subprocess) side by side.

Estimates: tokens are characters / 4 (the host's own estimate) of the serialized prompt. OpenAI serves a cached
prefix from 1,024 tokens on, in steps of 128; Anthropic from 1,024 tokens, only for requests that mark breakpoints
(`cache_control`; code before issue 30 marked none, so it paid the uncached price), and bills what it did not serve
as a cache write (an upper bound: it writes only at breakpoints). 60 output tokens a call, priced the same in both
columns.

Run: .venv/bin/python bench/cost.py [--turns 50] [--baseline COMMIT]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

_VOCABULARY = "the a plan check deploy review notes meeting later budget report draft server team week idea fix"
WORDS = _VOCABULARY.split()
PRICED = {"openai": ("openai", "gpt-5"), "anthropic": ("anthropic", "claude-sonnet-4-5")}
CHARS_PER_TOKEN = 4
TURN_S = 37


def words(rng: random.Random, count: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(count))


def text_reply(kind: str, text: str) -> dict[str, Any]:
    from tests.support.fake_llm import anthropic_text, openai_text

    return openai_text(text) if kind == "openai" else anthropic_text(text)


def tool_reply(kind: str, calls: list[tuple[str, str, dict[str, Any]]]) -> dict[str, Any]:
    from tests.support.fake_llm import openai_tool_calls

    if kind == "openai":
        return openai_tool_calls(*((cid, name, json.dumps(args)) for cid, name, args in calls))
    blocks = [{"type": "tool_use", "id": cid, "name": name, "input": args} for cid, name, args in calls]
    return {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "fake-claude",
        "content": [{"type": "text", "text": "Let me look."}, *blocks],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 30, "output_tokens": 9},
    }


def workspace(home: Path, rng: random.Random) -> None:
    """Persona files of a lived-in home (about 30,000 characters)."""
    folder = home / "workspace"
    folder.mkdir(parents=True)
    for name, size in (("AGENTS.md", 1200), ("SOUL.md", 500), ("TOOLS.md", 700), ("USER.md", 400), ("MEMORY.md", 1600)):
        lines = (f"- {words(rng, 9)}" for _ in range(size // 9))
        (folder / name).write_text(f"# {name}\n" + "\n".join(lines) + "\n")


async def replay(kind: str, turns: int) -> list[dict[str, Any]]:
    """The session's requests as the scripted server measured them, each with its turn and whether it was the
    compaction's summary call."""
    import httpx

    from hermitcrab.host.config import AgentSettings, ProviderProfile, ServerConfig, Settings
    from hermitcrab.host.events import OWNER, Event, Target
    from hermitcrab.host.gateway.gateway import Gateway
    from hermitcrab.host.mcp.pool import McpPool
    from hermitcrab.host.providers import create
    from hermitcrab.host.session.transcript import SessionStore
    from hermitcrab.host.turn.agent import Agent
    from tests.support.channels import RecordingChannel
    from tests.support.fake_llm import running_fake_llm

    rng = random.Random(30)
    compact_at = turns // 2
    now = [dt.datetime(2026, 3, 2, 9, 0, 10, tzinfo=dt.UTC)]
    kit = ServerConfig("kit", command=sys.executable, args=(str(ROOT / "tests" / "support" / "mcp_test_server.py"),))
    measured: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp, running_fake_llm() as llm:
        home = Path(tmp)
        workspace(home, rng)
        agent_settings = AgentSettings(timezone="UTC", memory_flush=False)
        settings = Settings(home=home, providers=(), servers=(kit,), agent=agent_settings)
        base_url = llm.url if kind == "openai" else llm.url.removesuffix("/v1")
        async with httpx.AsyncClient() as client, McpPool(settings.servers) as pool:
            agent = Agent(
                settings, create(ProviderProfile(kind, "m", base_url), client), pool, SessionStore(home / "sessions")
            )
            agent.clock = lambda: now[0]
            gateway = Gateway(agent, {"test": RecordingChannel()}, ask_timeout_s=1)
            for turn in range(turns):
                if turn == compact_at:
                    llm.enqueue(text_reply(kind, "Summary: " + words(rng, 150)))
                    await gateway.process(Event("message", "/compact", Target("test", "room"), principal=OWNER))
                    measured += _measured(llm, turn, len(measured), compaction=True)
                calls = turn % 3
                for step in range(calls):
                    call = ("big", {"size": rng.randrange(1500, 4000)}) if step == 0 else ("echo", {"text": "ok"})
                    llm.enqueue(tool_reply(kind, [(f"c{turn}-{step}", call[0], call[1])]))
                llm.enqueue(text_reply(kind, words(rng, rng.randrange(30, 120))))
                text = words(rng, rng.randrange(8, 60))
                await gateway.process(Event("message", text, Target("test", "room"), principal=OWNER))
                measured += _measured(llm, turn, len(measured), compaction=False)
                now[0] += dt.timedelta(seconds=TURN_S)
    return measured


def _measured(llm: Any, turn: int, seen: int, *, compaction: bool) -> list[dict[str, Any]]:
    """The requests since the first `seen`: sizes, and whether they mark cache breakpoints (Anthropic caches only
    then)."""
    return [
        {
            "turn": turn,
            "compaction": compaction,
            "chars": len(prompt.text),
            "shared": prompt.shared,
            "marked": "cache_control" in json.dumps(request),
        }
        for prompt, request in zip(llm.prompts[seen:], llm.requests[seen:], strict=True)
    ]


@dataclass
class Result:
    share: float
    requests: int
    input_tokens: int
    cost_uncached: Decimal
    cost_cached: Decimal


def cached_tokens(kind: str, shared_tokens: int, marked: bool) -> int:
    if shared_tokens < 1024 or (kind == "anthropic" and not marked):
        return 0
    return shared_tokens if kind == "anthropic" else 1024 + (shared_tokens - 1024) // 128 * 128


def summarise(kind: str, measured: list[dict[str, Any]], output_tokens: int = 60) -> Result:
    from genai_prices import Usage, calc_price

    provider, model = PRICED[kind]
    counted = [m for m in measured if m["turn"] > 0 and not m["compaction"]]

    def price(usage: Usage) -> Decimal:
        return calc_price(usage, model_ref=model, provider_id=provider).total_price

    uncached = cached = Decimal(0)
    for m in measured:
        tokens, shared = m["chars"] // CHARS_PER_TOKEN, m["shared"] // CHARS_PER_TOKEN
        read = cached_tokens(kind, shared, m["marked"])
        written = tokens - read if kind == "anthropic" and m["marked"] else 0
        uncached += price(Usage(input_tokens=tokens, output_tokens=output_tokens))
        cached += price(
            Usage(input_tokens=tokens, cache_read_tokens=read, cache_write_tokens=written, output_tokens=output_tokens)
        )
    share = sum(m["shared"] for m in counted) / max(1, sum(m["chars"] for m in counted))
    return Result(share, len(measured), sum(m["chars"] for m in measured) // CHARS_PER_TOKEN, uncached, cached)


def run_replay(kind: str, turns: int, package: Path | None) -> list[dict[str, Any]]:
    """The replay in a subprocess importing `hermitcrab` from `package` (a tree of the code), or this tree's."""
    env = dict(os.environ)
    if package is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(package), env.get("PYTHONPATH", "")])
    command = [sys.executable, __file__, "--replay", kind, "--turns", str(turns)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"the replay ({kind}) failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def baseline_package(commit: str, where: Path) -> Path:
    """A worktree of `commit`, and a folder where `hermitcrab` is it (the repository is the package's root)."""
    tree = where / "tree"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), commit], check=True)
    package = where / "package"
    package.mkdir()
    (package / "hermitcrab").symlink_to(tree)
    return package


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--baseline", metavar="COMMIT", help="replay on this commit's code too, side by side")
    parser.add_argument("--replay", choices=sorted(PRICED), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.replay:
        import anyio

        print(json.dumps(anyio.run(replay, args.replay, args.turns)))
        return
    codes: dict[str, Path | None] = {"this tree": None}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            if args.baseline:
                codes[f"baseline {args.baseline}"] = baseline_package(args.baseline, Path(tmp))
            rows = [
                (name, kind, summarise(kind, run_replay(kind, args.turns, package)))
                for name, package in codes.items()
                for kind in PRICED
            ]
        finally:
            if args.baseline:
                subprocess.run(
                    ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(Path(tmp) / "tree")], check=False
                )
    print(f"{args.turns} turns; cacheable share of input after the first turn, outside the compaction call")
    head = ("code", "wire / priced as", "requests", "input tok", "share", "no cache $", "cached $")
    print(f"{head[0]:<24} {head[1]:<40} {head[2]:>8} {head[3]:>10} {head[4]:>7} {head[5]:>11} {head[6]:>9}")
    for name, kind, result in rows:
        priced = f"{kind} / {'/'.join(PRICED[kind])}"
        print(
            f"{name:<24} {priced:<40} {result.requests:>8} {result.input_tokens:>10,} {result.share:>7.1%} "
            f"{result.cost_uncached:>11.4f} {result.cost_cached:>9.4f}"
        )


if __name__ == "__main__":
    main()
