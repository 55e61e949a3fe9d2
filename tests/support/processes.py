"""Start a server process for a test and wait until its port accepts connections."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def serving(command: list[str], port: int, timeout_s: float = 30) -> Iterator[str]:
    """Run `command` (which must listen on 127.0.0.1:`port`) and yield its MCP URL; terminate it afterwards."""
    process = subprocess.Popen(command, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None, f"{command} exited with {process.returncode}"
            assert time.monotonic() < deadline, f"{command} did not start listening on port {port}"
            time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=15)


def pid_serving(module: str, state: Path) -> int:
    """The live server process running `python -m module` whose command line names `state`."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if module.encode() in cmdline and str(state).encode() in cmdline:
                return int(entry)
    raise AssertionError(f"no {module} server running on {state}")


def help_of(module: str) -> str:
    """What `python -m module --help` prints; fails the test if it exits non-zero."""
    return subprocess.run([sys.executable, "-m", module, "--help"], capture_output=True, text=True, check=True).stdout
