"""Fixed prompt texts that more than one module must agree on."""

# First line of every summary request. The simulator recognises a summary request by it,
# so the heading must stay stable; the rest of the instruction lives in the compaction module.
SUMMARY_HEADING = "# Summarize this session"
# Said after the heading when the summary is a background notes update (session memory), not a
# compaction: the simulator and the benchmark tell the two apart by it.
NOTES_LINE = (
    "These are background session notes: they will replace the messages above when the "
    "context fills up, while the newest messages stay as they are. Write them in full, in the "
    "sections below."
)
