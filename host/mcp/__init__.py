"""Talking to MCP servers: the pool of client sessions, elicitation, the call clock and sub-agent listings."""
