"""Weeks-long sessions: a scripted 2,000-turn conversation with 300 planted identifiers, through the real loop.

Reports the share of planted identifiers present in the model's context after each compaction (the scripted
summary is deliberately useless, so only the mechanical "Exact identifiers" list can keep them), the number of
compactions, the host's own time per turn without the model (p50/p99) near turn 10 and near the last turn, and the
transcript's size. "Before" is what the previous Session did every turn: read and parse the whole file twice.

Run: .venv/bin/python bench/compaction.py [--turns 2000] [--ids 300] [--window 128000]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from hermitcrab.host.config import AgentSettings  # noqa: E402
from hermitcrab.host.providers import Completion, Message, TextSink, ToolSpec  # noqa: E402
from hermitcrab.host.session.transcript import Session, SessionStore  # noqa: E402
from hermitcrab.host.turn.loop import run_turn  # noqa: E402
from tests.support.scripted_provider import ScriptedProvider  # noqa: E402
from tests.support.toolboxes import Toolbox  # noqa: E402

_VOCABULARY = "the a plan check deploy review notes meeting later budget report draft server team week idea fix"
WORDS = _VOCABULARY.split()
SAMPLES = 40


@dataclass
class Timed(ScriptedProvider):
    """The scripted model, timing itself so the host's share of a turn can be told apart."""

    model_s: float = 0.0
    summaries: int = 0

    async def complete(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        on_delta: TextSink | None = None,
    ) -> Completion:
        start = time.perf_counter()
        self.summaries += not tools
        try:
            return await super().complete(system, messages, tools, on_delta)
        finally:
            self.model_s += time.perf_counter() - start


def planted(rng: random.Random, index: int) -> str:
    kind = index % 6
    if kind == 0:
        return str(uuid.UUID(int=rng.getrandbits(128)))
    if kind == 1:
        return f"/srv/{rng.choice(['app', 'data', 'logs'])}/{rng.getrandbits(24):x}/conf-{index}.yaml"
    if kind == 2:
        return f"https://ci.example.org/builds/{rng.getrandbits(32):x}"
    if kind == 3:
        return f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(256)}:{rng.randrange(1024, 65535)}"
    if kind == 4:
        return f"{rng.getrandbits(160):040x}"
    return f"TICKET-{rng.randrange(10_000, 99_999)}"


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def percentile(samples: list[float], share: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


@dataclass
class Talk:
    """A scripted conversation: each turn a user message, every fifth a tool call, some planting an identifier."""

    rng: random.Random
    provider: Timed
    settings: AgentSettings
    turn: int = 0

    async def step(self, session: Session, ident: str = "") -> float:
        """Run one turn; the host's own time in it (the turn's time less the model's)."""
        rng, turn = self.rng, self.turn
        self.turn += 1
        in_tool = bool(ident) and turn % 5 == 0
        if turn % 5 == 0:
            noise = " ".join(f"/var/cache/{rng.getrandbits(24):x}.tmp" for _ in range(4))
            self.provider.call((f"c{turn}", "echo", {"text": f"{text(rng, 120)} {noise} {ident if in_tool else ''}"}))
        self.provider.say(f"{text(rng, 60)} {ident if ident and not in_tool and turn % 2 else ''}")
        user = f"{text(rng, 50)} {ident if ident and not in_tool and not turn % 2 else ''}"
        self.provider.model_s = 0.0
        start = time.perf_counter()
        await run_turn(
            provider=self.provider,
            toolbox=Toolbox(),
            session=session,
            system="S" * 8_000,
            user_text=user,
            settings=self.settings,
        )
        return time.perf_counter() - start - self.provider.model_s


async def conversation(turns: int, ids: int, window: int, home: Path) -> dict[str, object]:
    """The long conversation, then turns alternating between it and a ten-turn-old one, so both see the same load."""
    rng = random.Random(13)
    at = set(rng.sample(range(turns), ids))
    provider = Timed(summary="The user and the assistant talked about several things.", count_input=True)
    talk = Talk(rng, provider, AgentSettings(context_window_tokens=window))
    store = SessionStore(home)
    old, young = store.open("old"), store.open("young")
    planted_so_far: list[tuple[str, bool]] = []
    shares: list[float] = []
    said_shares: list[float] = []
    compacting: list[float] = []
    for turn in range(turns):
        ident = planted(rng, turn) if turn in at else ""
        planted_so_far += [(ident, turn % 5 == 0)] if ident else []
        summaries = provider.summaries
        host_s = await talk.step(old, ident)
        if provider.summaries > summaries:  # the tool-less calls are compaction's summaries
            compacting.append(host_s)
            context = "\n".join(m.content + str([c.arguments for c in m.tool_calls]) for m in old.messages())
            shares.append(sum(1 for i, _ in planted_so_far if i in context) / max(1, len(planted_so_far)))
            said = [i for i, in_tool in planted_so_far if not in_tool]
            said_shares.append(sum(1 for i in said if i in context) / max(1, len(said)))
    for _ in range(10):
        await talk.step(young)
    timings: dict[str, list[float]] = {"young": [], "old": [], "young_read": [], "old_read": []}
    for _ in range(SAMPLES):
        for name, session in (("young", young), ("old", old)):
            summaries = provider.summaries
            host_s = await talk.step(session)
            if provider.summaries == summaries:
                timings[name].append(host_s)
            start = time.perf_counter()
            for _ in range(2):
                session.transcript.entries()
            timings[f"{name}_read"].append(time.perf_counter() - start)
    return {
        "compactions": len(compacting),
        "shares": shares,
        "said_shares": said_shares,
        "compacting": compacting,
        **timings,
        "bytes": old.transcript.path.stat().st_size,
        "entries": len(old.transcript.entries()),
    }


def ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:.2f} / {percentile(samples, 0.99) * 1000:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=2_000)
    parser.add_argument("--ids", type=int, default=300)
    parser.add_argument("--window", type=int, nargs="+", default=[128_000, 32_000])
    args = parser.parse_args()
    print(
        "| window | compactions | planted identifiers in context after each compaction, min / mean (of those said "
        "in messages, min) | host ms per "
        f"turn, p50 / p99: turn 10 | turn {args.turns:,} | turn that compacts, p50 | before (whole file read twice "
        f"a turn), ms: turn 10 / turn {args.turns:,} | transcript |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for window in args.window:
        with tempfile.TemporaryDirectory() as tmp:
            r = anyio.run(conversation, args.turns, args.ids, window, Path(tmp))
        shares = r["shares"] or [1.0]
        print(
            f"| {window:,} | {r['compactions']} | {min(shares):.1%} / {statistics.mean(shares):.1%} "
            f"({min(r['said_shares'] or [1.0]):.1%}) | {ms(r['young'])} "
            f"| {ms(r['old'])} | {statistics.median(r['compacting'] or [0.0]) * 1000:.0f} ms "
            f"| {statistics.median(r['young_read']) * 1000:.2f} / {statistics.median(r['old_read']) * 1000:.1f} "
            f"| {r['bytes'] / 1e6:.1f} MB, {r['entries']:,} entries |"
        )


if __name__ == "__main__":
    main()
