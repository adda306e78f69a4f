"""Checkpoints: the content of every file before the agent changed it, for /rewind."""
