"""One session: its wiring, its lock and what it keeps besides messages."""
