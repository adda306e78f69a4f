"""mini-claude: a terminal coding agent that keeps long sessions inside the context window."""

__version__ = "0.1.0"
