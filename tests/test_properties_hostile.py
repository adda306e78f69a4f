"""Hostile content, checked on random sessions: whatever arrives, the session stays sendable.

Each example plays a few turns through the real agent loop (a scripted in-memory
provider stands in for the network) with content drawn from what breaks sessions:
empty and whitespace-only text, a reply that is one empty text block, non-finite
numbers in tool arguments (``1e999``, ``NaN``, ``-Infinity``), lone surrogates and
surrogate pairs split across two stream deltas, bytes that are not UTF-8 (decoded
as stdin, files and tool output are), NUL bytes and very long lines. After every
turn, and again after replaying the transcript:

- both adapters' requests encode as strict UTF-8 JSON and pass the simulator's
  validators (what the real APIs accept);
- every transcript line is strict JSON in strict UTF-8, and the replay equals the
  live conversation;
- what was streamed to the screen encodes, and equals the stored reply text.

A second property feeds hostile bytes through the decoding every input boundary uses.
``MINI_CLAUDE_FUZZ_EXAMPLES`` sets the examples per property, as in test_properties.py.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mini_claude import events as ev
from mini_claude.agent.loop import Agent
from mini_claude.conversation import (
    Message,
    TextBlock,
    ToolUseBlock,
    message_to_dict,
    user_text,
    validate,
)
from mini_claude.protocol import (
    ModelRequest,
    ModelTextDelta,
    ResponseComplete,
    StreamEvent,
    ToolOutput,
    ToolSpec,
    Usage,
)
from mini_claude.providers import anthropic as anthropic_adapter
from mini_claude.providers import openai as openai_adapter
from mini_claude.providers.arguments import parse_tool_input
from mini_claude.sanitize import clean_message, clean_text, decode_bytes
from mini_claude.settings import Settings
from mini_claude.simulator import anthropic_wire, openai_wire
from mini_claude.simulator.types import WireError
from mini_claude.simulator.wire import parse_strict_json
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import NOTHING_TO_ASK, Prepared, ToolContext
from mini_claude.tools.registry import ToolRegistry
from mini_claude.transcript import Transcript, load_session
from tests.test_properties import FUZZ, TIME_LIMIT, VERDICT_ONLY, MemoryStore

# ---- hostile pieces (drawn as whole pieces, so an example costs a few draws) ---------

TEXT_PIECES = (
    "",
    " ",
    "\n\t  \n",
    "plain words ",
    "\ud800",  # lone high surrogate
    "\udfff",  # lone low surrogate
    "\ud83d",  # the two halves of one emoji, which a stream may split
    "\ude00",
    "\U0001f600",
    "\x00",
    "\ufffd",
    "é\r\n",
    "L" * 5_000 + "\n",  # a very long line
    "\x1b[2K\x1b[1G",  # erase the line, back to its start
    "\x1b]0;title\x07",  # an OSC that sets the window title
    "\x9b2J",  # a one-byte C1 CSI
    "\u202eexe.txt",  # a bidi override
)
BYTE_PIECES = (
    b"hello ",
    b"\xff\xfe",
    b"\xed\xa0\x80",  # a surrogate encoded as UTF-8: not valid UTF-8
    b"\xc3",  # a sequence cut short
    b"\x00",
    b"\xf0\x9f\x98\x80",
    b"\n",
    b"x" * 3_000,
)
ARGUMENTS = (
    '{"n": 1}',
    '{"n": 1e999}',
    '{"n": -1e999}',
    '{"n": NaN}',
    '{"n": -Infinity}',
    '{"n": Infinity, "s": "x"}',
    '{"s": "\\ud800"}',
    '{"s": "\\ud83d\\ude00"}',
    '{"s": "\\u0000 nul"}',
    '{"s": "ok", "nested": [1.5, {"deep": 1e400}]}',
    "",
    "{not json",
    "[1, 2]",
    '{"deep": ' + "[" * 20_000 + "]" * 20_000 + "}",  # past any recursion limit
    '{"deep": ' + '{"a": ' * 3_000 + "1" + "}" * 3_000 + "}",
    '{"deep": ' + "[" * 20_000,  # never closed
)

# Joined ahead of time, so drawing a text is one draw: every piece, and every pair.
HOSTILE_TEXTS = TEXT_PIECES + tuple(a + b for a in TEXT_PIECES for b in TEXT_PIECES if a and b)
HOSTILE_BYTES = BYTE_PIECES + tuple(a + b for a in BYTE_PIECES for b in BYTE_PIECES)
hostile_text = st.sampled_from(HOSTILE_TEXTS)
hostile_bytes = st.sampled_from(HOSTILE_BYTES)


@st.composite
def split(draw: st.DrawFn, text: str) -> list[str]:
    """The text cut into stream deltas at arbitrary points (surrogate pairs included)."""
    if not text:
        return []
    cut = draw(st.integers(0, len(text)))  # one cut: between a surrogate pair, often enough
    return [part for part in (text[:cut], text[cut:]) if part]


@dataclass
class FakeReply:
    deltas: list[str]
    empty_block: bool  # send the empty text as a block of its own
    calls: list[list[str]]  # argument text of each tool call, in the pieces it streams in


@dataclass
class Turn:
    prompt: str
    rounds: list[FakeReply]  # tool rounds, then the final reply (no calls)
    outputs: list[str]  # what the tool returns, call after call


@st.composite
def replies(draw: st.DrawFn, with_calls: bool) -> FakeReply:
    text = draw(hostile_text)
    calls: list[list[str]] = []
    if with_calls:
        calls.append(draw(split(draw(st.sampled_from(ARGUMENTS)))))
    return FakeReply(draw(split(text)), draw(st.booleans()), calls)


PROMPTS = ("do it", "", " \n", "go \ud800", "\x00", "look at \U0001f600 " + "L" * 5_000)


@st.composite
def turns(draw: st.DrawFn) -> list[Turn]:
    played: list[Turn] = []
    for _ in range(draw(st.integers(1, 2))):
        prompt = draw(st.sampled_from(PROMPTS))
        rounds = [draw(replies(True)) for _ in range(draw(st.integers(0, 2)))]
        rounds.append(draw(replies(False)))
        calls = sum(len(r.calls) for r in rounds)
        outputs = [
            draw(st.one_of(hostile_text, hostile_bytes.map(decode_bytes))) for _ in range(calls)
        ]
        played.append(Turn(prompt, rounds, outputs))
    return played


# ---- a provider and a tool that say what the example drew -----------------------------


class ScriptedProvider:
    """Streams the drawn replies as an adapter would deliver them: deltas, then the message."""

    name = "scripted"

    def __init__(self) -> None:
        self.queue: list[FakeReply] = []
        self.calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        reply = self.queue.pop(0)
        for delta in reply.deltas:
            yield ModelTextDelta(delta)
        text = "".join(reply.deltas)
        blocks: list[Any] = [TextBlock(text)] if text or reply.empty_block else []
        for parts in reply.calls:
            self.calls += 1
            blocks.append(ToolUseBlock(f"call_{self.calls}", "echo", parse_tool_input(parts)))
        stop = "tool_use" if reply.calls else "end_turn"
        yield ResponseComplete(Message("assistant", blocks), stop, Usage(input_tokens=50))

    async def close(self) -> None:
        return None


ECHO = ToolSpec("echo", "Returns what it was given.", {
    "type": "object", "properties": {"n": {"type": "number"}, "s": {"type": "string"}},
})


@dataclass
class EchoTool:
    spec: ToolSpec = ECHO
    read_only: bool = True
    traits: ToolTraits = field(default_factory=lambda: ToolTraits(plan_mode=True))
    outputs: list[str] = field(default_factory=list)

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        return NOTHING_TO_ASK

    async def run(self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared) -> ToolOutput:
        return ToolOutput(self.outputs.pop(0) if self.outputs else "")


# ---- the checks ----------------------------------------------------------------------


def assert_both_apis_accept(messages: list[Message]) -> None:
    """Each adapter's body as the SDK sends it (strict UTF-8 JSON), then the validators."""
    assert not validate(messages), validate(messages)
    request = ModelRequest("sim-x", "system", messages, [ECHO], max_tokens=100)
    bodies = (
        (anthropic_wire, anthropic_adapter.build_request(request)),
        (openai_wire, openai_adapter.build_request(request)),
    )
    for wire, body in bodies:
        raw = json.dumps(body, ensure_ascii=False, allow_nan=False).encode("utf-8")
        try:
            wire.parse_request(parse_strict_json(raw), VERDICT_ONLY)
        except WireError as error:
            raise AssertionError(f"the API would answer 400: {error.message}") from None


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} in a transcript")


def assert_transcript_strict(path: Path) -> None:
    for line in path.read_bytes().decode("utf-8").splitlines():
        json.loads(line, parse_constant=_refuse)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    running = asyncio.new_event_loop()
    yield running
    running.close()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostile")


HOME = Path(tempfile.gettempdir()) / "mini-claude-hostile-home"  # never written


@TIME_LIMIT
@FUZZ
@given(script=turns())
def test_hostile_content_always_replays_into_requests_both_apis_accept(
    script: list[Turn], loop: asyncio.AbstractEventLoop, folder: Path
) -> None:
    provider = ScriptedProvider()
    tool = EchoTool()
    settings = Settings(home=HOME, model="sim-x", context_window=1_000_000)
    with tempfile.NamedTemporaryFile(dir=folder, suffix=".jsonl", delete=False) as handle:
        path = Path(handle.name)
    transcript = Transcript(path)
    agent = Agent(
        settings=settings, provider=provider, registry=ToolRegistry([tool]),
        tool_context=ToolContext(root=folder, settings=settings), system_prompt="system",
        transcript=transcript, store=MemoryStore(),
    )

    async def play(text: str) -> list[ev.Event]:
        return [event async for event in agent.turn(text)]

    try:
        for turn in script:
            provider.queue = list(turn.rounds)
            tool.outputs = list(turn.outputs)
            events = loop.run_until_complete(play(turn.prompt))
            if not turn.prompt.strip():
                assert isinstance(events[-1], ev.TurnError)  # refused; nothing recorded
                continue
            shown = "".join(e.text for e in events if isinstance(e, ev.TextDelta))
            shown.encode("utf-8")
            stored = [e.message.text for e in events if isinstance(e, ev.AssistantMessage)]
            # What the screen showed is what was stored (blank replies are not stored).
            assert "".join(shown.split()) == "".join("".join(stored).split())
            assert_both_apis_accept(agent.conversation.messages)
        transcript.close()
        assert_transcript_strict(path)
        replayed = load_session(path).conversation.messages
        assert [message_to_dict(m) for m in replayed] == [
            message_to_dict(m) for m in agent.conversation.messages
        ]
        if replayed:  # every prompt refused: nothing to send, nothing recorded
            assert_both_apis_accept(replayed)
    finally:
        transcript.close()
        path.unlink(missing_ok=True)


@TIME_LIMIT
@FUZZ
@given(data=hostile_bytes, prefix=hostile_text)
def test_hostile_bytes_from_any_input_become_sendable_text(data: bytes, prefix: str) -> None:
    """Stdin, files and tool output are decoded the same way; the result always sends."""
    text = clean_text(prefix + decode_bytes(data))
    text.encode("utf-8")
    message = clean_message(user_text(text))
    if not message.blocks:
        assert not text.strip()
        return
    assert_both_apis_accept([message])


# ---- control characters, deep nesting and damaged records -------------------------------

CONTROL_CHARS = st.sampled_from(
    [chr(c) for c in range(0x20)] + ["\x7f"] + [chr(c) for c in range(0x80, 0xA0)]
    + list("\u061c\u200e\u200f\u2028\u2029\u202a\u202b\u202c\u202d\u202e"
           "\u2066\u2067\u2068\u2069\ufeff")
)
SCREEN_TEXT = st.lists(st.one_of(CONTROL_CHARS, st.text(max_size=8)), max_size=30).map("".join)


@TIME_LIMIT
@FUZZ
@given(text=SCREEN_TEXT)
def test_visible_text_never_carries_a_control_character(text: str) -> None:
    from mini_claude.visible import has_hidden, visible

    controls = {chr(c) for c in [*range(0x20), *range(0x7F, 0xA0)]}
    for one_line in (False, True):
        shown = visible(text, one_line=one_line)
        allowed = set() if one_line else {"\n", "\t"}
        assert not (set(shown) & (controls - allowed)), repr(shown)
        assert not has_hidden(shown)  # no bidi override or other invisible format character
        assert visible(shown, one_line=one_line) == shown  # stand-ins are plain text


JSON_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
JSON_VALUE = st.recursive(
    JSON_LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
BLOCK_KINDS = st.sampled_from(
    ["text", "tool_use", "tool_result", "summary", "thinking", "redacted_thinking", "alien", 7]
)
FIELD_NAMES = st.sampled_from(
    ["text", "id", "name", "input", "tool_use_id", "content", "is_error", "state", "summary",
     "thinking", "signature", "data", "saved_path"]
)
DAMAGED_BLOCK = st.builds(
    lambda kind, fields: {"kind": kind, **fields},
    BLOCK_KINDS,
    st.dictionaries(FIELD_NAMES, JSON_VALUE, max_size=4),
)
DAMAGED_MESSAGE = st.fixed_dictionaries({
    "role": st.one_of(st.sampled_from(["user", "assistant", "system", ""]), JSON_LEAF),
    "blocks": st.one_of(st.lists(DAMAGED_BLOCK, max_size=3), JSON_VALUE),
})
DAMAGED_LINE = st.one_of(
    DAMAGED_MESSAGE.map(lambda m: json.dumps({"type": "message", "message": m})),
    JSON_VALUE.map(json.dumps),
    st.integers(1, 30_000).map(lambda depth: "[" * depth + "]" * depth),
    st.integers(1, 30_000).map(lambda depth: '{"type": "message", "message": '
                               + '{"a": ' * depth + "1" + "}" * depth + "}"),
    st.text(max_size=40),
)


@TIME_LIMIT
@FUZZ
@given(lines=st.lists(DAMAGED_LINE, min_size=1, max_size=6))
def test_damaged_transcript_records_never_break_a_resume(lines: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        transcript = Transcript.create(Path(folder), "s", {"cwd": folder})
        transcript.message(user_text("hello"))
        transcript.close()
        path = Path(folder) / "s.jsonl"
        with path.open("a", encoding="utf-8") as handle:
            handle.write("\n".join(line.replace("\n", " ") for line in lines) + "\n")
        loaded = load_session(path)
    messages = loaded.conversation.messages
    assert messages and messages[0].text == "hello"
    for message in messages:
        assert message.role in ("user", "assistant")
        for block in message.blocks:
            for name in ("text", "content", "name", "id", "thinking", "summary"):
                value = getattr(block, name, "")
                assert isinstance(value, str), (name, value)
            if isinstance(block, ToolUseBlock):
                assert isinstance(block.input, dict)
    json.dumps([message_to_dict(m) for m in messages])  # replayable as JSON


@TIME_LIMIT
@FUZZ
@given(depth=st.integers(1, 50_000), opener=st.sampled_from(["[", '{"a": ']))
def test_tool_arguments_of_any_depth_parse_or_are_refused(depth: int, opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    raw = '{"x": ' + opener * depth + ("1" if opener != "[" else "") + closer * depth + "}"
    value = parse_tool_input([raw])
    assert isinstance(value, dict)
    json.dumps(value)  # whatever came back is plain JSON
