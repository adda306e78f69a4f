"""The agent: the model loop, its context decisions and its tool calls."""
