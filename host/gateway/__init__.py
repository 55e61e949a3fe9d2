"""The gateway: per-session queues, the triggers that feed them, slash commands and delivery of answers."""
