"""What does the exec server's network proxy cost a sandboxed command?

Run: .venv/bin/python bench/exec_network.py [--requests 50] [--calls 30] [--json]

1. One small HTTP GET (`curl`, its `time_total`) to a site on loopback: from a command without the sandbox (straight
   to the site) and from one in bubblewrap (bridge in the sandbox, unix socket, the proxy's domain and outbound
   checks, the checked address dialled). The requests run in a loop inside one command, so what is timed is the
   request, not the command's start. p50/p99 in ms, and the difference of the p50s: what the proxy adds.
2. `true` in bubblewrap without network, with and without the bridge in front of it (run straight from
   `Sandbox.wrap`): what the bridge adds to every sandboxed command; and `exec {"command": "true"}` over MCP with
   the proxy and with `--network` (no proxy, no bridge, no network namespace), the choice an owner makes.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.server.mcpserver import MCPServer

from hermitcrab.servers.exec import Policy, build_server
from hermitcrab.servers.exec.sandbox import detect, probe


class _Site(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def stats(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": round(statistics.median(ordered) * 1000, 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 3),
    }


async def request_times(server: MCPServer, port: int, requests: int) -> list[float]:
    loop = f"for i in $(seq {requests + 1}); do curl -s --noproxy '' -o /dev/null -w '%{{time_total}}\\n' "
    async with Client(server) as client:
        result = await client.call_tool("exec", {"command": loop + f"http://localhost:{port}/; done"})
    out = result.structured_content or {}
    times = [float(line) for line in str(out.get("stdout", "")).split()]
    if len(times) != requests + 1:
        raise SystemExit(f"the request loop failed: {out}")
    return times[1:]  # the first pays for curl's and the proxy's warm-up


async def call_times(server: MCPServer, calls: int) -> list[float]:
    samples: list[float] = []
    async with Client(server) as client:
        for _ in range(calls + 1):
            start = time.perf_counter()
            await client.call_tool("exec", {"command": "true"})
            samples.append(time.perf_counter() - start)
    return samples[1:]


def wrap_times(workspace: Path, proxy: Path, runs: int) -> tuple[list[float], list[float]]:
    """`true` in bwrap without and with the bridge, taken in turns so both see the same load."""
    sandbox, _ = detect("bwrap", home=Path(os.environ.get("HOME", "/")), search_path=os.environ.get("PATH", ""))
    assert sandbox is not None
    argvs = [sandbox.wrap(["true"], roots=[workspace], protected=[], workdir=workspace, proxy=p) for p in (None, proxy)]
    samples: tuple[list[float], list[float]] = ([], [])
    for _ in range(runs + 1):
        for argv, taken in zip(argvs, samples, strict=True):
            start = time.perf_counter()
            subprocess.run(argv, check=True)
            taken.append(time.perf_counter() - start)
    return samples[0][1:], samples[1][1:]


async def measure(requests: int, calls: int) -> dict[str, Any]:
    site = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    port = site.server_address[1]
    threading.Thread(target=site.serve_forever, daemon=True).start()
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "ws"
        workspace.mkdir()

        def server(**options: Any) -> MCPServer:
            state = Path(tempfile.mkdtemp(dir=folder))
            return build_server(roots=[workspace], state=state, policy=Policy(security="full"), **options)

        proxied = server(sandbox="bwrap", allow_domains=["localhost"], outbound_allow=[f"127.0.0.1:{port}"])
        direct = stats(await request_times(server(sandbox="none"), port, requests))
        through = stats(await request_times(proxied, port, requests))
        with_bridge = stats(await call_times(proxied, calls))
        without = stats(await call_times(server(sandbox="bwrap", network=True), calls))
        listener = socket.socket(socket.AF_UNIX)  # the bridge only needs the socket to bind; nothing connects
        listener.bind(str(Path(folder) / "proxy.sock"))
        bare, bridged = (stats(taken) for taken in wrap_times(workspace, Path(folder) / "proxy.sock", calls))
        listener.close()
    site.shutdown()
    return {
        "request_direct": direct,
        "request_through_proxy": through,
        "proxy_adds_ms": round(through["p50_ms"] - direct["p50_ms"], 3),
        "bwrap_true": bare,
        "bwrap_true_bridged": bridged,
        "bridge_adds_ms": round(bridged["p50_ms"] - bare["p50_ms"], 3),
        "exec_true_bwrap_proxy": with_bridge,
        "exec_true_bwrap_network": without,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if (problem := probe()) is not None:
        raise SystemExit(f"bubblewrap is needed: {problem}")
    report = anyio.run(measure, args.requests, args.calls)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    for name, value in report.items():
        shown = value if isinstance(value, float) else f"p50 {value['p50_ms']} ms, p99 {value['p99_ms']} ms"
        print(f"{name:26} {shown}")


if __name__ == "__main__":
    main()
