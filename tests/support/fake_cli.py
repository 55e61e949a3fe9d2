"""Stands in for an external agent CLI: prints the arguments after its own options as a JSON list.

--sleep S       wait S seconds first
--exit N        exit with code N
--grandchild    leave a `sleep` process behind in the process group first (a CLI that starts helpers)
--stdin         print what it read on stdin as the list's last item
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

rest = sys.argv[1:]
sleep, code, piped = 0.0, 0, False
while rest and rest[0] in ("--sleep", "--exit", "--grandchild", "--stdin"):
    option = rest.pop(0)
    if option == "--stdin":
        piped = True
    elif option == "--grandchild":
        subprocess.Popen(["sleep", "300"])
    elif option == "--sleep":
        sleep = float(rest.pop(0))
    else:
        code = int(rest.pop(0))
print("working", file=sys.stderr, flush=True)
time.sleep(sleep)
print(json.dumps([*rest, sys.stdin.read()] if piped else rest))
sys.exit(code)
