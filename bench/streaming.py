"""Streamed replies: how soon the first words show in each channel, how often Discord's draft is edited, and what
streaming costs the host per token.

The scripted model streams a 200-token answer over 4 s (one word an event, 20 ms apart). For each reply:
- first visible text: from the model sending its first word to that word being visible: on the terminal (`hermitcrab
  ask --stream`'s stdout), on Discord (the draft message stored by the fake Discord) and in the webhook's event
  stream (`POST /hooks/agent?stream=1`);
- edits per reply: the content edits the fake Discord accepted for the reply's message, and the 429s it answered;
- overhead per token: the host process's CPU time (user + system) for a streamed reply minus that for the same
  answer sent whole (`[discord] stream = "off"`, no SSE), over 200 tokens; and the latency each token adds
  between the model sending it and the SSE client reading it (p50, p99).

Run: .venv/bin/python bench/streaming.py [--replies 3]
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
from pathlib import Path

import httpx

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.cli import CLI, cli_env, wait_for  # noqa: E402
from tests.support.discord_host import CONFIG, STREAMED, DiscordRun, start_run, stop  # noqa: E402
from tests.support.fake_discord import OWNER, FakeDiscord, running_fake_discord  # noqa: E402
from tests.support.fake_llm import FakeLLM, Reply, free_port, openai_text, running_fake_llm  # noqa: E402

TOKENS = 200
WORD_S = 4.0 / TOKENS
ANSWER = " ".join(f"w{n:03}" for n in range(TOKENS))
HOOK_TOKEN = "bench-hook-token"


def first_word_at(llm: FakeLLM, before: int) -> float:
    """When the model sent the first word of the reply whose events start at `llm.streamed_at[before]` (event 0
    is the role chunk, event 1 the first word); NaN when it was not streamed (nobody listened: mode off)."""
    return llm.streamed_at[before + 1] if len(llm.streamed_at) > before + 1 else float("nan")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def terminal(llm: FakeLLM, home: Path) -> float:
    """`hermitcrab ask --stream`: seconds from the model's first word to it on stdout."""
    before = len(llm.streamed_at)
    llm.enqueue(Reply(openai_text(ANSWER), event_delay_s=WORD_S))
    process = subprocess.Popen([*CLI, "ask", "--stream", "count"], stdout=subprocess.PIPE, env=cli_env(home, llm))
    assert process.stdout is not None
    seen = b""
    while b"w000" not in seen:
        chunk = os.read(process.stdout.fileno(), 4096)
        assert chunk, "ask --stream ended before the first word"
        seen += chunk
    shown = time.monotonic()
    process.communicate(timeout=30)
    return shown - first_word_at(llm, before)


class Host:
    """One `hermitcrab run` with the Discord channel on the fake and the webhook on a free port."""

    def __init__(self, llm: FakeLLM, discord: FakeDiscord, home: Path, config: str) -> None:
        self.llm, self.discord, self.port = llm, discord, free_port()
        (home / "config.toml").write_text(config)
        hook = {"HERMITCRAB_WEBHOOK_LISTEN": f"127.0.0.1:{self.port}", "HERMITCRAB_WEBHOOK_TOKEN": HOOK_TOKEN}
        self.run: DiscordRun = start_run(home, llm, discord, home / "run.log", env={**STREAMED, **hook})

    def discord_reply(self) -> tuple[float, int, float]:
        """A DM answered: seconds to the draft, edits of the reply's message, the host's CPU seconds for it."""
        before, cpu = len(self.llm.streamed_at), cpu_s(self.run.process.pid)
        self.llm.enqueue(Reply(openai_text(ANSWER), event_delay_s=WORD_S))
        channel = self.discord.dm_channel(OWNER)
        asked = self.discord.user_says(OWNER, "count")
        wait_for(lambda: [s.content for s in self.discord.replies_to(asked)] == [ANSWER], "no answer", 30)
        (message,) = self.discord.replies_to(asked)
        assert message.channel_id == channel
        return message.at - first_word_at(self.llm, before), len(self.discord.edits_of(message.id)), self._cpu(cpu)

    def sse_reply(self) -> tuple[float, list[float], float]:
        """A streamed hook: seconds to the first delta, each delta's latency, the host's CPU seconds for it."""
        before, cpu = len(self.llm.streamed_at), cpu_s(self.run.process.pid)
        self.llm.enqueue(Reply(openai_text(ANSWER), event_delay_s=WORD_S))
        arrived: list[float] = []
        url = f"http://127.0.0.1:{self.port}/hooks/agent?stream=1"
        headers = {"Authorization": f"Bearer {HOOK_TOKEN}"}
        with httpx.stream("POST", url, json={"message": "count"}, headers=headers, timeout=60) as answer:
            for line in answer.iter_lines():
                if line.startswith("data: ") and json.loads(line[6:])["type"] == "text_delta":
                    arrived.append(time.monotonic())
        sent = self.llm.streamed_at[before + 1 : before + 1 + TOKENS]
        assert len(arrived) == TOKENS, len(arrived)
        return arrived[0] - sent[0], [a - s for a, s in zip(arrived, sent, strict=True)], self._cpu(cpu)

    def _cpu(self, before: float) -> float:
        time.sleep(0.3)  # the reply's last edits and the transcript's fsync are counted too
        return cpu_s(self.run.process.pid) - before

    def close(self) -> None:
        stop(self.run.process)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def row(name: str, figure: str, target: str) -> None:
    print(f"  {name:34} {figure:>22}   {target}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replies", type=int, default=3, help="replies measured per channel (default 3)")
    args = parser.parse_args()
    replies: int = args.replies
    with tempfile.TemporaryDirectory() as tmp, running_fake_llm() as llm, running_fake_discord() as discord:
        home = Path(tmp)
        term = [terminal(llm, home) for _ in range(replies)]
        streamed = Host(llm, discord, home, CONFIG)
        try:
            on_discord = [streamed.discord_reply() for _ in range(replies)]
            on_sse = [streamed.sse_reply() for _ in range(replies)]
        finally:
            streamed.close()
        whole = Host(llm, discord, home, CONFIG.replace("[discord]\n", '[discord]\nstream = "off"\n', 1))
        try:
            unstreamed = [whole.discord_reply() for _ in range(replies)]
        finally:
            whole.close()

    latencies = sorted(latency for _, each, _ in on_sse for latency in each)
    extra_cpu = median([cpu for _, _, cpu in on_discord]) - median([cpu for _, _, cpu in unstreamed])
    print(f"streaming: {TOKENS} tokens over {TOKENS * WORD_S:.0f} s, {replies} replies per channel (medians)")
    row("", "measured", "target")
    row("first text, terminal (ask --stream)", f"{median(term) * 1000:.1f} ms", "< 50 ms")
    row("first text, Discord draft", f"{median([d for d, _, _ in on_discord]) * 1000:.0f} ms", "< 1,200 ms")
    row("first text, webhook SSE", f"{median([d for d, _, _ in on_sse]) * 1000:.1f} ms", "< 50 ms")
    row("Discord edits per reply", f"{median([float(e) for _, e, _ in on_discord]):.0f}", "<= 1 a second")
    row("Discord 429s", f"{discord.limited}", "0")
    row("token latency via SSE p50 / p99", f"{_ms(latencies, 0.5)} / {_ms(latencies, 0.99)} ms", "")
    row("host CPU per token (streamed - whole)", f"{extra_cpu / TOKENS * 1e6:.0f} µs", "")
    cpu_ms = [median([cpu for *_, cpu in runs]) * 1000 for runs in (on_discord, on_sse, unstreamed)]
    row("host CPU a reply: Discord / SSE / whole", " / ".join(f"{ms:.0f}" for ms in cpu_ms) + " ms", "")


def _ms(values: list[float], quantile: float) -> str:
    return f"{values[min(len(values) - 1, int(quantile * len(values)))] * 1000:.1f}"


if __name__ == "__main__":
    main()
