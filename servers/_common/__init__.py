"""Helpers shared by hermitcrab's MCP servers (and nothing else of ours)."""
