"""Lifecycle hooks: the owner's own code, run when the gateway or a turn reaches a named point (docs/hooks.md)."""
