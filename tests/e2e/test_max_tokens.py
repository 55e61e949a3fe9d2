"""The answer's length limit on the wire: `max_tokens` to an OpenAI-compatible server, `max_completion_tokens` when a
profile says so (and by default for api.openai.com, whose reasoning models refuse the older field)."""

from __future__ import annotations

from pathlib import Path

from hermitcrab.host.config import ProviderProfile
from hermitcrab.host.providers.openai import max_tokens_field
from tests.support.fake_llm import NO_PROVIDER_ENV, openai_text


def _profile_config(home: Path, url: str, extra: str) -> None:
    (home / "config.toml").write_text(
        f'[[providers]]\nbase_url = "{url}"\nmodel = "fake-model"\napi_key = "sk-x"\nmax_tokens = 777\n{extra}'
    )


def test_a_profile_can_send_max_completion_tokens(hermitcrab, llm, hermitcrab_home, desktop_config):
    _profile_config(hermitcrab_home, llm.url, 'max_tokens_field = "max_completion_tokens"\n')
    llm.enqueue(openai_text("short"))

    result = hermitcrab("ask", "--mcp-config", str(desktop_config()), "hi", env=NO_PROVIDER_ENV)

    assert result.returncode == 0, result.stderr
    assert llm.requests[0]["max_completion_tokens"] == 777 and "max_tokens" not in llm.requests[0]


def test_another_server_gets_max_tokens_by_default(hermitcrab, llm, hermitcrab_home, desktop_config):
    _profile_config(hermitcrab_home, llm.url, "")
    llm.enqueue(openai_text("short"))

    assert hermitcrab("ask", "--mcp-config", str(desktop_config()), "hi", env=NO_PROVIDER_ENV).returncode == 0
    assert llm.requests[0]["max_tokens"] == 777 and "max_completion_tokens" not in llm.requests[0]


def test_the_default_rule_picks_the_newer_field_only_for_openai_itself():
    assert max_tokens_field(ProviderProfile(base_url="https://api.openai.com/v1")) == "max_completion_tokens"
    assert max_tokens_field(ProviderProfile(base_url="http://localhost:11434/v1")) == "max_tokens"
    forced = ProviderProfile(base_url="https://api.openai.com/v1", max_tokens_field="max_tokens")
    assert max_tokens_field(forced) == "max_tokens"
