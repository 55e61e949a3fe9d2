"""Issue 27's families: without the sandbox the parser is the only defence, so each is refused (`--sandbox none
--ask off`, the real server over MCP), and each refused thing is shown to really run a program when bash or git gets
it directly (in a throwaway directory, with the same hardened environment the server gives commands).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from hermitcrab.servers.exec import Policy, build_server
from hermitcrab.servers.exec.environment import GIT_HARDENING, child_environment
from hermitcrab.servers.exec.sandbox import probe

ALLOW = ("ls", "cat", "echo", "grep", "git", "sed", "env", "nice", "timeout", "xargs", "find", "printf", "tee")
SEARCH_PATH = "/usr/local/bin:/usr/bin:/bin"  # no version-manager shims: `python3` is the system's
CANARY = "CANARY-27"


@dataclass(frozen=True)
class Lab:
    workspace: Path
    outside: Path
    home: Path
    ran: Path  # a program that ran leaves this mark

    def server(self, *allow: str, sandbox: Literal["none", "bwrap"] = "none") -> MCPServer:
        """`--sandbox none --ask off` by default; in bwrap the default `--ask on-leave` and no allowlist beyond the
        defaults (a question would be refused: the test client cannot answer one)."""
        environ = {"PATH": SEARCH_PATH, "HOME": str(self.home), "LANG": "C.UTF-8"}
        policy = Policy(allow=(*ALLOW, *allow), ask="off") if sandbox == "none" else Policy()
        state = self.workspace.parent / "state"
        return build_server(roots=[self.workspace], state=state, policy=policy, sandbox=sandbox, environ=environ)

    def bash(self, command: str) -> subprocess.CompletedProcess[str]:
        """`command` run by bash directly, with the environment the server gives commands."""
        env = child_environment({"PATH": SEARCH_PATH, "HOME": str(self.home)}, None)
        return subprocess.run(
            ["bash", "-c", command], cwd=self.workspace, env=env, capture_output=True, text=True, timeout=30
        )


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    workspace, outside, home = tmp_path / "ws", tmp_path / "outside", tmp_path / "home"
    for directory in (workspace / "tools", outside, home / ".ssh"):
        directory.mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(f"{CANARY}\n")
    (workspace / "a.txt").write_text("hello\n")
    git = ["git", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=workspace, check=True)
    for key, value in (("user.name", "t"), ("user.email", "t@t")):
        subprocess.run(["git", "config", key, value], cwd=workspace, check=True)
    subprocess.run(["git", "add", "a.txt"], cwd=workspace, check=True)
    subprocess.run(["git", "commit", "-qm", "one"], cwd=workspace, check=True)
    (workspace / "a.txt").write_text("changed\n")
    lint = workspace / "tools" / "lint"
    lint.write_text("#!/bin/sh\necho lint\n")
    lint.chmod(0o755)
    return Lab(workspace, outside, home, tmp_path / "ran")


def hook(path: Path, ran: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\ntouch {ran}\n")
    path.chmod(0o755)


def link_patch(name: str, target: Path) -> str:
    return (
        f"diff --git a/{name} b/{name}\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/{name}\n"
        f"@@ -0,0 +1 @@\n+{target}\n\\ No newline at end of file\n"
    )


def configured(key: str, value: str) -> Callable[[Lab], None]:
    def setup(lab: Lab) -> None:
        subprocess.run(["git", "config", key, value.format(ran=lab.ran)], cwd=lab.workspace, check=True)

    return setup


def target_repository(lab: Lab) -> None:
    subprocess.run(["git", "init", "-q", "--bare", "target.git"], cwd=lab.workspace, check=True)
    hook(lab.workspace / "target.git" / "hooks" / "post-receive", lab.ran)


def pre_commit_hook(lab: Lab) -> None:
    hook(lab.workspace / ".git" / "hooks" / "pre-commit", lab.ran)


def patch_to_outside(lab: Lab) -> None:
    (lab.workspace / "link.patch").write_text(link_patch("l", lab.outside))


def link_to_home(lab: Lab) -> None:
    (lab.workspace / "h").symlink_to(lab.home)


def link_to_proc(lab: Lab) -> None:
    (lab.workspace / "p").symlink_to("/proc/self")


def nothing(lab: Lab) -> None:
    del lab


# (family, setup, command with {ran}/{lint}, a fragment of the refusal)
REFUSED = [
    ("git config write", nothing, "git config diff.external 'touch {ran}' --get", "sets a value"),
    ("git config write", nothing, "git config --file --list diff.external 'touch {ran}'", "--file"),
    ("git config write", nothing, "git config --add diff.external 'touch {ran}'", "--add"),
    ("git config write", nothing, "git config -- diff.external 'touch {ran}'", "sets a value"),
    ("config key runs a program", configured("diff.external", "touch {ran}"), "git diff", "diff.external"),
    ("config key runs a program", configured("diff.x.textconv", "touch {ran}; cat"), "git log -p", "textconv"),
    ("config key runs a program", configured("filter.x.clean", "touch {ran}; cat"), "git add a.txt", "filter.x.clean"),
    ("config key runs a program", configured("include.path", "../inc.cfg"), "git status", "include.path"),
    ("config key runs a program", configured("core.worktree", "/tmp"), "git status", "core.worktree"),
    ("config key runs a program", configured("remote.o.url", "../elsewhere"), "git fetch o", "local repository"),
    ("local push", target_repository, "git push target.git HEAD:refs/heads/x", "local repository"),
    ("local push", target_repository, "git push file://{ws}/target.git HEAD:refs/heads/x", "local repository"),
    ("env strips the hardening", pre_commit_hook, "env -i git commit --allow-empty -qm x", "GIT_CONFIG"),
    (
        "env strips the hardening",
        pre_commit_hook,
        "env -u GIT_CONFIG_COUNT git commit --allow-empty -qm x",
        "GIT_CONFIG",
    ),
    ("env strips the hardening", pre_commit_hook, "env - git commit --allow-empty -qm x", "GIT_CONFIG"),
    ("env strips the hardening", pre_commit_hook, "nice env --unset=X git commit --allow-empty -qm x", "GIT_CONFIG"),
    ("here-document delimiter", nothing, "cat <<E\\OF\nEOF\ntouch {ran}\nE\\OF", "here-document delimiter"),
    ("here-document delimiter", nothing, "cat <<'E'OF\nEOF\ntouch {ran}\n'E'OF", "here-document delimiter"),
    ("builtin option computed", nothing, "test $'-v' 'a[$(touch {ran})]'", "computed at run time"),
    ("builtin option computed", nothing, "f=-v; [ \"$f\" 'a[$(touch {ran})]' ]", "computed at run time"),
    ("builtin option computed", nothing, "printf -v'a[$(touch {ran})]' x", "computed at run time"),
    ("function shadows a program", nothing, "touch {ran}; touch() {{ :; }}", "named like a builtin or a program"),
    ("function shadows a program", nothing, "eval 'touch {ran}'; eval() {{ :; }}", "named like a builtin"),
    ("command swapped", nothing, "echo 'touch {ran}' >> tools/lint; tools/lint", "may replace before it runs"),
    ("command swapped", nothing, "sed -i 's/echo lint/touch x/' tools/lint && {lint}", "may replace before it runs"),
    ("sed script", nothing, "sed 'y|[|x|;e touch {ran} #]|x|' a.txt", "`e`"),
    ("sed script", nothing, "sed 's/a/[/;e touch {ran} #]/' a.txt", "`e`"),
    ("link behind a wrapper", patch_to_outside, "env git apply link.patch && echo x > l/pwned", "symlink"),
    ("link behind a wrapper", patch_to_outside, "timeout 9 git apply link.patch; echo x > l/pwned", "symlink"),
    (
        "link behind a wrapper",
        patch_to_outside,
        "find . -maxdepth 0 -exec git apply link.patch ';'; echo > l/x",
        "link",
    ),
    ("recursive reader follows a link", link_to_home, f"grep -R {CANARY} .", "follows the symlink"),
    ("recursive reader follows a link", link_to_home, f"grep -Rn {CANARY}", "follows the symlink"),
    ("recursive reader follows a link", link_to_proc, "grep -R -a --include=environ PATH .", "follows the symlink"),
    ("xargs -P", nothing, "ls | xargs -P 0 -n 1 echo", "at once"),
    ("xargs -P", nothing, "ls | xargs --max-procs=200 -n 1 echo", "at once"),
]


@pytest.mark.parametrize(("family", "setup", "command", "reason"), REFUSED, ids=[r[2][:40] for r in REFUSED])
async def test_family_is_refused_without_the_sandbox(
    lab: Lab, family: str, setup: Callable[[Lab], None], command: str, reason: str
) -> None:
    setup(lab)
    line = command.format(ran=lab.ran, lint=lab.workspace / "tools" / "lint", ws=lab.workspace)
    async with Client(lab.server(str(lab.workspace / "tools" / "lint"))) as client:
        result = await client.call_tool("exec", {"command": line})
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error and "Refused" in text and reason in text, (family, text)
    assert not lab.ran.exists() and not (lab.outside / "pwned").exists()


# Each refused thing really runs a program (or reads or writes what it must not) when it gets past the parser.
PROOFS = [
    (configured("diff.external", "touch {ran}"), "git config core.pager x --get; git config core.pager; git diff"),
    (configured("diff.x.textconv", "touch {ran}; cat"), "echo '*.txt diff=x' > .gitattributes; git diff"),
    (configured("filter.x.clean", "touch {ran}; cat"), "echo '*.txt filter=x' > .gitattributes; git add a.txt"),
    (pre_commit_hook, "env -i git commit --allow-empty -qm x"),
    (pre_commit_hook, "env -u GIT_CONFIG_COUNT git commit --allow-empty -qm x"),
    (nothing, "cat <<E\\OF\nEOF\ntouch {ran}\nE\\OF"),
    (nothing, "test $'-v' 'a[$(touch {ran})]'"),
    (nothing, "printf -v'a[$(touch {ran})]' x"),
    (nothing, "touch {ran}; touch() {{ :; }}"),
    (nothing, "echo 'touch {ran}' >> tools/lint; tools/lint"),
    (nothing, "sed 'y|[|x|;e touch {ran} #]|x|' a.txt"),
]


@pytest.mark.parametrize(("setup", "command"), PROOFS, ids=[p[1][:40] for p in PROOFS])
def test_what_is_refused_would_run_a_program(lab: Lab, setup: Callable[[Lab], None], command: str) -> None:
    setup(lab)
    lab.bash(command.format(ran=lab.ran))
    assert lab.ran.exists()


def test_a_local_push_runs_the_targets_hooks_unless_local_transports_are_off(lab: Lab) -> None:
    target_repository(lab)
    env = child_environment({"PATH": SEARCH_PATH, "HOME": str(lab.home)}, None)
    index = list(GIT_HARDENING).index("protocol.file.allow")
    push = ["git", "push", "-q", "target.git", "HEAD:refs/heads/x"]
    assert subprocess.run(push, cwd=lab.workspace, env=env, capture_output=True, check=False).returncode != 0
    assert not lab.ran.exists()  # the pin holds even if the parser missed it
    env[f"GIT_CONFIG_VALUE_{index}"] = "always"
    subprocess.run(push, cwd=lab.workspace, env=env, capture_output=True, check=True)
    assert lab.ran.exists()  # the target's post-receive hook ran: it does not get GIT_CONFIG_COUNT


def test_links_and_recursive_readers_reach_outside(lab: Lab) -> None:
    patch_to_outside(lab)
    lab.bash("env git apply link.patch && echo x > l/pwned")
    assert (lab.outside / "pwned").exists()
    link_to_home(lab)
    assert CANARY in lab.bash(f"grep -R {CANARY} .").stdout


def test_xargs_without_a_cap_runs_every_command_at_once(lab: Lab) -> None:
    (lab.workspace / "started").mkdir()
    # each of 12 commands marks that it started, waits until all 12 have, and reports: only with no cap do all see 12
    script = "touch started/$0; while [ $(ls started | wc -l) -lt 12 ]; do sleep 0.05; done; echo all"
    done = lab.bash(f"seq 12 | timeout 20 xargs -P 0 -n 1 sh -c '{script}'")
    assert done.stdout.split() == ["all"] * 12


def test_the_global_and_system_config_are_not_read(lab: Lab) -> None:
    (lab.home / ".gitconfig").write_text(f"[diff]\n\texternal = touch {lab.ran}\n")
    lab.bash("git diff")
    assert not lab.ran.exists()
    assert lab.bash("git config --global x.y z").returncode != 0  # nothing to write to, not even as root


ORDINARY = [
    "git status",
    "git diff",
    "git diff --stat",
    "git log --oneline -3",
    "git add -A",
    "git commit -qm 'Update a'",
    "git show --stat HEAD",
    "git branch",
    "git rev-parse HEAD",
    "grep -rn def src",
    "grep -c import src/app.py",
    "sed -n 1,2p src/app.py",
    "sed -n '/def/p' src/app.py",
    "python3 src/app.py",
    "python3 -m unittest discover -s tests -q",
    "make -s",
    "ls -la",
    "cat README.md",
    "find . -name '*.py' -not -path './.git/*'",
    "wc -l src/app.py",
]


@pytest.mark.parametrize(
    "sandbox",
    [
        "none",
        pytest.param("bwrap", marks=pytest.mark.skipif(probe() is not None, reason="bubblewrap is not usable here")),
    ],
)
async def test_ordinary_developer_commands_run_unasked_in_the_sandbox_and_without_it(
    lab: Lab, sandbox: Literal["none", "bwrap"]
) -> None:
    (lab.workspace / "src").mkdir()
    (lab.workspace / "tests").mkdir()
    (lab.workspace / "README.md").write_text("# demo\n")
    (lab.workspace / "src" / "app.py").write_text("import os\n\ndef main():\n    print('app')\n\nmain()\n")
    (lab.workspace / "tests" / "test_app.py").write_text("def test_x():\n    assert True\n")
    (lab.workspace / "Makefile").write_text("all:\n\t@echo built\n")
    async with Client(lab.server("python3", "make", "wc", sandbox=sandbox)) as client:
        for command in ORDINARY:
            result = await client.call_tool("exec", {"command": command})
            assert not result.is_error, (command, result.content)
            assert result.structured_content is not None and result.structured_content["exit_code"] == 0, command
    assert os.path.exists(lab.workspace / ".git" / "index")
