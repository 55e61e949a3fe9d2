"""The forwarder inside the sandbox: the command's only way to the network proxy, which runs outside it.

A sandboxed command has a network namespace of its own with nothing but loopback, so it cannot reach the proxy's
listener. The proxy listens on a unix socket instead, bound into the sandbox; this forwarder listens on
127.0.0.1:PORT inside the namespace (where HTTP_PROXY points), copies each connection to that socket, and runs the
command as its child, exiting as the command does.

It runs as `python -I -S -c <this file's source> SOCKET PORT -- ARGV...` before every sandboxed command, so its
start-up is on every call's path: it uses the C halves of `socket`, `threading` and `signal`, whose Python halves
import enum and friends (about 10 ms more per command on a busy 2-core machine), and nothing of ours (which is not
importable there).
"""

import _socket
import _thread
import os
import sys

_signal = __import__("_signal")  # no type stubs; `signal` would import enum
_CHUNK = 65536


def main() -> None:
    path, port, _, *argv = sys.argv[1:]
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", int(port)))
    listener.listen(64)
    pid = os.fork()
    if pid == 0:
        _run(argv)
    quiet = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the command's streams are its own: their EOF must not wait for us
        os.dup2(quiet, fd)
    _thread.start_new_thread(_accept, (listener, path))
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    os._exit(128 - code if code < 0 else code)  # killed by a signal: reported as bash and bwrap report it


def _run(argv: list[str]) -> None:
    # Python ignores these at start-up and an exec'd program would inherit that: `yes | head` would complain of a
    # broken pipe, and a file over the size limit would fail with EFBIG instead of the command being killed.
    _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)
    _signal.signal(_signal.SIGXFSZ, _signal.SIG_DFL)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"{argv[0]}: {exc.strerror}\n".encode())
        os._exit(127)


def _accept(listener: _socket.socket, path: str) -> None:
    accept = getattr(listener, "_accept")  # noqa: B009 - the C socket's accept, not in its stubs: (fd, address)
    while True:
        fd, _ = accept()
        _thread.start_new_thread(_forward, (_socket.socket(fileno=fd), path))


def _forward(client: _socket.socket, path: str) -> None:
    upstream = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = _thread.allocate_lock()
    back.acquire()
    _thread.start_new_thread(_copy, (upstream, client, back))
    _copy(client, upstream, None)
    back.acquire()  # until the answer has been copied back too
    client.close()
    upstream.close()


def _copy(source: _socket.socket, target: _socket.socket, done: _thread.LockType | None) -> None:
    """Copy until `source` ends, then end `target`'s writing side, so a half-close passes through; release `done`."""
    try:
        while chunk := source.recv(_CHUNK):
            target.sendall(chunk)
        target.shutdown(_socket.SHUT_WR)
    except OSError:
        source.close()
        target.close()
    finally:
        if done is not None:
            done.release()


if __name__ == "__main__":
    main()
