"""Fixed prompt texts that more than one module must agree on."""

# First line of every summary request. The simulator recognises a summary request by it,
# so the heading must stay stable; the rest of the instruction lives in the compaction module.
SUMMARY_HEADING = "# Summarize this session"
