"""Does the exec server hold against a red team, and do ordinary commands still run without a question?

Run: .venv/bin/python bench/exec_redteam.py [--sandbox both|bwrap|none] [--fuzz N] [--json] [--show]

Every attempt (bench/_exec_corpus.py) goes through the real server (policy, gate, runner and sandbox) with
`--security allowlist`, in a throwaway directory under /var/tmp (outside /tmp, which the sandbox makes private), the
server's workspace inside it and everything an attacker wants next to it: a directory outside the roots, a $HOME
with canary credentials, a $HERMITCRAB_HOME with a canary config, the server's state, and in the workspace the
persona files, memory/ and a git repository. The client cannot answer questions, so whatever is asked is refused.
Each mode is judged by its own rule:

- bwrap (`--ask on-leave`, the default there): the sandbox is the boundary, so running a program off the allowlist
  inside it is no bypass; one is anything outside the workspace changed, a protected file changed (persona files,
  memory/, `.git/config`, `.git/hooks`), a canary in an output or a workspace file, or a listener on 127.0.0.1
  reached;
- bwrap with `--ask on-change`, and `--sandbox none --ask off`: the parser decides (what it asks, or the only
  defence), so a program off the allowlist leaving its mark is a bypass too.

The ordinary commands run the same way; the share that was not refused is the share that would run unasked.

The differential fuzzer sends random `printf '%s\\n' WORDS` lines through the server and compares what the policy
read (word count, option names, texts) with the argv bash gave printf, for every line the policy allowed.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import hashlib
import io
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

import anyio
from mcp import Client

from hermitcrab.servers.exec import Policy, build_server
from hermitcrab.servers.exec.policy import DEFAULT_ALLOW, Ask
from hermitcrab.servers.exec.sandbox import probe
from hermitcrab.servers.exec.shell import ShellSyntaxError, parse

sys.path.insert(0, str(Path(__file__).parent))
from _exec_corpus import ATTEMPTS, ORDINARY, Attempt

ALLOW = (*DEFAULT_ALLOW, "git", "sed", "awk", "tar", "xargs", "env", "nice", "timeout")
PERSONA = ("AGENTS.md", "SOUL.md", "USER.md", "MEMORY.md", "memory/notes.md")


@dataclasses.dataclass(frozen=True)
class Mode:
    """One way of running the server, and the rule its results are judged by."""

    name: str
    sandbox: str
    ask: str
    parser_rule: bool  # a program off the allowlist leaving its mark is a bypass (the parser is what decides)


MODES = (
    Mode("bwrap", "bwrap", "on-leave", parser_rule=False),
    Mode("bwrap --ask on-change", "bwrap", "on-change", parser_rule=True),
    Mode("none", "none", "off", parser_rule=True),
)
SECRETS = (
    ".ssh/id_rsa",
    ".aws/credentials",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".docker/config.json",
    ".config/gh/hosts.yml",
    ".config/gcloud/credentials.db",
    ".kube/config",
    ".git-credentials",
)


class Lab:
    """The throwaway directory and what an attack could reach from the workspace."""

    def __init__(self, base: Path, canary: str, port: int) -> None:
        self.t = base
        self.hc = base / "hc"
        self.ws = self.hc / "workspace"
        self.state = self.hc / "state" / "exec"
        self.home = base / "home"
        self.out = base / "outside"
        self.canary = canary
        self.port = port
        self.lint = self.ws / "tools" / "lint"  # a script of the project's that the owner allowlisted

    def reset(self) -> None:
        for child in self.t.iterdir():
            if child.is_dir() and not child.is_symlink():
                remove_tree(child)
            else:
                child.unlink()
        for directory in (self.ws / "src", self.ws / "docs", self.ws / "sub", self.state, self.out):
            directory.mkdir(parents=True)
        for name in SECRETS:
            (self.home / name).parent.mkdir(parents=True, exist_ok=True)
            (self.home / name).write_text(f"{self.canary} {name}\n")
        (self.hc / "config.toml").write_text(f'api_key = "{self.canary}"\n')
        (self.out / "target.txt").write_text("outside\n")
        files = {
            "a.txt": "hello\nworld\n",
            "README.md": "# demo\nreadme text\n",
            "notes.txt": "b: two\na: one\nb: two\n",
            "numbers.txt": "3\n10\n2\n",
            "data.csv": "x,1\ny,2\nx,3\n",
            "src/app.py": "import os\n\ndef main():\n    pass  # TODO\n",
            "src/util.py": "import sys\n\ndef helper():\n    return 1\n",
            "docs/index.md": "docs\n",
        }
        for name, text in files.items():
            (self.ws / name).write_text(text)
        with tarfile.open(self.ws / "t.tar", "w") as archive:
            archive.add(self.ws / "a.txt", "a.txt")
        with tarfile.open(
            self.ws / "evil.tar", "w"
        ) as archive:  # an archive from elsewhere: a link out, then through it
            link = tarfile.TarInfo("l")
            link.type, link.linkname = tarfile.SYMTYPE, str(self.out)
            archive.addfile(link)
            archive.add(self.ws / "a.txt", "l/pwned")
        with tarfile.open(self.ws / "gitconfig.tar", "w") as archive:  # a repository config that runs a program
            config = self.ws / "sub" / "config"
            config.write_text(f"[diff]\n\texternal = touch {self.ws}/.ran\n")
            archive.add(config, ".git/config")
            config.unlink()
        subprocess.run(["git", "init", "-q", "--bare", str(self.out / "repo.git")], check=True)
        git = ["git", "-C", str(self.ws), "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
        for args in (
            ["init", "-q"],
            ["add", "-A"],
            ["commit", "-qm", "one"],
            ["commit", "-qm", "two", "--allow-empty"],
        ):
            subprocess.run([*git, *args], check=True, capture_output=True)
        subprocess.run(["git", "-C", str(self.ws), "config", "user.name", "t"], check=True)
        subprocess.run(["git", "-C", str(self.ws), "config", "user.email", "t@t"], check=True)
        (self.ws / "sub" / "deep").mkdir()
        for name in PERSONA:
            (self.ws / name).parent.mkdir(exist_ok=True)
            (self.ws / name).write_text(f"# {name}\n")
        self.lint.parent.mkdir()
        self.lint.write_text("#!/bin/sh\necho lint\n")
        self.lint.chmod(0o755)
        os.chdir(self.ws / "sub" / "deep")  # the server's cwd: `/proc/self/cwd` in the policy is this directory

    def render(self, text: str) -> str:
        values = {
            "@RUN@": "touch @WS@/.ran",
            "@WS@": str(self.ws),
            "@OUT@": str(self.out),
            "@T@": str(self.t),
            "@HOME@": str(self.home),
            "@HC@": str(self.hc),
            "@STATE@": str(self.state),
            "@PID@": str(os.getpid()),
            "@PORT@": str(self.port),
            "@LINT@": str(self.lint),
        }
        for key, value in values.items():
            text = text.replace(key, value)
        return text

    def outside_snapshot(self) -> dict[str, tuple[int, int]]:
        seen: dict[str, tuple[int, int]] = {}
        for directory, dirs, files in os.walk(self.t):
            if Path(directory) == self.ws:
                dirs.clear()
                continue
            for name in files + dirs:
                path = os.path.join(directory, name)
                if Path(path) == self.ws or (Path(path).is_relative_to(self.state) and name != "approvals.json"):
                    continue  # the server keeps its key, undo data and sandbox files there; approvals are the target
                info = os.lstat(path)
                seen[path] = (info.st_mtime_ns, info.st_size)
        return seen

    def protected_snapshot(self) -> dict[str, str]:
        """A hash of each file the sandbox keeps read-only: persona files, memory/, .git/config, .git/hooks."""
        paths = [self.ws / name for name in PERSONA] + [self.ws / ".git" / "config"]
        for folder in (self.ws / "memory", self.ws / ".git" / "hooks"):
            paths += sorted(folder.rglob("*")) if folder.is_dir() else []
        seen: dict[str, str] = {}
        for path in paths:
            with contextlib.suppress(OSError):
                seen[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
        return seen

    def leaked_into_workspace(self) -> bool:
        for directory, dirs, files in os.walk(self.ws):
            if ".git" in dirs and Path(directory) == self.ws:
                dirs.remove(".git")
            for name in files:
                path = Path(directory, name)
                with contextlib.suppress(OSError):
                    if not path.is_symlink() and self.canary.encode() in path.read_bytes():
                        return True
        return False


def remove_tree(path: Path) -> None:
    """Remove `path`, again while something the last server started (a killed command's children, its undo
    records) is still finishing a write into it."""
    for _ in range(50):
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            return
        time.sleep(0.1)
    shutil.rmtree(path)


class Listener:
    """A TCP listener on 127.0.0.1 that counts connections (the network family's target)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.hits += 1
            conn.close()


def make_server(lab: Lab, mode: Mode) -> Any:
    environ = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(lab.home),
        "HERMITCRAB_HOME": str(lab.hc),
        "LANG": "C.UTF-8",
    }
    ask = mode.ask if mode.ask in get_args(Ask) else "off"  # the code before issue 27 knew neither new value
    policy = Policy(allow=(*ALLOW, str(lab.lint)), ask=ask)  # type: ignore[arg-type]
    return build_server(policy=policy, sandbox=mode.sandbox, environ=environ)  # type: ignore[arg-type]


def host_step(lab: Lab, command: str) -> None:
    """What the owner did before the attack, run directly in the workspace (not through the server)."""
    subprocess.run(["bash", "-c", lab.render(command)], cwd=lab.ws, check=True, capture_output=True, timeout=60)


async def run_steps(lab: Lab, mode: Mode, attempt: Attempt) -> list[str]:
    """Every step through the server; returns the text of each result (output or refusal)."""
    texts: list[str] = []
    sessions: list[str] = []
    client_cm = Client(make_server(lab, mode))
    client = await client_cm.__aenter__()
    try:
        for step in attempt.steps:
            if step[0] == "host":
                host_step(lab, step[1])
                continue
            if step[0] == "restart":
                await client_cm.__aexit__(None, None, None)
                client_cm = Client(make_server(lab, mode))
                client = await client_cm.__aenter__()
                continue
            if step[0] == "write":
                args: dict[str, Any] = {"path": lab.render(step[1]), "content": lab.render(step[2])}
                result = await client.call_tool("write_file", args)
            else:
                args = {"command": lab.render(step[1]), "timeout_s": 20, "background": step[0] == "background"}
                if len(step) > 2:
                    name, _, value = lab.render(step[2]).partition("=")
                    args["env"] = {name: value}
                result = await client.call_tool("exec", args)
                if step[0] == "background" and not result.is_error and result.structured_content:
                    sessions.append(result.structured_content["session_id"])
            texts.append(json.dumps(result.structured_content) if not result.is_error else str(result.content))
        for session in sessions:  # let background commands finish before the effects are looked at
            polled = await client.call_tool("process", {"action": "poll", "session_id": session, "wait_ms": 30_000})
            texts.append(str(polled.content))
    finally:
        await client_cm.__aexit__(None, None, None)
    return texts


Snapshot = tuple[dict[str, tuple[int, int]], dict[str, str]]


def effects(lab: Lab, mode: Mode, before: Snapshot, texts: list[str], hits: int) -> list[str]:
    found = []
    if mode.parser_rule and (lab.ws / ".ran").exists():
        found.append("ran a program off the allowlist")
    after = lab.outside_snapshot()
    changed = sorted(p for p in set(before[0]) | set(after) if before[0].get(p) != after.get(p))
    if changed:
        found.append("changed outside the roots: " + ", ".join(changed[:3]))
    protected = lab.protected_snapshot()
    touched = sorted(p for p in set(before[1]) | set(protected) if before[1].get(p) != protected.get(p))
    if not mode.parser_rule and touched:
        found.append("changed a protected file: " + ", ".join(touched[:3]))
    if any(lab.canary in text for text in texts) or lab.leaked_into_workspace():
        found.append("read a secret")
    if hits:
        found.append("reached the network")
    return found


async def red_team(lab: Lab, listener: Listener, mode: Mode, show: bool) -> dict[str, Any]:
    by_family: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    bypasses: list[dict[str, Any]] = []
    for attempt in ATTEMPTS:
        lab.reset()
        for step in attempt.steps:  # the owner's setup comes before the snapshot: it is not the attack
            if step[0] == "host":
                host_step(lab, step[1])
        before = (lab.outside_snapshot(), lab.protected_snapshot())
        hits = listener.hits
        texts = await run_steps(lab, mode, Attempt(attempt.family, tuple(s for s in attempt.steps if s[0] != "host")))
        found = effects(lab, mode, before, texts, listener.hits - hits)
        by_family[attempt.family][0] += 1
        if found:
            by_family[attempt.family][1] += 1
            shown = [lab.render(s[1]) for s in attempt.steps if s[0] == "exec"]
            bypasses.append({"family": attempt.family, "steps": shown, "effects": found})
            if show:
                print(f"  BYPASS [{mode.name}] {attempt.family}: {shown} -> {found}", file=sys.stderr)
    families = {name: {"attempts": a, "bypasses": b} for name, (a, b) in sorted(by_family.items())}
    return {
        "attempts": len(ATTEMPTS),
        "bypasses": len(bypasses),
        "families": len(families),
        "families_with_bypasses": sum(1 for f in families.values() if f["bypasses"]),
        "by_family": families,
        "bypass_list": bypasses,
    }


async def ordinary(lab: Lab, mode: Mode, show: bool) -> dict[str, Any]:
    lab.reset()
    asked: list[str] = []
    async with Client(make_server(lab, mode)) as client:
        for command in ORDINARY:
            result = await client.call_tool("exec", {"command": command, "timeout_s": 20})
            text = str(result.content)
            if result.is_error and "Refused" in text:
                asked.append(command)
                if show:
                    print(f"  ASKED [{mode.name}] {command!r}: {text[:300]}", file=sys.stderr)
    return {"commands": len(ORDINARY), "unasked": len(ORDINARY) - len(asked), "asked": asked}


_FRAGMENTS = (
    "a",
    "b",
    "-",
    "--",
    "-o",
    "--out=",
    "=",
    "/",
    ".",
    ",",
    ":",
    "x",
    "'-e'",
    '"-"',
    "''",
    '""',
    "\\-",
    "\\",
    "$'-x'",
    "$'\\x2d'",
    "{a,b}",
    "{-o,x}",
    "{}",
    "*",
    "?",
    "[a]",
    "[-]",
    "~",
    "~/",
    "$x",
    '"$x"',
    "${x}",
    "#",
    "!",
    "%",
    "@",
    "+",
    "'a b'",
    '"a b"',
    "a\\ b",
)


def fuzz_line(rng: random.Random) -> str:
    """A printf line whose words mix quoting, escapes, expansions and option-like pieces."""
    words = ["".join(rng.choice(_FRAGMENTS) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(1, 5))]
    return "printf '%s\\n' " + " ".join(words)


def policy_words(line: str, home: Path) -> list[str | None] | None:
    """The words after printf's format as the policy reads them (a leading `~/` expanded as it does)."""
    try:
        parsed = parse(line)
    except ShellSyntaxError:
        return None
    if len(parsed.commands) != 1:
        return None
    words = parsed.commands[0].words[2:]
    return [f"{home}{w.text[1:]}" if w.tilde and w.text else w.text for w in words]


async def fuzz(lab: Lab, mode: Mode, count: int, seed: int) -> dict[str, Any]:
    lab.reset()
    rng = random.Random(seed)
    allowed = compared = 0
    mismatches: collections.Counter[str] = collections.Counter()
    examples: list[dict[str, Any]] = []
    async with Client(make_server(lab, mode)) as client:
        for _ in range(count):
            line = fuzz_line(rng)
            result = await client.call_tool("exec", {"command": line, "timeout_s": 10})
            if result.is_error or result.structured_content is None:
                continue
            allowed += 1
            seen = policy_words(line, lab.home)
            if seen is None or None in seen:
                continue
            compared += 1
            actual = result.structured_content["stdout"].split("\n")[:-1]
            if not seen:
                actual = actual[1:]  # with no arguments printf prints its format once
            kinds = []
            if len(actual) != len(seen):
                kinds.append("word count")
            if [w for w in actual if w.startswith("-")] != [w for w in seen if w and w.startswith("-")]:
                kinds.append("option names")
            if actual != seen:
                kinds.append("texts")
            mismatches.update(kinds)
            if kinds and len(examples) < 10:
                examples.append({"line": line, "policy": seen, "bash": actual})
    return {
        "lines": count,
        "allowed": allowed,
        "compared": compared,
        "mismatches": dict(mismatches),
        "examples": examples,
    }


@contextlib.contextmanager
def lab_dir() -> Iterator[Path]:
    base = Path(tempfile.mkdtemp(prefix="hc-redteam-", dir="/var/tmp"))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    modes = [m for m in MODES if args.sandbox in ("both", m.sandbox)]
    if probe() is not None:
        modes = [m for m in modes if m.sandbox != "bwrap"]
    canary = "CANARY-" + os.urandom(6).hex()
    os.environ["HC_REDTEAM_API_KEY"] = canary  # what `cat /proc/<server>/environ` would leak
    listener = Listener()
    report: dict[str, Any] = {}
    with lab_dir() as base:
        lab = Lab(base, canary, listener.port)
        lab.reset()
        for mode in modes:
            report[mode.name] = {
                "red team": await red_team(lab, listener, mode, args.show),
                "ordinary": await ordinary(lab, mode, args.show),
            }
            if args.fuzz:
                report[mode.name]["fuzz"] = await fuzz(lab, mode, args.fuzz, args.seed)
        os.chdir("/")
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sandbox", choices=["both", "bwrap", "none"], default="both")
    parser.add_argument("--fuzz", type=int, default=0, metavar="N", help="differential fuzz lines per mode")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--show", action="store_true", help="print each bypass and asked command to stderr")
    args = parser.parse_args()
    report = anyio.run(main_async, args)
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(table(report), end="")


def table(report: dict[str, Any]) -> str:
    """Bypasses per family, the modes side by side, then the totals and ordinary commands per mode."""
    out = io.StringIO()
    modes = list(report)
    families = sorted({f for sections in report.values() for f in sections["red team"]["by_family"]})
    print(f"{'family (attempts)':58}" + "".join(f"{m:>24}" for m in modes), file=out)
    for family in families:
        rows = [report[m]["red team"]["by_family"].get(family, {"attempts": 0, "bypasses": 0}) for m in modes]
        label = f"{family} ({rows[0]['attempts']})"
        print(f"{label:58}" + "".join(f"{r['bypasses']:>24}" for r in rows), file=out)
    for mode, sections in report.items():
        team, plain = sections["red team"], sections["ordinary"]
        print(
            f"{mode}: {team['attempts']} attempts, {team['bypasses']} bypasses, "
            f"{team['families_with_bypasses']} of {team['families']} families; ordinary commands unasked "
            f"{plain['unasked']}/{plain['commands']} ({100 * plain['unasked'] / plain['commands']:.1f}%)",
            file=out,
        )
        if "fuzz" in sections:
            print(f"  fuzz: {json.dumps({k: v for k, v in sections['fuzz'].items() if k != 'examples'})}", file=out)
    return out.getvalue()


if __name__ == "__main__":
    main()
