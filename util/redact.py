"""Mask credentials in text bound for a log: a log file outlives the request that held the secret, and is read by
whoever debugs, backs up or pastes it.

What counts as a credential is decided by shape, so it also catches what a provider or a server echoes back: the
userinfo and credential parameters of a URL (`…/mcp?api_key=…`), `Authorization` and other key headers, bearer
tokens, `api_key=…`/`"token": "…"` pairs, vendor keys such as `sk-…`, and Telegram bot tokens (`123456:AA…`,
which the Bot API puts in every URL's path).
"""

from __future__ import annotations

import logging
import re

MASK = "***"

_URL_USERINFO = re.compile(r"(?<=://)[^/\s@?#]+@")
_URL_PARAMETER = re.compile(
    r"(?i)([?&;](?:[\w.-]*[_-])?(?:api[_-]?key|apikey|key|token|secret|password|passwd|pwd|auth|sig|signature|code"
    r"|credential|credentials)=)[^&#\s\"'<>]+"
)
_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization|x-api-key|api-key|x-goog-api-key)([\"']?\s*[:=]\s*[\"']?)"
    r"(?:(?:bearer|basic|bot|token)\s+)?[^\s\"',;}]+"
)
_SCHEME = re.compile(r"(?i)\b(bearer|basic)\s+(?=[\w.~+/=-]*\d)[\w.~+/=-]{8,}")  # a digit: not prose
_PAIR = re.compile(
    r"(?i)\b((?:[\w-]*[_-])?(?:api[_-]?key|apikey|token|secret|password|passwd))([\"']?\s*[:=]\s*[\"']?)"
    r"[^\s\"'&,;}]+"
)
_VENDOR_KEY = re.compile(
    r"\bsk-[\w-]{8,}|\b(?:ghp|gho|ghs|ghu|github_pat|xox[abprs])[_-][\w-]{10,}|(?<!\d)\d{5,12}:[\w-]{30,}"
)


def redact(text: str) -> str:
    """`text` with every credential-shaped value replaced by `***`; names stay, so a reader still sees what it was."""
    text = _URL_USERINFO.sub(f"{MASK}@", text)
    text = _URL_PARAMETER.sub(rf"\1{MASK}", text)
    text = _HEADER.sub(rf"\1\2{MASK}", text)
    text = _SCHEME.sub(rf"\1 {MASK}", text)
    text = _PAIR.sub(rf"\1\2{MASK}", text)
    return _VENDOR_KEY.sub(MASK, text)


class RedactingFilter(logging.Filter):
    """Put on a handler, masks credentials in every record it writes, whichever logger (ours, httpx2's, uvicorn's,
    the SDK's) made it: the message with its arguments filled in, and the traceback's text."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed call: let the handler report it as it always does
            return True
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True
