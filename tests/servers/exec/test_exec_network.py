"""Network for sandboxed commands through the per-domain allowlist proxy: real bwrap, real curl, a real site on
loopback. Skips without bubblewrap or curl.

The proxy refuses loopback addresses unless the outbound allowance lists them, so the site is `localhost` (resolved
by /etc/hosts, as any Linux has it) on the domain allowlist, with `127.0.0.1:PORT` as its outbound allowance. Inside
the sandbox NO_PROXY names localhost (a server the command starts there is reached directly), so curl is told
`--noproxy ''` to use the proxy for it. The site records each request: a refused one must never reach it.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import ElicitRequestParams, ElicitResult

from hermitcrab.servers.exec import Policy, build_server
from hermitcrab.servers.exec.__main__ import config_from_args, parser
from hermitcrab.servers.exec.domains import DomainAllowlist
from hermitcrab.servers.exec.network import BadNetworkOption
from hermitcrab.servers.exec.runner import Limits
from hermitcrab.servers.exec.sandbox import probe
from hermitcrab.util.outbound import OUTBOUND_VARIABLE

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(shutil.which("bwrap") is None or probe() is not None, reason="bubblewrap is not usable here"),
    pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed"),
]
CURL = "curl -sS --noproxy ''"


@dataclass
class Site:
    port: int
    hits: list[str] = field(default_factory=list[str])

    @property
    def outbound(self) -> list[str]:
        return [f"127.0.0.1:{self.port}"]


@pytest.fixture
def site() -> Iterator[Site]:
    record = Site(0)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            record.hits.append(self.path)
            body = f"hello {self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    record.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield record
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def make(workspace: Path, state: Path) -> Callable[..., MCPServer]:
    def build(**options: Any) -> MCPServer:
        options.setdefault("sandbox", "bwrap")
        return build_server(roots=[workspace], state=state, policy=Policy(security="full"), **options)

    return build


class Owner:
    """The elicitation callback: records each question and answers as told."""

    def __init__(self, decision: str = "allow", action: str = "accept") -> None:
        self.decision, self.action = decision, action
        self.questions: list[ElicitRequestParams] = []

    async def __call__(self, context: Any, params: ElicitRequestParams) -> ElicitResult:
        self.questions.append(params)
        content = {"decision": self.decision} if self.action == "accept" else None
        return ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]


async def run(server: MCPServer, command: str, **args: Any) -> dict[str, Any]:
    async with Client(server) as client:
        result = await client.call_tool("exec", {"command": command, **args})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def allow_domain(server: MCPServer, owner: Owner | None, domain: str, mode: str = "auto") -> tuple[bool, str]:
    async with Client(server, elicitation_callback=owner, mode=mode) as client:  # type: ignore[arg-type]
        result = await client.call_tool("exec_allow_domain", {"domain": domain, "reason": "the test site"})
    return result.is_error, result.content[0].text  # type: ignore[union-attr]


async def status(server: MCPServer) -> dict[str, Any]:
    async with Client(server) as client:
        result = await client.read_resource("exec://status")
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    return {**json.loads(result.contents[0].text), "tools": tools}  # type: ignore[union-attr]


async def test_an_allowed_domain_is_reached_over_http_and_through_a_tunnel(
    make: Callable[..., MCPServer], site: Site
) -> None:
    server = make(allow_domains=["localhost"], outbound_allow=site.outbound)
    url = f"http://localhost:{site.port}"
    out = await run(server, f"{CURL} {url}/plain; echo; {CURL} --proxytunnel {url}/tunnel")
    assert out["stdout"].split("\n") == ["hello /plain", "hello /tunnel"], out
    assert site.hits == ["/plain", "/tunnel"] and "Network refused" not in (out["note"] or "")


async def test_another_domain_gets_a_403_saying_what_to_do_and_is_named_in_the_note(
    make: Callable[..., MCPServer], site: Site
) -> None:
    server = make(allow_domains=["localhost"], outbound_allow=site.outbound)
    out = await run(server, f"{CURL} -w ' %{{http_code}}' http://elsewhere.test/; {CURL} -p https://other.test/")
    assert out["stdout"].endswith(" 403") and "exec_allow_domain" in out["stdout"]
    assert "--allow-domain elsewhere.test" in out["stdout"] and "allowed: localhost" in out["stdout"]
    assert "CONNECT tunnel failed, response 403" in out["stderr"]
    assert out["note"].startswith("Network refused: elsewhere.test, other.test (not on the domain allowlist;")


async def test_an_allowed_domain_on_loopback_is_refused_without_the_outbound_allowance(
    make: Callable[..., MCPServer], site: Site
) -> None:
    server = make(allow_domains=["localhost"])
    out = await run(server, f"{CURL} http://localhost:{site.port}/guarded")
    assert "loopback address" in out["stdout"] and "--allow-outbound" in out["stdout"]
    assert "localhost (an address on this machine or its network" in out["note"] and site.hits == []


async def test_there_is_no_way_round_the_proxy(make: Callable[..., MCPServer], site: Site) -> None:
    server = make(allow_domains=["localhost"], outbound_allow=site.outbound)
    out = await run(
        server,
        f"curl -sS --noproxy '*' http://127.0.0.1:{site.port}/direct; echo curl=$?; "
        f"(echo > /dev/tcp/127.0.0.1/{site.port}) 2>/dev/null; echo tcp=$?",
    )
    assert "curl=7" in out["stdout"] and "tcp=1" in out["stdout"] and site.hits == []


async def test_a_background_command_keeps_its_way_out_and_its_refusals_are_polled(
    make: Callable[..., MCPServer], site: Site
) -> None:
    server = make(allow_domains=["localhost"], outbound_allow=site.outbound)
    command = f"sleep 0.5; {CURL} http://localhost:{site.port}/later; {CURL} http://late.test/"
    async with Client(server) as client:
        started = await client.call_tool("exec", {"command": command, "background": True})
        session = (started.structured_content or {})["session_id"]
        await client.call_tool("exec", {"command": "true"})  # a call in between closes only ended calls' proxies
        polled = await client.call_tool("process", {"action": "poll", "session_id": session, "wait_ms": 10_000})
    out = (polled.structured_content or {})["result"]
    assert out["status"] == "exited" and "hello /later" in out["stdout"] and site.hits == ["/later"]
    assert "Network refused: late.test (not on the domain allowlist" in out["note"]
    assert "late.test" not in ((started.structured_content or {}).get("note") or "")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_approved_domain_is_reachable_and_kept_after_a_restart(
    make: Callable[..., MCPServer], site: Site, state: Path, mode: str
) -> None:
    server = make(outbound_allow=site.outbound)
    url = f"http://localhost:{site.port}/approved"
    assert "403" in (await run(server, f"{CURL} -w %{{http_code}} {url}"))["stdout"]
    owner = Owner("allow")
    is_error, text = await allow_domain(server, owner, "LocalHost.")
    assert not is_error and text.startswith("Allowed: sandboxed commands may now reach localhost"), text
    (question,) = owner.questions
    assert "Domain: localhost\nReason: the test site" in question.message
    assert question.requested_schema["properties"]["decision"]["enum"] == ["allow", "deny"]
    assert (await run(server, f"{CURL} {url}"))["stdout"] == "hello /approved"
    assert (state / "domains.json").stat().st_mode & 0o777 == 0o600

    restarted = make(outbound_allow=site.outbound)
    assert (await run(restarted, f"{CURL} {url}"))["stdout"] == "hello /approved"
    assert (await status(restarted))["approved_domains"] == ["localhost"]
    is_error, text = await allow_domain(restarted, Owner("deny"), "localhost")
    assert not is_error and "already allowed" in text  # not asked again


@pytest.mark.parametrize(
    ("decision", "action", "said"),
    [("deny", "accept", "denied localhost"), ("allow", "decline", "did not allow"), ("allow", "cancel", "did not")],
)
async def test_a_domain_the_owner_does_not_allow_stays_refused(
    make: Callable[..., MCPServer], site: Site, state: Path, decision: str, action: str, said: str
) -> None:
    server = make(outbound_allow=site.outbound)
    is_error, text = await allow_domain(server, Owner(decision, action), "localhost")
    assert is_error and f"Refused: the user {said}" in text and "localhost" in text, text
    out = await run(server, f"{CURL} -w ' %{{http_code}}' http://localhost:{site.port}/")
    assert out["stdout"].endswith(" 403") and site.hits == [] and not (state / "domains.json").exists()


async def test_without_elicitation_the_owner_is_told_of_the_flag(make: Callable[..., MCPServer]) -> None:
    is_error, text = await allow_domain(make(), None, "pypi.org")
    assert is_error and "no elicitation support" in text and "--allow-domain pypi.org" in text


@pytest.mark.parametrize(
    ("domain", "expected"),
    [("*.com", "a whole top-level domain"), ("exa mple.org", "is not a domain"), ("-x.org", "is not a domain")],
)
async def test_a_malformed_domain_is_refused_in_words(
    make: Callable[..., MCPServer], domain: str, expected: str
) -> None:
    owner = Owner("allow")
    is_error, text = await allow_domain(make(), owner, domain)
    assert is_error and expected in text and owner.questions == []


async def test_status_and_description_name_the_allowed_domains(make: Callable[..., MCPServer]) -> None:
    found = await status(make(allow_domains=["pypi.org", "*.github.com"]))
    assert found["allowed_domains"] == ["pypi.org", "*.github.com"] and found["approved_domains"] == []
    assert found["network_access"].startswith("only the allowed domains, through the proxy")
    description = found["tools"]["exec"].description
    assert "have no network access" in description and "allowed domains (pypi.org, *.github.com)" in description
    assert "exec_allow_domain" in found["tools"]


@pytest.mark.parametrize(
    ("options", "access"), [({"network": True}, "(--network)"), ({"sandbox": "none"}, "not sandboxed")]
)
async def test_with_the_host_network_there_is_no_proxy(
    make: Callable[..., MCPServer], options: dict[str, Any], access: str
) -> None:
    server = make(allow_domains=["pypi.org"], **options)
    found = await status(server)
    assert access in found["network_access"] and found["allowed_domains"] is None
    assert "exec_allow_domain" not in found["tools"]
    assert (await run(server, "echo ${HTTPS_PROXY:-none}"))["stdout"] == "none\n"


async def test_the_bridge_keeps_the_command_s_streams_signals_and_exit_code(make: Callable[..., MCPServer]) -> None:
    # Python ignores SIGPIPE; a bridge that passed that on would make `yes` complain of a broken pipe.
    server = make()
    out = await run(server, "echo $HTTPS_PROXY; yes | head -n 2; exit 3")
    assert out["stdout"] == "http://127.0.0.1:3128\ny\ny\n" and out["stderr"] == "" and out["exit_code"] == 3
    assert (await run(server, "kill -TERM $$"))["exit_code"] == 143


async def test_the_bridge_is_not_counted_against_the_process_cap(make: Callable[..., MCPServer]) -> None:
    server = make(limits=Limits(processes=3))  # bash and two sleeps; bwrap, its init and the bridge are ours
    assert (await run(server, "sleep 0.3 & sleep 0.3 & wait"))["status"] == "exited"
    over = await run(server, "sleep 0.3 & sleep 0.3 & sleep 0.3 & wait")
    assert over["status"] == "killed" and "more than 3 processes" in over["note"]


def test_wildcards_cover_the_domain_and_its_subdomains(tmp_path: Path) -> None:
    allowlist = DomainAllowlist(["*.Example.com", "pypi.org."], tmp_path / "domains.json")
    assert [allowlist.allows(host) for host in ("example.com", "a.b.example.com", "PyPI.org", "[::1]")] == [
        True,
        True,
        True,
        False,
    ]
    assert not allowlist.allows("badexample.com") and not allowlist.allows("files.pypi.org")
    assert allowlist.covers("*.a.example.com") and not allowlist.covers("*.pypi.org")


def test_a_bad_option_stops_the_server_with_a_reason(workspace: Path, state: Path) -> None:
    with pytest.raises(BadNetworkOption, match="not a domain"):
        build_server(roots=[workspace], state=state, allow_domains=["a/b"])
    with pytest.raises(BadNetworkOption, match="outbound allow entry"):
        build_server(roots=[workspace], state=state, outbound_allow=["a/b/c"])


def test_the_flags_reach_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(OUTBOUND_VARIABLE, "10.0.0.0/8;intranet:8080")
    config = config_from_args(parser().parse_args(["--allow-domain", "pypi.org", "--allow-domain", "*.github.com"]))
    assert config["allow_domains"] == ("pypi.org", "*.github.com")
    assert config["outbound_allow"] == ("10.0.0.0/8", "intranet:8080")
    given = config_from_args(parser().parse_args(["--allow-outbound", "127.0.0.1:3000;[::1]:8080"]))
    assert given["outbound_allow"] == ("127.0.0.1:3000", "[::1]:8080") and given["allow_domains"] == ()
