"""The forwarder inside the sandbox: the command's only way to the network proxy, which runs outside it.

A sandboxed command has a network namespace of its own with nothing but loopback, so it cannot reach the proxy's
listener. The proxy listens on a unix socket instead, bound into the sandbox; this forwarder listens on
127.0.0.1:PORT inside the namespace (where HTTP_PROXY points), copies each connection to that socket, and runs the
command as its child, exiting as the command does.

It runs as `python -I -S -c <this file's source> SOCKET PORT -- ARGV...` before every sandboxed command, so it uses
the standard library only (nothing of ours is importable there) and imports little: start-up is on every call's path.
"""

import os
import signal
import socket
import sys
import threading

_CHUNK = 65536


def main() -> None:
    path, port, _, *argv = sys.argv[1:]
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", int(port)))
    listener.listen(64)
    pid = os.fork()
    if pid == 0:
        _run(argv)
    quiet = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the command's streams are its own: EOF on them must not wait for us
        os.dup2(quiet, fd)
    threading.Thread(target=_accept, args=(listener, path), daemon=True).start()
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    os._exit(128 - code if code < 0 else code)  # killed by a signal: reported as bash and bwrap report it


def _run(argv: list[str]) -> None:
    # Python ignores these at start-up and an exec'd program would inherit that: `yes | head` would complain of a
    # broken pipe, and a file over the size limit would fail with EFBIG instead of the command being killed.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"{argv[0]}: {exc.strerror}\n".encode())
        os._exit(127)


def _accept(listener: socket.socket, path: str) -> None:
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_forward, args=(client, path), daemon=True).start()


def _forward(client: socket.socket, path: str) -> None:
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_copy, args=(upstream, client), daemon=True)
    back.start()
    _copy(client, upstream)
    back.join()
    client.close()
    upstream.close()


def _copy(source: socket.socket, target: socket.socket) -> None:
    """Copy until `source` ends, then end `target`'s writing side, so a half-close passes through."""
    try:
        while chunk := source.recv(_CHUNK):
            target.sendall(chunk)
        target.shutdown(socket.SHUT_WR)
    except OSError:
        for end in (source, target):
            end.close()


if __name__ == "__main__":
    main()
