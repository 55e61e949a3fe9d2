"""Running one hook on one event: a command in a subprocess (the event as JSON on stdin, its answer as JSON on
stdout) or a Python handler, each within the hook's timeout; what comes back is read as an `Answer`.

Commands run outside the event loop (anyio's subprocess), in their own process group, so a timeout kills the
command and whatever it started; their stderr goes to the host's log at debug level only, cut short, since a hook
may echo what it was given."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
from collections.abc import Mapping
from dataclasses import replace
from subprocess import PIPE
from typing import Any

import anyio

from .catalog import Hook
from .events import VERSION, Answer, AnswerError, HookContext, HookEvent

logger = logging.getLogger(__name__)

MAX_OUTPUT_BYTES = 1_000_000
SHOWN_STDERR_CHARS = 300


class HookFailed(Exception):
    """The hook did not give an answer: it timed out, exited non-zero, crashed, or answered something malformed."""


def payload(event: HookEvent, fields: Mapping[str, Any], hook: Hook) -> dict[str, Any]:
    """What the hook is given: the event's name and version, its fields, and the hook's own options from config."""
    return {"event": event, "version": VERSION, **fields, "options": dict(hook.options)}


async def run_hook(hook: Hook, event: HookEvent, fields: Mapping[str, Any], context: HookContext) -> Answer:
    """`hook`'s answer to `event`; HookFailed saying why when there is none."""
    given = payload(event, fields, hook)
    try:
        with anyio.fail_after(hook.timeout_s):
            if hook.handler is not None:
                raw = await hook.handler(event, given, replace(context, options=hook.options))
            else:
                raw = await _run_command(hook, given)
        return Answer.read(event, raw)
    except TimeoutError:
        raise HookFailed(f"no answer within {hook.timeout_s:g} s") from None
    except AnswerError as exc:
        raise HookFailed(f"bad answer: {exc}") from None
    except HookFailed:
        raise
    except Exception as exc:  # a Python hook is someone's code: whatever it raises is that hook's failure
        raise HookFailed(f"{type(exc).__name__}: {exc}") from exc


async def _run_command(hook: Hook, given: dict[str, Any]) -> object:
    argv = list(hook.command)
    if hook.folder is not None and (hook.folder / argv[0]).is_file():
        argv[0] = str(hook.folder / argv[0])
    try:
        process = await anyio.open_process(
            argv, stdin=PIPE, stdout=PIPE, stderr=PIPE, cwd=hook.folder, start_new_session=True
        )
    except OSError as exc:
        raise HookFailed(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
    output: dict[str, bytes] = {}
    flooded: list[str] = []
    try:
        async with process, anyio.create_task_group() as group:

            async def read(name: str, stream: anyio.abc.ByteReceiveStream) -> None:
                chunks = bytearray()
                async for chunk in stream:
                    chunks += chunk
                    if len(chunks) > MAX_OUTPUT_BYTES:  # stopped here: raising would come out as an ExceptionGroup
                        flooded.append(name)
                        _kill_group(process.pid)
                        return
                output[name] = bytes(chunks)

            assert process.stdin and process.stdout and process.stderr  # all three are pipes
            group.start_soon(read, "stdout", process.stdout)
            group.start_soon(read, "stderr", process.stderr)
            try:
                await process.stdin.send(json.dumps(given, ensure_ascii=False).encode())
                await process.stdin.aclose()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):  # it need not read its input
                pass
            await process.wait()
    except BaseException:
        _kill_group(process.pid)
        raise
    if flooded:
        raise HookFailed(f"more than {MAX_OUTPUT_BYTES:,} bytes on {flooded[0]}")
    errors = output.get("stderr", b"").decode("utf-8", "replace").strip()
    if errors:
        logger.debug("hook %s said on stderr: %s", hook.name, errors[:SHOWN_STDERR_CHARS])
    if process.returncode != 0:
        raise HookFailed(f"exited with status {process.returncode}")
    text = output.get("stdout", b"").decode("utf-8", "replace").strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except ValueError:
        raise HookFailed("its output is not JSON (print nothing, or one JSON object)") from None


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # it ended meanwhile
        os.killpg(pid, signal.SIGKILL)
