"""The Servers page: a server that is up with its tools, one that fails to start with its error, one waiting for an
OAuth login, and the tails of the run's logs with a credential masked and followed as they are written, in a real
Chromium against the real `hermitcrab run`."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from playwright.sync_api import expect

from tests.support.dashboard import chromium, dashboard_run, logged_in, serious_violations
from tests.support.fake_llm import FakeLLM

TEST_SERVER = Path(__file__).parents[1] / "support" / "mcp_test_server.py"
SECRET = "sk-live-0123456789abcdefXYZ"
LEAKY = f"import sys; sys.stderr.write('connecting with api_key={SECRET}\\n'); sys.exit(3)"
"""A server that writes a credential to its stderr (servers.log, which no log filter sees) and dies at once."""


def test_a_server_up_with_its_tools_a_broken_one_with_its_error_and_the_logs_masked(tmp_path: Path, llm: FakeLLM):
    servers = {
        "testkit": {"command": sys.executable, "args": [str(TEST_SERVER)]},
        "leaky": {"command": sys.executable, "args": ["-c", LEAKY, "--token", "abcdef", "--db-password=hunter2", "-v"]},
        "remote": {"url": f"http://127.0.0.1:9/mcp?token={SECRET}", "auth": "oauth"},  # never logged in
    }
    with dashboard_run(tmp_path / "home", llm, servers=servers) as run, chromium() as browser:
        logs = run.home / "state" / "logs"
        assert SECRET in (logs / "servers.log").read_text()  # what the page must not show
        page = logged_in(browser, run)
        page.get_by_role("link", name="Servers").click()
        assert page.get_by_role("heading", level=1).inner_text() == "Servers"

        up = page.get_by_role("region", name="testkit")
        assert up.get_by_role("definition").first.inner_text() == "up"
        assert f"stdio: {sys.executable} {TEST_SERVER}" in up.inner_text()
        description = up.get_by_text("Return the text unchanged.")
        up.locator("summary").filter(has_text=re.compile(r"^\d+ tools$")).click()
        assert not description.is_visible()  # folded until asked for
        up.locator("summary").filter(has_text=re.compile("^echo$")).click()
        assert description.is_visible()

        down = page.get_by_role("region", name="leaky")
        facts = down.get_by_role("definition").all_inner_texts()
        assert facts[0].startswith(("down, restarting: ", "stopped, not restarted any more: ")), facts
        assert facts[3] != "none" and facts[3] in facts[0], facts  # the last error, also the reason it is down
        assert "api_key=***" in down.inner_text() and "No tools yet: it is not up." in down.inner_text()
        assert "--token '***' '--db-password=***' -v" in down.inner_text()
        assert "abcdef" not in down.inner_text() and "hunter2" not in down.inner_text()

        remote = page.get_by_role("region", name="remote")
        facts = remote.get_by_role("definition").all_inner_texts()
        assert facts[0].startswith("waiting for a login: MCP server 'remote' needs an OAuth login"), facts
        assert facts[1] == "streamable HTTP: http://127.0.0.1:9/mcp?token=***"
        assert facts[-1] == "not logged in: run `hermitcrab mcp login remote`"

        servers_log = page.get_by_role("region", name="servers.log").inner_text()
        assert "connecting with api_key=***" in servers_log
        host_log = page.get_by_role("region", name="host.log").inner_text()
        assert "MCP server 'leaky' failed" in host_log
        assert SECRET not in page.content() and "sk-live" not in page.content()
        assert serious_violations(page) == []

        with (logs / "servers.log").open("a") as stderr:  # as a server writes to it, while the page is open
            stderr.write(f"reconnecting with token={SECRET}\n")
        tail = page.get_by_role("region", name="servers.log")
        expect(tail).to_contain_text("reconnecting with token=***", timeout=15_000)
        assert SECRET not in page.content()

        with (logs / "servers.log").open("a") as stderr:  # more than is read from the end, then a screen-clearing line
            stderr.writelines(f"filler line {n} {'x' * 100}\n" for n in range(3_000))
            stderr.write("\x1b[2Jall clear\n")
        expect(tail).to_contain_text("\\x1b[2Jall clear", timeout=15_000)
        assert tail.inner_text().count("\n") == 199 and "filler line 2999 " in tail.inner_text()
        assert "The last 200 lines of" in page.get_by_text("older lines are in the file").inner_text()
