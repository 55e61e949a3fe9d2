"""Credential-shaped values are masked wherever a log line holds them; the rest of the line stays readable."""

from __future__ import annotations

import logging

import pytest

from hermitcrab.util.redact import RedactingFilter, redact


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'HTTP Request: POST https://mcp.example/mcp?api_key=k3y-v4lue&x=1 "HTTP/1.1 200 OK"',
            'HTTP Request: POST https://mcp.example/mcp?api_key=***&x=1 "HTTP/1.1 200 OK"',
        ),
        ("GET /hook?token=abc123&access_token=def456 HTTP/1.1", "GET /hook?token=***&access_token=*** HTTP/1.1"),
        ("cloning https://bob:hunter22@git.example/repo.git", "cloning https://***@git.example/repo.git"),
        ("headers {'Authorization': 'Bearer eyJhbGciOi.abc'}", "headers {'Authorization': '***'}"),
        ("x-api-key: sk-ant-api03-AbCdEf123456", "x-api-key: ***"),
        ("sent Bearer 0123456789abcdef to the server", "sent Bearer *** to the server"),
        ("HTTP 401: Incorrect API key provided: sk-proj-Ab12Cd34Ef56.", "HTTP 401: Incorrect API key provided: ***."),
        ('{"api_key": "plain-secret", "model": "gpt"}', '{"api_key": "***", "model": "gpt"}'),
        ("HERMITCRAB_MCP_TOKEN=s3cr3t password: pa55", "HERMITCRAB_MCP_TOKEN=*** password: ***"),
        ("a basic authentication scheme, Bearer tokens", "a basic authentication scheme, Bearer tokens"),
        (
            "POST https://api.telegram.org/bot1234567:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw/getUpdates",
            "POST https://api.telegram.org/bot***/getUpdates",
        ),
        ("at 12:30:45, 1234567:short is no token", "at 12:30:45, 1234567:short is no token"),
        (
            "used 1200 tokens of max_tokens 4096; task-runner started",
            "used 1200 tokens of max_tokens 4096; task-runner started",
        ),
    ],
)
def test_credentials_are_masked_and_the_rest_is_kept(text: str, expected: str):
    assert redact(text) == expected


def test_the_filter_masks_arguments_and_tracebacks_of_any_logger():
    handler = logging.StreamHandler()
    handler.addFilter(RedactingFilter())
    record = logging.LogRecord("httpx2", logging.INFO, __file__, 1, "HTTP Request: %s", ("/mcp?api_key=abc",), None)
    try:
        raise RuntimeError("provider said: bad key sk-live-0123456789")
    except RuntimeError as exc:
        record.exc_info = (type(exc), exc, exc.__traceback__)

    handler.filter(record)

    text = logging.Formatter().format(record)
    assert "HTTP Request: /mcp?api_key=***" in text
    assert "RuntimeError: provider said: bad key ***" in text
    assert "abc" not in text and "0123456789" not in text
