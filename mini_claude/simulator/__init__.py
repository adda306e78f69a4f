"""A real model server on 127.0.0.1 for tests, the demo and the benchmark.

Speaks the Anthropic Messages and OpenAI Chat Completions wire formats
(streaming included), validates requests as strictly as the real APIs,
counts tokens with a real tokenizer, accounts prompt caching, injects faults,
and plays scripted or exploring model behaviour.
"""

from mini_claude.simulator.clock import SimClock
from mini_claude.simulator.faults import FAULT_KINDS, Fault, FaultKind
from mini_claude.simulator.policies import ExplorePolicy, FunctionPolicy, ScriptedPolicy
from mini_claude.simulator.server import Simulator
from mini_claude.simulator.summary import FACT_PATTERN, SummaryStyle, build_summary
from mini_claude.simulator.tokens import count_tokens
from mini_claude.simulator.types import (
    Policy,
    RecordedRequest,
    Reply,
    SimBlock,
    SimConversation,
    SimMessage,
    TextPart,
    ToolCall,
    ToolResultPart,
    ToolUsePart,
)

__all__ = [
    "FACT_PATTERN",
    "FAULT_KINDS",
    "ExplorePolicy",
    "Fault",
    "FaultKind",
    "FunctionPolicy",
    "Policy",
    "RecordedRequest",
    "Reply",
    "ScriptedPolicy",
    "SimBlock",
    "SimClock",
    "SimConversation",
    "SimMessage",
    "Simulator",
    "SummaryStyle",
    "TextPart",
    "ToolCall",
    "ToolResultPart",
    "ToolUsePart",
    "build_summary",
    "count_tokens",
]
