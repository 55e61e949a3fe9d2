"""The test MCP server (`mcp_test_server.py`) held back until a file exists: a server slow to start whose answer to
`initialize` a test lets through when it chooses, so what the host did before that is certain, not a matter of time.

Run: python gated_server.py GATE [mcp_test_server.py's options]
"""

from __future__ import annotations

import runpy
import sys
import time
from pathlib import Path

TEST_SERVER = Path(__file__).with_name("mcp_test_server.py")


def main() -> None:
    gate, options = Path(sys.argv[1]), sys.argv[2:]
    while not gate.exists():
        time.sleep(0.02)
    sys.argv = [str(TEST_SERVER), *options]
    runpy.run_path(str(TEST_SERVER), run_name="__main__")


if __name__ == "__main__":
    main()
