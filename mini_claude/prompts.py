"""Fixed prompt texts that more than one module must agree on."""

# First line of every summary request. The simulator recognises a summary request by it,
# so the heading must stay stable; the rest of the instruction lives in the compaction module.
SUMMARY_HEADING = "# Summarize this session"
# Said after the heading when the summary is a background notes update (session memory), not a
# compaction: the simulator and the benchmark tell the two apart by it.
NOTES_LINE = (
    "These are background session notes: they will replace the messages above when the "
    "context fills up, while the newest messages stay as they are."
)
# How the notes are written: in full, or (once a summary heads the history) only what the
# messages after that summary add to it; the client merges the additions into the summary.
NOTES_IN_FULL = "Write them in full, in the sections below."
NOTES_ADDITIONS = (
    "The summary at the start of this conversation is the notes so far, and it stays as it "
    "is: write only what the messages after it add, under the same headings (leave out a "
    "heading with nothing new), without repeating a line the summary already has. List every "
    "file path, command and search those messages involve, and write the current work and "
    "the next step afresh."
)
