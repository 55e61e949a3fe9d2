"""What the conformance suite starts per client scenario: hands the scenario to the long-lived runner
(`conformance_client.serve_scenarios`, at `$HERMITCRAB_CONFORMANCE_SOCKET`) and exits with its verdict.

Standard library only, so it starts in milliseconds (`python -I -S`); the host's pool runs in the runner.
"""

from __future__ import annotations

import json
import os
import socket
import sys


def main(argv: list[str]) -> int:
    asked = {
        "url": argv[-1],
        "scenario": os.environ.get("MCP_CONFORMANCE_SCENARIO", ""),
        "context": json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}"),
        "protocol_version": os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION"),
    }
    with socket.socket(socket.AF_UNIX) as runner:
        runner.connect(os.environ["HERMITCRAB_CONFORMANCE_SOCKET"])
        runner.sendall(json.dumps(asked).encode() + b"\n")
        answer = json.loads(runner.makefile("rb").readline())
    print(answer["output"], file=sys.stdout if answer["code"] == 0 else sys.stderr)
    return int(answer["code"])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
