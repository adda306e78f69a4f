"""Invariants of the context pipeline, checked on random sessions and random settings.

Each example plays a generated session the way the agent does: results enter
through tier 0, every message goes to a transcript, and before every model call
one step runs (a tier alone, the whole pipeline, an idle gap, a full or read-only
disk; once per example, a compaction rebuild). After every step:

- the requests both adapters would build pass the simulator's validator (pairs
  whole and adjacent, roles in order, no empty content), and ``validate()`` agrees;
- the system prompt and tool schemas on the wire are byte-for-byte the first ones;
- the newest tool results and the newest user request are as they arrived;
- edits go one way: nothing cleared comes back, nothing grows;
- whatever left the context can be read back from the store;

the rebuild keeps its own promises (boundary first, the newest request verbatim when it
fits, kept results no larger and no less cleared), and at the end the transcript
replays to every original message and to the conversation as it stood.
A second property compares the meter's estimate with the simulator's real
tokenizer before every call.

``MINI_CLAUDE_FUZZ_EXAMPLES`` sets the examples per property (``make fuzz``
runs 20,000 and shrinks failures; the default run skips shrinking to stay fast).
"""

from __future__ import annotations

import itertools
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from mini_claude.agent.history import AdmittedResult, History
from mini_claude.context.compact import Compactor
from mini_claude.context.meter import MESSAGE_OVERHEAD_TOKENS, TokenMeter
from mini_claude.context.pipeline import ContextPipeline
from mini_claude.context.rebuild import Limits, Planner, RebuildError
from mini_claude.context.tier import PassContext, Tier
from mini_claude.conversation import (
    Block,
    Conversation,
    Message,
    ResultState,
    SummaryBlock,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    message_chars,
    message_to_dict,
    user_text,
    validate,
)
from mini_claude.project.instructions import ProjectInstructions, build_system_prompt
from mini_claude.protocol import ModelRequest, ToolOutput, ToolSpec
from mini_claude.providers import anthropic as anthropic_adapter
from mini_claude.providers import openai as openai_adapter
from mini_claude.settings import Settings
from mini_claude.simulator import anthropic_wire, openai_wire
from mini_claude.simulator.tokens import TokenCounter, shared_counter
from mini_claude.simulator.types import WireError
from mini_claude.tools.registry import default_registry
from mini_claude.transcript import Transcript, load_session
from tests.support.strategies import (
    Answer,
    IdMaker,
    Script,
    ToolRound,
    UserTurn,
    boundary_messages,
    raw_result,
    scripts,
    settings_for,
    text_of,
)

EXAMPLES = int(os.environ.get("MINI_CLAUDE_FUZZ_EXAMPLES", "2000"))
LONG_RUN = "MINI_CLAUDE_FUZZ_EXAMPLES" in os.environ
FUZZ = hypothesis_settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    phases=tuple(Phase) if LONG_RUN else tuple(p for p in Phase if p != Phase.shrink),
)
# Generous: a long run is meant to take its time; CI examples take milliseconds each.
TIME_LIMIT = pytest.mark.timeout(max(300, EXAMPLES // 10))

HOME = Path(tempfile.gettempdir()) / "mini-claude-properties-home"  # never written
SYSTEM = build_system_prompt(Path("/work/project"), ProjectInstructions((), ""))
TOOLS = default_registry().specs()
FIXED_CHARS = len(SYSTEM) + len(json.dumps([asdict(t) for t in TOOLS], ensure_ascii=False))
KEEP_INTACT = 3  # settings.keep_recent_results, which the strategies leave at its default
SUMMARY = "<the summary> FACT-1 the build uses make; src/app.py was edited."

Action = Literal["pipeline", "budget", "snip", "microcompact", "idle", "refuse", "rebuild"]
ACTIONS: tuple[Action, ...] = ("pipeline", "pipeline", "budget", "snip", "microcompact", "idle",
                               "refuse")
# What the server "counted", as a share of the effective window: drives the tiers
# across their thresholds without megabytes of text.
PRESSURES = (0.1, 0.3, 0.55, 0.65, 0.75, 0.9, 1.1)
GAPS = (1.0, 59.0, 299.0, 301.0, 3_600.0)
# One draw per model call: what runs before it, what the server counts, the pause after.
STEPS = st.sampled_from(tuple(itertools.product(ACTIONS, PRESSURES, GAPS)))
ESTIMATE_ACTIONS: tuple[Action, ...] = ("pipeline", "pipeline", "idle", "rebuild")
ESTIMATE_STEPS = st.sampled_from(tuple(itertools.product(ESTIMATE_ACTIONS, GAPS)))
PROTOCOLS = st.sampled_from(("anthropic", "openai"))


class MemoryStore:
    """A result store in memory; ``refusing`` plays a full or read-only disk."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.refusing = False

    def save(self, tool_name: str, content: str) -> str | None:
        if self.refusing:
            return None
        path = f"{HOME}/tool-results/session/{len(self.files) + 1}-{tool_name}.txt"
        self.files[path] = content
        return path


class VerdictOnly(TokenCounter):
    """Counts nothing: for checks that need the validator's verdict, not a token count."""

    def count(self, text: str) -> int:
        return 0

    def count_memoized(self, key: bytes, text_of: Callable[[], str]) -> int:
        return 0


VERDICT_ONLY = VerdictOnly()


# ---- the wire ------------------------------------------------------------------------


def model_request(
    settings: Settings, messages: list[Message], tools: list[ToolSpec] = TOOLS
) -> ModelRequest:
    return ModelRequest(settings.model, SYSTEM, messages, tools,
                        max_tokens=min(settings.max_output_tokens, settings.reserve))


def _stand_in(text: str) -> str:
    """One character for any text the validator would accept; empty and blank stay as are."""
    return text if not text.strip() else "x"


def _skeleton_block(block: Block) -> Block:
    if isinstance(block, TextBlock):
        return TextBlock(_stand_in(block.text))
    if isinstance(block, ToolResultBlock):
        return replace(block, content=_stand_in(block.content))
    if isinstance(block, SummaryBlock):
        return SummaryBlock("x")
    return block


# The tools as the validator's verdict sees them: defined, named, with an object schema.
SKELETON_TOOLS = [ToolSpec(t.name, "x", {"type": "object"}) for t in TOOLS]


def skeleton(messages: list[Message]) -> list[Message]:
    """The same history with every text shortened to what the validator's verdict depends on:
    roles, ids, block kinds and whether a text is empty or blank."""
    return [Message(m.role, [_skeleton_block(b) for b in m.blocks]) for m in messages]


def wire_prefixes(settings: Settings, messages: list[Message]) -> tuple[object, object]:
    """The system prompt and tool schemas exactly as each adapter puts them on the wire."""
    request = model_request(settings, messages)
    a_body = anthropic_adapter.build_request(request)
    o_body = openai_adapter.build_request(request)
    return [a_body.get("system"), a_body.get("tools")], [o_body["messages"][0], o_body.get("tools")]


def as_bytes(prefixes: tuple[object, object]) -> bytes:
    return json.dumps(prefixes, ensure_ascii=False).encode()


def real_tokens(
    settings: Settings,
    messages: list[Message],
    counter: TokenCounter,
    tools: list[ToolSpec] = TOOLS,
) -> tuple[int, int]:
    """Both adapters' requests through the simulator's validator: (anthropic, openai) tokens.

    A request the real API would answer with a 400 fails the example.
    """
    request = model_request(settings, messages, tools)
    try:
        a_parsed = anthropic_wire.parse_request(anthropic_adapter.build_request(request), counter)
        o_parsed = openai_wire.parse_request(openai_adapter.build_request(request), counter)
    except WireError as error:
        raise AssertionError(f"the API would answer 400: {error.message}") from None
    return a_parsed.prompt_tokens, o_parsed.prompt_tokens


def _signature(messages: list[Message]) -> tuple[object, ...]:
    """Everything the validator's verdict on a skeleton depends on, hashable."""
    return tuple(
        (m.role, tuple(
            (b.kind, b.id, b.name, json.dumps(b.input, sort_keys=True))
            if isinstance(b, ToolUseBlock)
            else (b.kind, b.tool_use_id, b.is_error, _stand_in(b.content))
            if isinstance(b, ToolResultBlock)
            else (b.kind, _stand_in(b.text) if isinstance(b, TextBlock) else "x")
            for b in m.blocks
        ))
        for m in messages
    )


# Verdicts already given, by signature: the validator and the adapters are pure functions
# of the skeleton, and sessions share most of their structure.
_VERDICTS: dict[tuple[object, ...], None] = {}


def prompt_tokens(
    settings: Settings, messages: list[Message], protocol: str, counter: TokenCounter
) -> int:
    """The real tokenizer's count of one adapter's request, as the simulator reports usage."""
    request = model_request(settings, messages)
    if protocol == "anthropic":
        body = anthropic_adapter.build_request(request)
        return anthropic_wire.parse_request(body, counter).prompt_tokens
    return openai_wire.parse_request(openai_adapter.build_request(request), counter).prompt_tokens


def check_on_the_wire(settings: Settings, messages: list[Message], *, whole: bool = False) -> None:
    """The validator's verdict on both requests, built from a skeleton of the history (the
    same verdict, given once per structure); with the real tool schemas when ``whole``."""
    assert not validate(messages), validate(messages)
    if whole:
        real_tokens(settings, skeleton(messages), VERDICT_ONLY)
        return
    signature = _signature(messages)
    if signature not in _VERDICTS:
        real_tokens(settings, skeleton(messages), VERDICT_ONLY, SKELETON_TOOLS)
        if len(_VERDICTS) > 100_000:
            _VERDICTS.clear()
        _VERDICTS[signature] = None


# ---- playing a session ---------------------------------------------------------------


@dataclass
class Seen:
    """The last state a tool result was seen in, to prove edits only go one way."""

    state: ResultState
    length: int
    content: str


@dataclass
class Player:
    """Plays a script through the agent's own history unit, with the checks each invariant
    needs; ``originals`` is the test's own record of what the tools returned."""

    settings: Settings
    script: Script
    transcript: Transcript
    store: MemoryStore = field(default_factory=MemoryStore)
    conversation: Conversation = field(default_factory=Conversation)
    admitted: dict[str, ToolResultBlock] = field(default_factory=dict)  # as tier 0 let it in
    baseline: dict[str, ToolResultBlock] = field(default_factory=dict)  # or a rebuild left it
    originals: list[Message] = field(default_factory=list)
    seen: dict[str, Seen] = field(default_factory=dict)
    prefixes: tuple[object, object] | None = None
    prefix_bytes: bytes = b""
    now: float = 1_000_000.0
    last_call_at: float | None = None
    rebuilds: int = 0
    limits: Limits | None = None
    root: Path = HOME / "project"  # where files to re-attach after a rebuild are read from

    def __post_init__(self) -> None:
        self.meter = TokenMeter(self.settings, FIXED_CHARS)
        self.pipeline = ContextPipeline(self.settings, self.store, self.meter)
        self.ids = IdMaker(self.script.id_prefix)
        self.history = History(self.transcript, self.conversation, self.store, self.settings)
        if self.script.summary_start:
            for message in boundary_messages(self.script.summary_start):
                self._append(message)

    @property
    def transcript_path(self) -> str:
        """Where a rebuild may point a cleared result when the store refuses it."""
        return str(self.transcript.path)

    def _append(self, message: Message) -> None:
        self.originals.append(message)
        self.history.append(message)

    def call_points(self) -> Iterator[None]:
        """Append the script's events; yield wherever the next model call would be made."""
        for event in self.script.events:
            if isinstance(event, UserTurn):
                self._append(user_text(event.text))
                yield None
            elif isinstance(event, Answer):
                self._append(Message("assistant", [TextBlock(event.text)]))
            elif isinstance(event, ToolRound):
                self._append_round(event)
                yield None

    def _append_round(self, event: ToolRound) -> None:
        uses = [ToolUseBlock(self.ids.next(), s.name, dict(s.input)) for s in event.steps]
        text = [TextBlock(event.text)] if event.text else []
        reply = self.history.append_reply(Message("assistant", [*text, *uses]))
        self.originals.append(reply)
        uses = reply.tool_uses
        results: list[AdmittedResult] = []
        for use, step in zip(uses, event.steps, strict=True):
            result = self.history.admit(use, ToolOutput(step.output, step.is_error))
            results.append(result)
            self.admitted[use.id] = self.baseline[use.id] = result.block
        self.history.close_results(uses, results)
        self.originals.append(
            Message("user", [raw_result(u, s) for u, s in zip(uses, event.steps, strict=True)])
        )

    # ---- steps -------------------------------------------------------------------------

    def run(self, action: Action) -> None:
        """One step before a model call."""
        conversation = self.conversation
        self.store.refusing = action == "refuse"
        if action in ("microcompact", "idle"):
            self.now += self.settings.microcompact_idle_seconds + 1
        tiers: dict[str, Tier] = {"budget": self.pipeline.budget, "snip": self.pipeline.snip,
                                  "microcompact": self.pipeline.microcompact}
        if action in tiers:
            utilization = self.meter.utilization(conversation)
            context = PassContext(self.meter, utilization, self.now, self.last_call_at)
            tiers[action].run(conversation, context)
        elif action == "rebuild":
            self.rebuild()
        else:
            self.pipeline.run(conversation, now=self.now, last_call_at=self.last_call_at)

    def rebuild(self) -> bool:
        """The pure part of a compaction: the history rebuilt around a summary."""
        meter = self.meter
        self.limits = Compactor(self.settings, meter, self.store).limits()
        planner = Planner(
            messages=list(self.conversation.messages),
            summary=SUMMARY,
            transcript_path=self.transcript_path,
            root=self.root,
            limits=self.limits,
            store=self.store,
            estimate=meter.estimate_messages,
            size_of=lambda m: meter.tokens_for(message_chars(m)) + MESSAGE_OVERHEAD_TOKENS,
        )
        try:
            rebuilt = planner.plan()
        except RebuildError:
            return False
        self.conversation.replace_all(rebuilt.messages)
        self.rebuilds += 1
        for block in (b for m in rebuilt.messages for b in m.blocks):
            if isinstance(block, ToolResultBlock):
                self.baseline[block.tool_use_id] = block
        self.history.record_compaction("auto", SUMMARY, 0, 0)
        return True

    def model_call(self, pressure: float) -> None:
        """Anchor the meter as the agent does on usage; the server "counted" ``pressure``."""
        tokens = max(1, int(pressure * self.settings.effective_window))
        self.meter.observe(tokens, self.conversation)
        self.last_call_at = self.now
        self.now += 1.0

    # ---- invariants --------------------------------------------------------------------

    def newest_user_text(self) -> str | None:
        for message in reversed(self.conversation.messages):
            if message.is_plain_user_message:
                return message.text
        return None

    def keeps_word_for_word(self, text: str) -> bool:
        """A rebuild promises the user's newest words verbatim when they fit its budget."""
        return self.limits is not None and len(text) <= self.limits.user_chars

    def holds_text(self, text: str) -> bool:
        return any(text in b.text for m in self.conversation.messages for b in m.blocks
                   if isinstance(b, TextBlock))

    def check_prefix(self, *, byte_for_byte: bool = False) -> None:
        """Equal at every step; compared as the bytes the SDK sends at the first and last."""
        prefixes = wire_prefixes(self.settings, self.conversation.messages)
        if self.prefixes is None:
            self.prefixes, self.prefix_bytes = prefixes, as_bytes(prefixes)
        assert prefixes == self.prefixes, "the system prompt or the tool schemas changed"
        if byte_for_byte:
            assert as_bytes(prefixes) == self.prefix_bytes, "the prefix bytes changed"

    def check_newest_intact(self, newest_user: str | None) -> None:
        """The newest results and the newest user request are as they arrived.

        Tier 1 may cut a newest result that is over the budget line (by design, its
        full text on disk); clearing one to a placeholder is never allowed.
        """
        if newest_user is not None:
            assert self.holds_text(newest_user), "the newest user message was lost"
        for ref in self.conversation.results[-KEEP_INTACT:]:
            block = self.conversation.result_at(ref)
            arrived = self.baseline[block.tool_use_id]
            if arrived.state == ResultState.CLEARED:
                continue  # cleared by an earlier rebuild: check_monotone covers it
            assert block.state != ResultState.CLEARED, "a newest result was cleared"
            if block.content != arrived.content:
                assert block.state == ResultState.BUDGETED, block.content[:200]
                # The store may refuse (a full disk); then the transcript, which holds every
                # original in full (checked by replay at the end), is where the text lives.
                assert block.saved_path in self.store.files or str(block.saved_path).endswith(
                    ".jsonl"
                ), "a budget cut lost its text"

    def check_monotone(self) -> None:
        for ref in self.conversation.results:
            block = self.conversation.result_at(ref)
            previous = self.seen.get(block.tool_use_id)
            if previous is not None:
                assert block.state >= previous.state, "a cleared or cut result came back"
                assert len(block.content) <= previous.length, "an edited result grew"
                if previous.state == ResultState.CLEARED:
                    assert block.content == previous.content, "a placeholder changed"
            self.seen[block.tool_use_id] = Seen(block.state, len(block.content), block.content)

    def check_nothing_lost(self) -> None:
        """Whatever left the context is in the store under the path the block names."""
        for ref in self.conversation.results:
            block = self.conversation.result_at(ref)
            arrived = self.admitted[block.tool_use_id]
            if block.content == arrived.content:
                continue
            if block.saved_path == self.transcript_path:
                continue  # cleared at a rebuild while the store refused: the transcript has it
            assert block.saved_path in self.store.files, "a result was cut with no copy kept"
            full = self.original_result(block.tool_use_id).content
            # When tier 0 had to truncate (the disk refused) the cut part is gone, and it
            # said so; a later save can only hold what was still in the context.
            assert self.store.files[block.saved_path] in (full, arrived.content)

    def original_result(self, tool_use_id: str) -> ToolResultBlock:
        return next(b for m in self.originals for b in m.blocks
                    if isinstance(b, ToolResultBlock) and b.tool_use_id == tool_use_id)

    def step(self, action: Action, pressure: float) -> None:
        """Run one step and check every invariant after it."""
        if action == "rebuild":
            self.check_rebuild()
        else:
            newest_user = self.newest_user_text()
            self.run(action)
            check_on_the_wire(self.settings, self.conversation.messages)
            self.check_prefix()
            self.check_newest_intact(newest_user)
        self.check_monotone()
        self.check_nothing_lost()
        self.model_call(pressure)

    def check_rebuild(self) -> None:
        """A compaction rebuild: valid, boundary first, newest request kept, no kept result
        larger or less cleared than before; a failed one changes nothing."""
        before = list(self.conversation.messages)
        newest = self.newest_user_text()
        old = {b.tool_use_id: b for m in before for b in m.blocks if isinstance(b, ToolResultBlock)}
        if not self.rebuild():
            assert self.conversation.messages == before, "a failed rebuild changed history"
            check_on_the_wire(self.settings, before, whole=True)
            return
        after = self.conversation.messages
        check_on_the_wire(self.settings, after, whole=True)
        self.check_prefix(byte_for_byte=True)
        assert after[0].role == "user" and isinstance(after[0].blocks[0], SummaryBlock)
        if newest is not None and self.keeps_word_for_word(newest):
            assert self.holds_text(newest), "the newest user message was not kept word for word"
        for block in (b for m in after for b in m.blocks if isinstance(b, ToolResultBlock)):
            assert block.state >= old[block.tool_use_id].state
            assert len(block.content) <= len(old[block.tool_use_id].content)


def replay_matches(path: Path, player: Player) -> None:
    """The transcript replays to every original message and to the conversation as it stands."""
    loaded = load_session(path)
    assert not loaded.warnings, loaded.warnings
    assert [message_to_dict(m) for m in loaded.original_messages] == [
        message_to_dict(m) for m in player.originals
    ], "the transcript lost or changed an original message"
    assert [message_to_dict(m) for m in loaded.conversation.messages] == [
        message_to_dict(m) for m in player.conversation.messages
    ], "replaying the transcript gives another conversation"


@pytest.fixture(scope="module")
def transcript_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("transcripts")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The files the generated sessions read, so a rebuild has something to re-attach."""
    root = tmp_path_factory.mktemp("project")
    for number, path in enumerate(("src/app.py", "src/util.py", "README.md", "tests/test_app.py")):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text_of("code", 1_500 * (number + 1)))
    return root


# ---- the properties ------------------------------------------------------------------


@TIME_LIMIT
@FUZZ
@given(settings=settings_for(HOME), script=scripts(), data=st.data())
def test_every_step_keeps_the_session_valid_whole_and_recoverable(
    transcript_folder: Path, project: Path, settings: Settings, script: Script,
    data: st.DataObject,
) -> None:
    handle, name = tempfile.mkstemp(suffix=".jsonl", dir=transcript_folder)
    os.close(handle)
    path = Path(name)
    transcript = Transcript(path)
    try:
        player = Player(settings, script, transcript, root=project)
        calls = sum(not isinstance(event, Answer) for event in script.events)
        rebuild_at = data.draw(st.integers(0, calls - 1), label="rebuild before call")
        for number, _ in enumerate(player.call_points()):
            action, pressure, gap = data.draw(STEPS, label="step, pressure, gap")
            player.step("rebuild" if number == rebuild_at else action, pressure)
            player.now += gap
    finally:
        transcript.close()
    try:
        replay_matches(path, player)
    finally:
        path.unlink()


def play_estimates(
    settings: Settings, script: Script, data: st.DataObject, project: Path, transcript: Transcript
) -> None:
    """Before each call, as the agent is: anchored on the real usage of the call before.

    Whenever the meter says the request fits the effective window, the real count may be
    at most the output reserve above the estimate, or the request could exceed the window.
    """
    player = Player(settings, script, transcript, root=project)
    protocol = data.draw(PROTOCOLS, label="protocol")
    counter = shared_counter()
    for _ in player.call_points():
        action, gap = data.draw(ESTIMATE_STEPS, label="step, gap")
        player.run(action)
        estimate = player.meter.estimate(player.conversation)
        real = prompt_tokens(settings, player.conversation.messages, protocol, counter)
        anchored = player.meter.is_anchored(player.conversation)
        if estimate <= settings.effective_window:
            assert real - estimate <= settings.reserve, (
                f"the meter said {estimate} tokens ({'anchored' if anchored else 'not anchored'})"
                f" but the {protocol} request has {real}; the output reserve is {settings.reserve}"
            )
        player.meter.observe(real, player.conversation)
        player.last_call_at = player.now
        player.now += gap


@TIME_LIMIT
@FUZZ
@given(settings=settings_for(HOME), script=scripts(max_rounds=2), data=st.data())
def test_the_estimate_stays_within_the_output_reserve_of_the_real_count(
    transcript_folder: Path, project: Path, settings: Settings, script: Script,
    data: st.DataObject,
) -> None:
    """Any text: prose and code, but also JSON, hex digests, CJK, emoji and logs, which take
    far more tokens per character."""
    handle, name = tempfile.mkstemp(suffix=".jsonl", dir=transcript_folder)
    os.close(handle)
    transcript = Transcript(Path(name))
    try:
        play_estimates(settings, script, data, project, transcript)
    finally:
        transcript.close()
        Path(name).unlink()
