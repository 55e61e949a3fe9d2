"""Context windows of common models, so compaction starts at the right size without configuration."""

from __future__ import annotations

DEFAULT_WINDOW = 128_000

# Longest prefix wins; names are matched lowercased, after any `vendor/` prefix (OpenRouter, Ollama tags).
WINDOWS: dict[str, int] = {
    "gpt-3.5": 16_385,
    "gpt-4": 8_192,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.5": 128_000,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4": 200_000,
    "claude": 200_000,
    "gemini": 1_048_576,
    "llama3": 8_192,
    "llama3.1": 128_000,
    "llama3.2": 128_000,
    "llama3.3": 128_000,
    "llama-3.1": 128_000,
    "llama-3.3": 128_000,
    "qwen2.5": 32_768,
    "qwen3": 40_960,
    "mistral": 32_768,
    "mistral-large": 128_000,
    "mixtral": 32_768,
    "gemma2": 8_192,
    "gemma3": 128_000,
    "phi3": 4_096,
    "phi4": 16_384,
    "deepseek": 128_000,
    "command-r": 128_000,
}


def context_window(model: str) -> int:
    """The model's context window in tokens; 128,000 for a model this table does not know."""
    name = model.lower().rsplit("/", 1)[-1]
    matches = [prefix for prefix in WINDOWS if name.startswith(prefix)]
    return WINDOWS[max(matches, key=len)] if matches else DEFAULT_WINDOW
