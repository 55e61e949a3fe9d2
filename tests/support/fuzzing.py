"""Tool fuzzing: arguments drawn from each tool's own input schema plus values that break it, run against an
in-process server, with a canary tree outside the roots that must come out untouched.

Shared by `tests/fuzz/` (a few hundred calls per server) and `bench/fuzz.py` (10,000).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import Tool

BIG = "x" * 10_000_000
CALL_LIMIT_S = 60
DEEP: Any = "bottom"
for _ in range(50):
    DEEP = {"a": [DEEP]}


@dataclass
class Tree:
    """The server's root (with symlinks leading out), its state dir, and the canary tree beside them."""

    root: Path
    state: Path
    canary: Path

    @classmethod
    def make(cls, base: Path) -> Tree:
        tree = cls(base / "root", base / "state", base / "canary")
        for folder in (tree.root / "memory", tree.canary / "memory", tree.canary / "deep"):
            folder.mkdir(parents=True)
        (tree.root / "MEMORY.md").write_text("# Memory\n\n- the canary test\n")
        (tree.root / "notes.txt").write_text("hello\n")
        for path in (tree.canary / "secret.md", tree.canary / "memory" / "2025-01-01.md", tree.canary / "deep" / "x"):
            path.write_text(f"canary {path.name}\n")
        (tree.root / "out").symlink_to(tree.canary)
        (tree.root / "memory" / "out.md").symlink_to(tree.canary / "secret.md")
        return tree

    def snapshot(self) -> dict[str, tuple[Any, ...]]:
        """Every entry of the canary tree and of the folder holding it, except the root and the state dir."""
        seen: dict[str, tuple[Any, ...]] = {}
        for entry in self.canary.parent.iterdir():
            if entry not in (self.root, self.state):
                seen.update(_walk(entry))
        return seen

    def paths(self) -> list[str]:
        """Path arguments that lead out of the root, every way we know."""
        canary = str(self.canary)
        return [
            "..",
            "../canary/secret.md",
            "../../../../../../etc/passwd",
            f"{canary}/secret.md",
            f"{canary}/memory/2025-01-01.md",
            "out/secret.md",
            "out/deep/x",
            "memory/out.md",
            "memory/../../canary/secret.md",
            "memory/../MEMORY.md",
            f"{self.root}/../canary/deep/x",
            "/etc/passwd",
            "/proc/self/mem",
            "/proc/self/environ",
            "/dev/zero",
            "/dev/stdin",
            "~/.ssh/id_rsa",
            str(self.state),
            "a/" * 200 + "b.md",
            "n" * 300 + ".md",
        ]


def _walk(path: Path) -> Iterator[tuple[str, tuple[Any, ...]]]:
    info = path.lstat()
    digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else ""
    yield str(path), (info.st_mode, info.st_size, info.st_mtime_ns, digest)
    if path.is_dir() and not path.is_symlink():
        for child in path.iterdir():
            yield from _walk(child)


def nasty_strings(tree: Tree) -> list[str]:
    return [
        "",
        " ",
        "\x00",
        "a\x00b.md",
        "\ud800",
        "\udfff lone",
        "\n" * 500,
        "é" * 3000,
        "$(touch /tmp/hermitcrab-fuzz-pwned)",
        "`id`; rm -rf ~",
        "-rf",
        "*",
        "{{task}}",
        "file:///etc/passwd",
        "javascript:alert(1)",
        "data:text/html,<h1>x</h1>",
        "chrome://settings",
        "view-source:http://127.0.0.1:1/",
        "ftp://127.0.0.1/x",
        "http://127.0.0.1:1/",
        "http://[::1",
        "* * * * * * *",
        "0 0 31 2 *",
        "2038-01-19T03:14:08Z",
        "9999-12-31T23:59:59+14:00",
        "Mars/Olympus_Mons",
        *tree.paths(),
    ]


def _strings(schema: dict[str, Any], nasty: list[str]) -> st.SearchStrategy[Any]:
    if schema.get("format") == "date-time":
        valid: st.SearchStrategy[str] = st.datetimes(timezones=st.just(dt.UTC)).map(dt.datetime.isoformat)
    else:
        valid = st.text(max_size=min(int(schema.get("maxLength", 40)), 40))
    limit = schema.get("maxLength")
    over = [st.just("y" * (int(limit) + 1))] if limit else []
    return st.one_of(valid, st.sampled_from(nasty), st.just(BIG), *over)


def _valid(schema: dict[str, Any], defs: dict[str, Any], nasty: list[str]) -> st.SearchStrategy[Any]:
    if "$ref" in schema:
        return _valid(defs[schema["$ref"].rsplit("/", 1)[1]], defs, nasty)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return st.one_of(*(_valid(part, defs, nasty) for part in schema[key]))
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "const" in schema:
        return st.just(schema["const"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of(*(_valid({**schema, "type": one}, defs, nasty) for one in kind))
    if kind == "string":
        return _strings(schema, nasty)
    if kind == "integer":
        return st.integers(schema.get("minimum"), schema.get("maximum")) | st.sampled_from([0, -1, 2**63, -(10**30)])
    if kind == "number":
        low, high = schema.get("minimum"), schema.get("maximum")
        return st.floats(low, high, allow_nan=False, allow_infinity=False) | st.sampled_from([-1.0, 1e308, 0.0])
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if kind == "array":
        return st.lists(_valid(schema.get("items", {}), defs, nasty), max_size=4)
    if kind == "object" and "properties" in schema:
        return _object(schema, defs, nasty)
    return _junk(nasty)


def _junk(nasty: list[str]) -> st.SearchStrategy[Any]:
    leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.sampled_from(nasty)
    return st.recursive(
        leaves, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3), max_leaves=8
    )


def _any(schema: dict[str, Any], defs: dict[str, Any], nasty: list[str]) -> st.SearchStrategy[Any]:
    """Mostly values the schema allows, often values that break it (wrong types, deep nesting, huge numbers)."""
    return st.one_of(
        _valid(schema, defs, nasty),
        _valid(schema, defs, nasty),
        _junk(nasty),
        st.sampled_from([DEEP, 10**400, -(2**64), [], {}, [BIG]]),
    )


def _object(schema: dict[str, Any], defs: dict[str, Any], nasty: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))
    base = st.fixed_dictionaries(
        {name: _any(spec, defs, nasty) for name, spec in properties.items() if name in required},
        optional={name: _any(spec, defs, nasty) for name, spec in properties.items() if name not in required},
    )
    mutation = st.sampled_from(["keep", "keep", "keep", "drop", "extra"])
    return st.tuples(base, mutation, st.sampled_from(sorted(required) or [""])).map(_mutate)


def _mutate(drawn: tuple[dict[str, Any], str, str]) -> dict[str, Any]:
    arguments, mutation, name = drawn
    if mutation == "drop":
        arguments.pop(name, None)
    elif mutation == "extra":
        arguments["unexpected_field"] = "surprise"
    return arguments


def arguments(tool: Tool, tree: Tree) -> st.SearchStrategy[dict[str, Any]]:
    schema = tool.input_schema
    return _object(schema, schema.get("$defs", {}), nasty_strings(tree))


@dataclass
class Report:
    """What the calls came to: outcomes by kind, and the calls that were defects (with their arguments)."""

    outcomes: Counter[str] = field(default_factory=Counter)
    defects: list[str] = field(default_factory=list)
    deaths: int = 0

    @property
    def calls(self) -> int:
        return sum(self.outcomes.values())


class Fuzzer:
    """Calls one in-process server's tools from a thread (hypothesis runs synchronously) and sorts the outcomes."""

    def __init__(self, portal: BlockingPortal, client: Client, tools: list[Tool], tree: Tree) -> None:
        self.portal = portal
        self.client = client
        self.tools = tools
        self.tree = tree
        self.report = Report()

    def call(self, name: str, args: dict[str, Any]) -> None:
        try:
            result = self.portal.call(self._call, name, args)
        except TimeoutError:
            self._defect("hang", name, args, f"no answer within {CALL_LIMIT_S} s")
            return
        except Exception as exc:  # the session broke: is the server still there?
            self._defect("exception", name, args, f"{type(exc).__name__}: {exc}"[:300])
            if not self.portal.call(self._alive):
                self.report.deaths += 1
            return
        if not result.is_error:
            self.report.outcomes["ok"] += 1
            return
        text = " ".join(getattr(block, "text", "") for block in result.content)
        if "internal error" in text or "Traceback" in text:
            self._defect("crash", name, args, text[:300])
        elif not text.strip() or len(text) > 2_000:
            self._defect("unclear error", name, args, text[:300])
        else:
            self.report.outcomes["tool error"] += 1

    async def _call(self, name: str, args: dict[str, Any]) -> Any:
        with anyio.fail_after(CALL_LIMIT_S):
            return await self.client.call_tool(name, args)

    async def _alive(self) -> bool:
        try:
            with anyio.fail_after(10):
                await self.client.list_tools()
        except Exception:  # any failure to answer a list means the server is gone
            return False
        return True

    def _defect(self, kind: str, name: str, args: dict[str, Any], detail: str) -> None:
        self.report.outcomes[kind] += 1
        shown = json.dumps(args, default=str, ensure_ascii=True)
        self.report.defects.append(f"{kind}: {name} {shown[:300]} -> {detail}")

    def run(self, calls: int, seed: int = 0) -> Report:
        strategies = {tool.name: arguments(tool, self.tree) for tool in self.tools}

        @settings(max_examples=calls, deadline=None, database=None, suppress_health_check=list(HealthCheck))
        @given(st.data())
        def one(data: st.DataObject) -> None:
            tool = data.draw(st.sampled_from(self.tools))
            self.call(tool.name, data.draw(strategies[tool.name]))

        one._hypothesis_internal_use_seed = seed  # type: ignore[attr-defined]  # reproducible runs
        one()
        return self.report


@contextmanager
def fuzzing(server: MCPServer, tree: Tree, skip: tuple[str, ...] = ()) -> Iterator[Fuzzer]:
    """A Fuzzer over `server`'s tools (less `skip`); on exit the canary tree must be as it was."""
    before = tree.snapshot()
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(Client(server)) as client:
        tools = [tool for tool in portal.call(client.list_tools).tools if tool.name not in skip]
        yield Fuzzer(portal, client, tools, tree)
    after = tree.snapshot()
    touched = sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))
    assert not touched, f"files outside the roots were touched: {touched[:10]}"
    assert not os.path.exists("/tmp/hermitcrab-fuzz-pwned"), "a fuzzed argument ran as a command"


def assert_clean(report: Report, calls: int) -> None:
    """No death, no crash or unclear error, and enough calls both succeeded and failed to have tested something."""
    assert report.deaths == 0
    assert not report.defects, "\n".join(report.defects[:10])
    assert report.calls == calls
    assert report.outcomes["tool error"] > calls // 5, report.outcomes
    assert report.outcomes["ok"] > 0, report.outcomes
