"""MCP servers: their tools join the registry as ``mcp__<server>__<tool>``.

Nothing in this package imports the ``mcp`` SDK at module level; only a
connection that is actually started loads it, in a worker thread.
"""
