"""Names a user gives sessions (``/rename``), kept beside the transcripts in one small file,
so listing sessions need not read each transcript to its end; and finding sessions by what
was said in them (``/resume TEXT``)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from mini_claude.atomic_files import atomic_write
from mini_claude.safe_read import read_limited
from mini_claude.transcript import SessionInfo

TITLES_NAME = "titles.json"
MAX_TITLE_CHARS = 120
SEARCHED_BYTES = 64 * 1024 * 1024  # a transcript larger than this is searched in its head


def load_titles(directory: Path) -> dict[str, str]:
    try:
        data = json.loads(read_limited(directory / TITLES_NAME))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str)}


def set_title(directory: Path, session_id: str, title: str) -> str:
    """Name a session (an empty title removes the name); returns the name kept."""
    titles = load_titles(directory)
    kept = " ".join(title.split())[:MAX_TITLE_CHARS]
    if kept:
        titles[session_id] = kept
    else:
        titles.pop(session_id, None)
    atomic_write(directory / TITLES_NAME, json.dumps(titles, ensure_ascii=False,
                                                     indent=1).encode("utf-8"), 0o600)
    return kept


def matching_sessions(sessions: Iterable[SessionInfo], text: str,
                      titles: dict[str, str]) -> list[SessionInfo]:
    """Sessions whose name, or any message text, holds ``text`` (any case)."""
    wanted = text.lower()
    return [s for s in sessions
            if wanted in titles.get(s.session_id, "").lower() or _mentions(s.path, wanted)]


def _mentions(path: Path, wanted: str) -> bool:
    """Whether the transcript's message records hold the text: read as JSON strings, so a
    word split by an escape is still found."""
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            read = 0
            for line in handle:
                read += len(line)
                if read > SEARCHED_BYTES:
                    return False
                if '"type": "message"' not in line and '"type":"message"' not in line:
                    continue
                if wanted in _texts(line):
                    return True
    except OSError:
        return False
    return False


def _texts(line: str) -> str:
    try:
        record = json.loads(line)
        blocks = record["message"]["blocks"]
    except (ValueError, KeyError, TypeError):
        return ""
    return "\n".join(str(b.get(k, "")) for b in blocks if isinstance(b, dict)
                     for k in ("text", "content")).lower()
