"""The hermitcrab-exec MCP server: `exec`, `process` and the file tools, behind the policy gate."""

# No `from __future__ import annotations`: the exec tool's Resolve(gate.resolve) annotation names a local.

import json
import logging
import os
import threading
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field

from hermitcrab.servers._common.arguments import MAX_PATH_CHARS, quote
from hermitcrab.servers._common.paths import default_paths
from hermitcrab.servers._common.server import GuardedServer
from hermitcrab.util.server_options import NO_SANDBOX

from . import git_identity, persona_edits, processes
from .approvals import ApprovalStore
from .changes import ChangeLog, Record, UndoLimits, UndoRefused
from .checking import BUDGET_S, CheckWorker, Judge
from .domains import MAX_DOMAIN_CHARS, MAX_REASON_CHARS, DomainApprovals
from .environment import EMPTY_GIT_CONFIG, child_environment
from .files import MAX_BYTES, Files
from .gate import Gate, asking_note, effective_ask
from .history import ChangeList, UndoResult, listing, undo_result
from .leaving import Leaves
from .network import CallProxy, NetworkProxy, network_proxy
from .persona_edits import PersonaEdits
from .policy import Checker, Policy
from .processes import ExecResult, LogSlice, ProcessTable, SessionList
from .protected import Protected
from .runner import Job, Limits, Spec
from .sandbox import GIT_IDENTITY, SandboxMode, detect, secret_paths
from .tiers import RiskTiers

MAX_WAIT_MS = 50_000  # every wait a call can ask for ends inside an MCP host's usual 60 s call timeout
MAX_COMMAND_CHARS = 100_000  # bash gets the command as one argument, which Linux caps at 128 KiB
MAX_STDIN_CHARS = 1_000_000
Path_ = Annotated[str, Field(max_length=MAX_PATH_CHARS)]
FileText = Annotated[str, Field(max_length=MAX_BYTES)]
EnvName = Annotated[str, Field(max_length=256)]
EnvValue = Annotated[str, Field(max_length=32_768)]
logger = logging.getLogger(__name__)
UNSANDBOXED = (
    f"no sandbox (%s): {NO_SANDBOX}; install bubblewrap (apt-get install bubblewrap), or on macOS wrap the "
    "server in sandbox-exec"
)
UNSANDBOXED_NOTE = f"No sandbox on this server: {NO_SANDBOX}."
EXEC_DESCRIPTION = """Run a shell command in the workspace and return its exit code and output.

Output that is too long keeps its head and tail. A command still running after `yield_ms` keeps running in the
background: use `process` with the returned session_id. A refusal says why; don't try to work around it."""
ALLOW_DOMAIN_DESCRIPTION = """Ask the user to let sandboxed commands reach a domain through the network proxy.

Call it when an exec result says `Network refused: <domain> (not on the domain allowlist ...)` and the task needs
that domain (a package index, an API, a git host). The user is asked; an allowed domain stays allowed, also after
a restart. Ask for the narrowest name that works."""
INSTRUCTIONS = """\
Run shell commands and edit files inside the user's workspace. Commands run through bash, in a sandbox where
bubblewrap works; what the server may not run on its own is asked about (the exec tool says what) or refused
with the reason. Prefer read_file/write_file/edit_file/list_dir for files. Long-running commands move to the background
and are managed with the `process` tool. What commands and file tools change in the workspace can be undone:
exec_changes lists each call's changes, exec_undo puts a call's files back as they were."""


def build_server(
    roots: Sequence[Path] | None = None,
    state: Path | None = None,
    policy: Policy | None = None,
    *,
    sandbox: SandboxMode = "auto",
    network: bool = False,
    limits: Limits | None = None,
    environ: Mapping[str, str] | None = None,
    check_budget_s: float = BUDGET_S,
    allow_domains: Sequence[str] = (),
    outbound_allow: Sequence[str] = (),
    undo: UndoLimits | None = None,
) -> MCPServer:
    """Build the exec server (the default workspace is created; given `roots` must be directories already).

    Raises NotADirectoryError for a missing root, StateInsideRoot when the state directory overlaps a root,
    SandboxUnavailable when `sandbox="bwrap"` cannot work here, and BadNetworkOption for an entry of
    `allow_domains` (reachable through the proxy) or `outbound_allow` (non-public destinations it may reach).
    """
    environ = dict(os.environ if environ is None else environ)
    workspace, default_state = default_paths("exec", environ)
    if roots:  # the user named them: a typo must not silently become a new, empty workspace
        roots = [Path(r).expanduser().resolve() for r in roots]
        missing = [root for root in roots if not root.is_dir()]
        if missing:
            raise NotADirectoryError(f"{missing[0]} is not a directory")
    else:
        roots = [workspace.expanduser().resolve()]
        roots[0].mkdir(parents=True, exist_ok=True)
    state = (state or default_state).expanduser().resolve()
    overlap = next((r for r in roots if r == state or r.is_relative_to(state) or state.is_relative_to(r)), None)
    if overlap is not None:
        raise StateInsideRoot(f"the state directory {state} overlaps the root {overlap}; give --state outside it")
    policy = policy or Policy()
    limits = limits or Limits()
    hidden = [p.resolve() for p in secret_paths(Path(environ.get("HOME", "/nonexistent")), workspace.parent)]
    hidden.append(state)  # approvals.key seals approvals.json: no command may read it
    user_home = Path(environ["HOME"]).resolve() if environ.get("HOME") else None  # private and empty inside
    box, sandbox_problem = detect(
        sandbox,
        network=network,
        hidden=hidden,
        home=user_home,
        search_path=environ.get("PATH", ""),
        blanks=state / "blanks",
    )
    sandboxed = box is not None
    guard = Protected(roots) if sandboxed else None  # without the sandbox, the policy refuses the same writes
    proxying = network_proxy(allow_domains, outbound_allow, state)
    proxy = proxying if sandboxed and not network else None  # else commands have the host's network, as before
    background_calls: dict[str, CallProxy] = {}  # session id -> its call's proxy, for the refusals `poll` reports
    if not sandboxed:
        logger.warning(UNSANDBOXED, sandbox_problem or "--sandbox none")
    identity = git_identity.save(state, git_identity.read(environ))
    git_global = EMPTY_GIT_CONFIG if identity is None else GIT_IDENTITY if box is not None else str(identity)
    if box is not None:
        box = replace(box, git_identity=identity)
    child_env = child_environment(environ, None)
    home = child_env.get("HOME", "/")
    checker = Checker(
        policy, roots, protected=[state], hidden=hidden, sandboxed=sandboxed, search_path=child_env["PATH"], home=home
    )
    files = Files(roots, protected=[state], hidden=hidden)
    personas = PersonaEdits(files, policy.approval_timeout_s)
    changes = ChangeLog(roots, state, undo or UndoLimits(), skip=hidden)
    table = ProcessTable()
    ask = effective_ask(policy.ask, sandboxed)
    leaves = Leaves(roots, home, hidden, user_home) if sandboxed else None  # what would leave the sandbox
    judge = Judge(checker, ask, policy.security, RiskTiers(roots, home), leaves)
    worker = CheckWorker(judge, check_budget_s)
    gate = Gate(policy, worker, ApprovalStore(state / "approvals.json"), files, table.commands_running)
    unsandboxed_note = [UNSANDBOXED_NOTE] if not sandboxed else []  # said once, in the first exec result

    @asynccontextmanager
    async def lifespan(_: MCPServer) -> AsyncGenerator[None]:
        try:
            yield
        finally:
            table.kill_all()
            await anyio.to_thread.run_sync(worker.stop)
            if proxy is not None:
                await proxy.close()

    server = GuardedServer("hermitcrab-exec", instructions=INSTRUCTIONS, lifespan=lifespan)

    @server.tool(name="exec", description=EXEC_DESCRIPTION + asking_note(ask) + sandbox_note(sandboxed, network, proxy))
    async def exec_tool(
        command: Annotated[
            str, Field(description="A bash command line, e.g. `ls -la | grep py`.", max_length=MAX_COMMAND_CHARS)
        ],
        approval: Annotated[ElicitationResult[Any], Resolve(gate.resolve)],
        workdir: Annotated[Path_ | None, Field(description="Directory to run in, inside the workspace.")] = None,
        env: Annotated[
            dict[EnvName, EnvValue] | None,
            Field(description="Extra environment variables (PATH, LD_* and similar refused).", max_length=100),
        ] = None,
        timeout_s: Annotated[
            float, Field(description="Kill the command and its children after this.", gt=0, le=86_400)
        ] = 1800,
        background: Annotated[bool, Field(description="Return at once with a session_id for `process`.")] = False,
        yield_ms: Annotated[
            int, Field(description="Move to the background if still running after this.", ge=0, le=MAX_WAIT_MS)
        ] = 10_000,
    ) -> ExecResult:
        approved = await gate.decide(approval, command, workdir, env)
        directory, note = approved.directory, _join(approved.note, *unsandboxed_note)
        unsandboxed_note.clear()
        if table.running() >= processes.MAX_RUNNING:
            raise ToolError(
                f"{processes.MAX_RUNNING} commands are still running; kill background ones with `process` first."
            )
        protections = await anyio.to_thread.run_sync(guard.current) if guard is not None else []
        undoable = await anyio.to_thread.run_sync(changes.begin, "exec", command)
        call = await proxy.open_call() if proxy is not None else None  # last: only Job() fails after it (released)
        spec = Spec(
            command,
            directory,
            child_environment(environ, env, git_global),
            timeout_s,
            limits,
            box,
            roots,
            protections,
            writable=approved.writable,
            proxy=call.socket if call is not None else None,
        )
        try:
            job = Job(spec)
        except OSError as exc:
            _release(call, None)
            await anyio.to_thread.run_sync(changes.finish, undoable)
            raise ToolError(f"Could not start bash: {exc.strerror}.") from exc
        _release(call, job.done)
        table.track(job)
        changes.finish_when(job.id, job.done, undoable)
        if background:
            hint = "Started in the background; use `process` (poll, log, write, kill) with its session_id."
        else:
            try:
                if await job.wait(yield_ms / 1000):
                    note = _join(note, _refused(call))
                    ended = processes.result(job, sandboxed=sandboxed, background=False, note=note)
                    return await with_changes(ended, job)
            except anyio.get_cancelled_exc_class():
                job.kill()
                raise
            hint = f"Still running after {yield_ms} ms; moved to the background. Use `process` with its session_id."
        table.add(job)
        if call is not None:  # what it is refused later is said when it is polled
            for gone in [session for session in background_calls if table.get(session) is None]:
                del background_calls[gone]
            background_calls[job.id] = call
        return processes.result(job, sandboxed=sandboxed, background=True, note=_join(note, _refused(call), hint))

    if proxy is not None:
        domains = DomainApprovals(proxy.allowlist, policy.approval_timeout_s)

        @server.tool(name="exec_allow_domain", description=ALLOW_DOMAIN_DESCRIPTION)
        async def exec_allow_domain(
            domain: Annotated[
                str,
                Field(
                    description="A host name (pypi.org) or *.domain (*.example.com).", max_length=MAX_DOMAIN_CHARS + 2
                ),
            ],
            reason: Annotated[
                str,
                Field(description="Why the task needs it, in a sentence the user reads.", max_length=MAX_REASON_CHARS),
            ],
            approval: Annotated[ElicitationResult[Any], Resolve(domains.resolve)],
        ) -> str:
            return domains.decide(approval, domain, reason)

    @server.tool()
    async def process(
        action: Annotated[
            Literal["list", "poll", "log", "write", "kill"],
            Field(
                description="list: all sessions; poll: status and new output; log: lines of output; "
                "write: send data to stdin; kill: stop it and its children."
            ),
        ],
        session_id: Annotated[
            str | None, Field(description="From exec; needed by every action but list.", max_length=64)
        ] = None,
        data: Annotated[
            str | None,
            Field(description="For write: text for stdin (add \\n to end a line).", max_length=MAX_STDIN_CHARS),
        ] = None,
        eof: Annotated[bool, Field(description="For write: close stdin after writing.")] = False,
        offset: Annotated[int, Field(description="For log: first line (0-based).", ge=0)] = 0,
        limit: Annotated[int, Field(description="For log: number of lines.", ge=1, le=5000)] = 200,
        wait_ms: Annotated[
            int, Field(description="For poll: wait up to this long for the command to end.", ge=0, le=MAX_WAIT_MS)
        ] = 0,
    ) -> ExecResult | LogSlice | SessionList:
        """Manage background commands started by `exec`: list, poll, log, write to stdin, or kill."""
        if action == "list":
            return table.listing()
        job = table.get(session_id)
        if job is None:
            raise ToolError(f"No session {quote(session_id)}; `process` with action=list shows the sessions.")
        if action == "poll":
            await job.wait(wait_ms / 1000)
            polled = processes.poll(job, sandboxed=sandboxed)
            refused = _refused(background_calls.get(job.id))
            if refused is not None:
                polled = polled.model_copy(update={"note": _join(polled.note, refused)})
            return await with_changes(polled, job)
        if action == "log":
            return processes.log(job, offset, limit)
        if action == "write":
            return _write(job, data, eof, sandboxed)
        job.kill()
        await job.wait(5)
        return await with_changes(processes.result(job, sandboxed=sandboxed, background=True), job)

    async def with_changes(result: ExecResult, job: Job) -> ExecResult:
        """`result` with the files its command changed, once the command has ended (reported once)."""
        if not job.done.is_set():
            return result
        record = await anyio.to_thread.run_sync(changes.finished, job.id)
        if record is None:
            return result
        return result.model_copy(update={"changed": changes.summary(record), "change_id": record.id})

    @server.tool()
    def read_file(
        path: Annotated[Path_, Field(description="File path, relative to the workspace or absolute inside it.")],
        offset: Annotated[int, Field(description="First line to read (1-based).", ge=1)] = 1,
        limit: Annotated[int, Field(description="How many lines.", ge=1, le=10_000)] = 2000,
    ) -> str:
        """Read a text file with line numbers (binary files are refused)."""
        return files.read(path, offset, limit)

    @server.tool()
    async def write_file(
        path: Annotated[Path_, Field(description="File path inside the workspace; parent folders are created.")],
        content: Annotated[FileText, Field(description="The complete new content of the file.")],
        approval: Annotated[ElicitationResult[Any], Resolve(personas.resolve_write)],
        overwrite: Annotated[
            bool, Field(description="Needed to replace a non-empty file with empty content (erasing it).")
        ] = False,
    ) -> str:
        """Create or replace a file atomically (a crash never leaves half a file); exec_undo can take it back.
        Changing a persona file (SOUL.md, USER.md, IDENTITY.md, ...) asks the owner first."""
        owner = personas.approved(approval, path, persona_edits.written(content))

        def write() -> str:  # in a thread, as a plain tool runs: undo's walks and lock must not hold up the loop
            with changes.recording("write_file", path, files.footprint(path, owner)) as recorded:
                done = files.write(path, content, overwrite, owner)
            return done + undo_hint(recorded)

        return await anyio.to_thread.run_sync(write)

    @server.tool()
    async def edit_file(
        path: Annotated[Path_, Field(description="File path inside the workspace.")],
        old_text: Annotated[FileText, Field(description="Exact text to replace, including whitespace.")],
        new_text: Annotated[FileText, Field(description="Replacement text.")],
        approval: Annotated[ElicitationResult[Any], Resolve(personas.resolve_edit)],
        replace_all: Annotated[bool, Field(description="Replace every occurrence instead of exactly one.")] = False,
    ) -> str:
        """Replace exact text in a file; fails if it is missing, or ambiguous without replace_all. Changing a
        persona file asks the owner first."""
        owner = personas.approved(approval, path, persona_edits.edited(old_text, new_text))

        def edit() -> str:  # in a thread, as write_file
            with changes.recording("edit_file", path, files.footprint(path, owner)) as recorded:
                done = files.edit(path, old_text, new_text, replace_all, owner)
            return done + undo_hint(recorded)

        return await anyio.to_thread.run_sync(edit)

    def undo_hint(recorded: list[Record]) -> str:
        return "".join(f" Undo with exec_undo call_id={record.id}." for record in recorded)

    @server.tool()
    def exec_changes(
        limit: Annotated[int, Field(description="How many of the newest changes to list.", ge=1, le=200)] = 20,
    ) -> ChangeList:
        """List what each exec, write_file, edit_file or exec_undo call changed in the workspace, newest first."""
        try:
            return listing(changes, limit)
        except UndoRefused as exc:
            raise ToolError(str(exc)) from exc

    @server.tool()
    def exec_undo(
        call_id: Annotated[
            str | None,
            Field(
                description="The call to undo (from exec_changes or a change_id); default: the newest change.",
                max_length=64,
            ),
        ] = None,
        force: Annotated[
            bool, Field(description="Undo even files that changed again since (those later changes are lost).")
        ] = False,
    ) -> UndoResult:
        """Put the files a call changed back as they were before it; the undo is itself a change, and can be undone."""
        try:
            return undo_result(changes, changes.undo(call_id, force))
        except UndoRefused as exc:
            raise ToolError(str(exc)) from exc

    @server.tool()
    def list_dir(
        path: Annotated[Path_, Field(description="Directory inside the workspace.")] = ".",
        depth: Annotated[int, Field(description="How many levels to descend.", ge=1, le=5)] = 1,
    ) -> str:
        """List a directory as a tree with file sizes."""
        return files.list(path, depth)

    @server.resource("exec://status")
    def status() -> str:
        """The effective policy, roots and sandbox state (for `hermitcrab doctor`)."""
        return json.dumps(
            {
                "security": policy.security,
                "ask": ask,
                "ask_given": policy.ask,  # differs from `ask` when on-leave was given without a sandbox
                "allow": sorted(checker.allowlist.paths),
                "approved": {"binaries": sorted(gate.store.binaries), "commands": sorted(gate.store.commands)},
                "approval_timeout_s": policy.approval_timeout_s,
                "roots": [str(r) for r in roots],
                "sandbox": "bwrap" if sandboxed else "none",
                "sandbox_problem": sandbox_problem,
                "network": network,
                "network_access": network_access(sandboxed, network),
                "allowed_domains": proxy.allowlist.entries if proxy is not None else None,
                "approved_domains": proxy.allowlist.approved if proxy is not None else None,
                "undo": {
                    "keep": changes.limits.keep,
                    "mb": changes.limits.mb,
                    "changes": len(changes.records),
                    "off": changes.off,
                },
            },
            indent=2,
        )

    return server


class StateInsideRoot(ValueError):
    """The server's state (approvals) would be inside a root, where commands and the file tools could reach it."""


def sandbox_note(sandboxed: bool, network: bool, proxy: NetworkProxy | None) -> str:
    """What the exec tool's description says about where commands run (the model should know before it tries)."""
    if not sandboxed:
        return " Commands are not sandboxed here; the network is reachable."
    reach = "have network access" if network else "have no network access (the server was not started with --network)"
    if proxy is not None:
        reach += (
            f" except to the allowed domains ({proxy.allowlist.describe()}) through a proxy that HTTP_PROXY and "
            "HTTPS_PROXY name; exec_allow_domain asks the user for another"
        )
    return f" Commands run in a sandbox: only the workspace is writable, /tmp is private, and they {reach}."


def network_access(sandboxed: bool, network: bool) -> str:
    """What exec://status says about the network commands reach."""
    if not sandboxed:
        return "the host's network: commands are not sandboxed, so the domain allowlist does not apply"
    if network:
        return "the host's network (--network): the domain allowlist does not apply"
    return "only the allowed domains, through the proxy (exec_allow_domain asks the user to add one)"


def _release(call: CallProxy | None, ended: threading.Event | None) -> None:
    if call is not None:
        call.release(ended)


def _refused(call: CallProxy | None) -> str | None:
    return call.note() if call is not None else None


def _write(job: Job, data: str | None, eof: bool, sandboxed: bool) -> ExecResult:
    if data is None and not eof:
        raise ToolError("Pass `data` to write (or eof=true to close stdin).")
    payload = (data or "").encode("utf-8")
    try:
        written = job.write(payload, eof)
    except OSError as exc:  # BrokenPipeError included: the process closed its stdin or ended
        raise ToolError(f"Session {job.id} no longer reads its input ({job.status}).") from exc
    result = processes.poll(job, sandboxed=sandboxed)
    note = f"Wrote {written} of {len(payload)} bytes" + ("; stdin closed." if eof else ".")
    if written < len(payload):
        note += " The process is not reading its input; retry later."
    return result.model_copy(update={"note": note})


def _join(*notes: str | None) -> str | None:
    return " ".join(n for n in notes if n) or None
