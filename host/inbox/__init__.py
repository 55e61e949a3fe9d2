"""Exactly once: the inbox log of accepted messages, their tries, dead letters and the one-`run` lock."""
