"""Context windows per model, their overrides, and the compaction budget derived from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermitcrab.host.config import AgentSettings, load_settings
from hermitcrab.host.errors import ConfigError
from hermitcrab.host.turn.compaction import Budget
from hermitcrab.host.turn.windows import context_window


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("claude-sonnet-4-5", 200_000),
        ("gpt-4o-mini", 128_000),
        ("gpt-4.1-mini", 1_047_576),
        ("gpt-4", 8_192),
        ("meta-llama/llama3.1:8b", 128_000),
        ("qwen2.5:7b", 32_768),
        ("some-new-model", 128_000),
    ],
)
def test_common_models_have_their_window(model: str, window: int):
    assert context_window(model) == window


def test_the_smallest_configured_window_wins_and_the_environment_overrides_it(tmp_path: Path):
    (tmp_path / "config.toml").write_text(
        '[[providers]]\nkind = "anthropic"\nmodel = "claude-sonnet-4-5"\n\n'
        '[[providers]]\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "qwen2.5:14b"\n'
    )
    home = {"HERMITCRAB_HOME": str(tmp_path)}

    assert load_settings(home).agent.context_window_tokens == 32_768
    overridden = load_settings({**home, "HERMITCRAB_CONTEXT_WINDOW": "16_000", "HERMITCRAB_RESERVE_TOKENS": "0"})
    assert (overridden.agent.context_window_tokens, overridden.agent.reserve_tokens) == (16_000, 0)
    (tmp_path / "config.toml").write_text("[agent]\ncontext_window_tokens = 50000\nreserve_tokens = 5000\n")
    assert (load_settings(home).agent.context_window_tokens, load_settings(home).agent.reserve_tokens) == (
        50_000,
        5_000,
    )
    with pytest.raises(ConfigError, match="HERMITCRAB_CONTEXT_WINDOW"):
        load_settings({**home, "HERMITCRAB_CONTEXT_WINDOW": "lots"})


def test_the_budget_shrinks_in_proportion_for_small_windows():
    large = Budget.of(AgentSettings(context_window_tokens=200_000))
    small = Budget.of(AgentSettings(context_window_tokens=8_000))

    assert (large.threshold, large.keep_recent, large.flush_at) == (180_000, 20_000, 176_000)
    assert (small.reserve, small.keep_recent, small.flush_margin) == (2_000, 2_000, 750)
    assert small.flush_at < small.threshold < small.window
