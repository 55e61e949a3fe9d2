"""Run one command in this process group and take the whole group down when it ends or the spawn server dies.

Started as a plain script (`python -I -S guard.py STATUS_FILE STDIN_FILE -- ARGV...`, standard library only, so it
starts in milliseconds) as the leader of a new process group. Its stdin is the lifeline: the spawn server holds the
write end, so end-of-file means the server is gone, even after kill -9, and nothing of the run may outlive it. The
command's stdin is STDIN_FILE (the run's task). The command's exit code is written to STATUS_FILE before the group is
killed, since the guard dies with its group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading


def watch_lifeline() -> None:
    while os.read(0, 4096):
        pass
    os.killpg(0, signal.SIGKILL)


def main() -> None:
    status_file, stdin_file, argv = sys.argv[1], sys.argv[2], sys.argv[4:]
    threading.Thread(target=watch_lifeline, daemon=True).start()
    try:
        with open(stdin_file, "rb") as stdin:
            code = subprocess.Popen(argv, stdin=stdin).wait()
    except OSError as exc:
        print(f"cannot start {argv[0]!r}: {exc.strerror or exc}", file=sys.stderr, flush=True)
        code = 127
    temporary = f"{status_file}.tmp"
    with open(temporary, "w") as handle:
        handle.write(f"{code}\n")
    os.replace(temporary, status_file)
    sys.stdout.flush()
    os.killpg(0, signal.SIGKILL)  # whatever the command left behind in its group goes too


if __name__ == "__main__":
    main()
