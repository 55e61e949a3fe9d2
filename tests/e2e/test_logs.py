"""The logs a person reads when something went wrong: servers.log lines headed by time and server, host.log's line
per turn, and `hermitcrab logs` showing either, following what is written next."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from tests.support.cli import CLI, cli_env, wait_for
from tests.support.fake_llm import openai_text

TEST_SERVER = Path(__file__).parents[1] / "support" / "mcp_test_server.py"
# Writes two lines, the second unfinished, and dies at once (a crash at start-up, as after a bad upgrade).
CRASHY = "import sys; sys.stderr.write('boom: Traceback here\\nthe end without a newline'); sys.exit(3)"
STAMPED = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"


def test_servers_log_heads_each_line_and_logs_shows_a_server(hermitcrab, llm, hermitcrab_home, tmp_path):
    config = tmp_path / "servers.json"
    servers = {
        "kit": {"command": sys.executable, "args": [str(TEST_SERVER)]},
        "crashy": {"command": sys.executable, "args": ["-c", CRASHY]},
    }
    config.write_text(json.dumps({"mcpServers": servers}))
    llm.enqueue(openai_text("hello"))

    assert hermitcrab("ask", "--mcp-config", str(config), "hi").returncode == 0

    logs = hermitcrab_home / "state" / "logs"
    crashy = [line for line in (logs / "servers.log").read_text().splitlines() if " crashy: " in line]
    assert re.fullmatch(rf"{STAMPED} crashy: boom: Traceback here", crashy[0]), crashy
    assert re.fullmatch(rf"{STAMPED} crashy: the end without a newline", crashy[1]), crashy
    host_log = (logs / "host.log").read_text()
    assert re.search(r"turn: session main, trigger message, 1 model calls, \d+ tokens in, \d+ out, [\d.]+ s", host_log)

    shown = hermitcrab("logs", "--server", "crashy", "--lines", "1")
    assert shown.returncode == 0, shown.stderr
    assert re.fullmatch(rf"{STAMPED} crashy: the end without a newline\n", shown.stdout)
    assert "turn: session main" in hermitcrab("logs").stdout


def test_logs_follow_shows_what_is_written_next(hermitcrab_home, llm, tmp_path):
    servers_log = hermitcrab_home / "state" / "logs" / "servers.log"
    servers_log.parent.mkdir(parents=True)
    servers_log.write_text("2026-12-03T19:40:01 memory: before\n2026-12-03T19:40:01 exec: not this one\n")
    out = tmp_path / "out"
    with out.open("w") as stdout:
        follower = subprocess.Popen(
            [*CLI, "logs", "--follow", "--server", "memory"], stdout=stdout, env=cli_env(hermitcrab_home, llm)
        )
    try:
        wait_for(lambda: "before" in out.read_text(), "logs --follow did not show the last lines")
        with servers_log.open("a") as log:
            log.write("2026-12-03T19:40:02 exec: still not\n2026-12-03T19:40:02 memory: later api_key=sk-abc123\n")
        wait_for(lambda: "later" in out.read_text(), "logs --follow did not show a line written after it started")
    finally:
        follower.terminate()
        follower.wait(timeout=10)
    assert out.read_text().splitlines() == [
        "2026-12-03T19:40:01 memory: before",
        "2026-12-03T19:40:02 memory: later api_key=***",
    ]
