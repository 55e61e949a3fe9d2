"""Which domains sandboxed commands may reach through the network proxy, and asking the user to add one.

The list is the owner's `--allow-domain` entries plus the domains the user approved when the model called
`exec_allow_domain`; those are kept in `$state/domains.json` (0600, in the state directory commands cannot see), so
they survive a restart. `*.example.com` stands for example.com and every name under it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, Elicit
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

from hermitcrab.servers._common.arguments import quote
from hermitcrab.util.store import JsonFile

from . import approvals
from .approvals import Deadlines, Ruling

MAX_DOMAIN_CHARS = 253
MAX_REASON_CHARS = 500
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
_TO_ALLOW = "the user can start hermitcrab-exec with --allow-domain {domain}"


class DomainForm(BaseModel):
    """Allow or deny this domain."""

    decision: Literal["allow", "deny"] = Field(
        title="Decision",
        description="allow: sandboxed commands may reach it from now on (saved); deny: they may not.",
    )


def normalize(entry: str) -> str:
    """`entry` as an allowlist entry (a lower-case host name, `*.` and a domain, or an IP address); a ValueError
    says what is wrong with it."""
    text = entry.strip().lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(text.strip("[]")))
    except ValueError:
        pass
    name = text.removeprefix("*.")
    labels = name.split(".")
    if not name or len(name) > MAX_DOMAIN_CHARS or not all(_LABEL.match(label) for label in labels):
        raise ValueError(
            f"{quote(entry)} is not a domain: give a host name such as pypi.org, *.example.com for a domain and "
            "its subdomains, or an IP address"
        )
    if name != text and len(labels) < 2:
        raise ValueError(f"{quote(entry)} would allow a whole top-level domain; name one below it (*.example.com)")
    return text


class DomainAllowlist:
    """The domains allowed now: given at start (`--allow-domain`) and approved since (saved in `path`)."""

    def __init__(self, given: Iterable[str], path: Path) -> None:
        self.given = tuple(dict.fromkeys(normalize(entry) for entry in given))
        self._file = JsonFile(path)
        saved = self._file.load("starting with no approved domains").get("domains", [])
        self.approved = sorted({normalize(d) for d in saved if isinstance(d, str) and _valid(d)})

    @property
    def entries(self) -> list[str]:
        return list(dict.fromkeys([*self.given, *self.approved]))

    def allows(self, host: str) -> bool:
        """Whether a request to `host` may go out."""
        return self.covers(host.lower().rstrip(".").strip("[]"))

    def covers(self, entry: str) -> bool:
        """Whether every name `entry` (a host, or `*.` and a domain) stands for is allowed already."""
        name = entry.removeprefix("*.")
        exact = name == entry
        return any(
            _under(name, allowed[2:]) if allowed.startswith("*.") else exact and allowed == name
            for allowed in self.entries
        )

    def approve(self, domain: str) -> None:
        """Add `domain` (already normalized) and save the approved list."""
        self.approved = sorted({*self.approved, domain})
        self._file.save({"domains": self.approved})

    def describe(self) -> str:
        return ", ".join(self.entries) or "none"


def _under(host: str, domain: str) -> bool:
    return host == domain or host.endswith("." + domain)


def _valid(entry: str) -> bool:
    try:
        normalize(entry)
    except ValueError:
        return False
    return True


class DomainApprovals:
    """`exec_allow_domain`: the resolver that asks the user (approvals.ask) and the decision the tool acts on."""

    def __init__(self, allowlist: DomainAllowlist, timeout_s: float) -> None:
        self.allowlist = allowlist
        self.timeout_s = timeout_s
        self.deadlines = Deadlines()

    async def resolve(self, domain: str, reason: str, ctx: Context[Any, Any]) -> Ruling | BaseModel | Elicit[Any]:
        try:
            entry = normalize(domain)
        except ValueError as exc:
            return Ruling(decision="refused", reason=f"{exc}.")
        if self.allowlist.covers(entry):
            return Ruling(decision="allowed")
        message = "\n".join(
            [
                "The assistant wants its sandboxed commands to reach a domain through the network proxy.",
                "",
                f"Domain: {entry}" + (" (and every name under it)" if entry.startswith("*.") else ""),
                f"Reason: {approvals.one_line(reason)}",
                "Allow keeps it on the domain allowlist, also after a restart.",
            ]
        )
        key = approvals.question_key(entry, reason, None)
        return await approvals.ask(ctx, message, DomainForm, key, self.deadlines, self.timeout_s)

    def decide(self, outcome: ElicitationResult[Any], domain: str, reason: str) -> str:
        """Add the domain if the user allowed it; the tool's answer, or a ToolError saying why not."""
        entry = normalize(domain) if _valid(domain) else domain
        self.deadlines.forget(approvals.question_key(entry, reason, None))
        if not isinstance(outcome, AcceptedElicitation):
            raise ToolError(f"Refused: the user did not allow {entry} ({outcome.action}); do not retry it.")
        data = outcome.data
        if isinstance(data, DomainForm):
            if data.decision == "deny":
                raise ToolError(f"Refused: the user denied {entry}; do not retry it, ask what they want.")
            self.allowlist.approve(entry)
            return f"Allowed: sandboxed commands may now reach {entry} through the proxy (saved)."
        if not isinstance(data, Ruling):
            raise ToolError("Refused: the answer could not be understood.")
        if data.decision == "allowed":
            return f"{entry} is already allowed ({self.allowlist.describe()})."
        if data.decision == "ask-unavailable":
            raise ToolError(
                f"Refused: this MCP host cannot ask the user (no elicitation support); "
                f"{_TO_ALLOW.format(domain=entry)}."
            )
        if data.decision == "timed-out":
            raise ToolError(f"Refused: nobody answered about {entry} within {round(self.timeout_s)} s.")
        if data.decision == "declined":
            raise ToolError(f"Refused: the user did not allow {entry} ({data.reason}).")
        raise ToolError(f"Refused: {data.reason}")


def not_allowed(host: str, allowlist: DomainAllowlist) -> str:
    """The proxy's 403 for a domain off the list: what is allowed, and the two ways to add it."""
    return (
        f"refused {host}: it is not on the domain allowlist of hermitcrab-exec (allowed: {allowlist.describe()}). "
        f"To reach it, call the exec_allow_domain tool with the domain and a reason (the user is asked), or "
        f"{_TO_ALLOW.format(domain=host)}."
    )
