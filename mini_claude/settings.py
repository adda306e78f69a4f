"""Every tunable number in one place: defaults, then environment, then flags.

Defaults are the numbers the context pipeline was designed around; each has an
environment override named in ``ENV_NAMES`` so a user can move any threshold
without touching code.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from mini_claude.models import (
    DEFAULT_MODELS,
    DEFAULT_PROVIDER,
    PROVIDERS,
    known_window,
    provider_row,
    resolve_model,
    window_for_model,
)

ProviderName = str  # a key of models.PROVIDERS


# What a project's `.env` may do with a setting (project/dotenv_rule.py applies it); every
# field of Settings declares one, so a new setting is one line and cannot go unclassified.
Policy = Literal["allowed", "stricter", "own key", "refused", "learnt"]
Stricter = Literal["higher", "lower"]  # which way a value is stricter
POLICY, STRICTER_WHEN = "project_env", "stricter_when"
T = TypeVar("T")


def policy(word: Policy, stricter_when: Stricter | None = None) -> dict[str, str | None]:
    """A field's metadata: its project `.env` policy."""
    return {POLICY: word, STRICTER_WHEN: stricter_when}


def _setting(default: T, word: Policy, stricter_when: Stricter | None = None,
             secret: bool = False) -> T:
    return field(default=default, repr=not secret, metadata=policy(word, stricter_when))


def allowed(default: T, *, secret: bool = False) -> T:
    """Tuning a project may set: it changes no guard and touches no other session's data."""
    return _setting(default, "allowed", secret=secret)


def per_provider(word: Policy, *, secret: bool = False) -> Mapping[str, str]:
    """A value each provider has its own of, by provider name (empty: none set)."""
    made: Mapping[str, str] = field(default_factory=dict, repr=not secret,
                                    metadata=policy(word))
    return made


def stricter(default: T, when: Stricter) -> T:
    """A project may set it only to a value stricter than the user's."""
    return _setting(default, "stricter", when)


def own_key(default: T) -> T:
    """Where the user's key goes: a project may set it only with its own key."""
    return _setting(default, "own key")


def refused(default: T) -> T:
    """Never from a project's `.env`."""
    return _setting(default, "refused")


def learnt(default: T, *, secret: bool = False) -> T:
    """Learnt at run time, never configured from the environment."""
    return _setting(default, "learnt", secret=secret)




class SettingsError(ValueError):
    """A setting has a value we cannot use; the message names the variable."""


@dataclass(frozen=True)
class Settings:
    """Resolved configuration for one session."""

    provider: str = own_key(DEFAULT_PROVIDER)  # a key of models.PROVIDERS
    model: str = allowed(DEFAULT_MODELS[DEFAULT_PROVIDER])
    # The model while the permission mode is plan (``opusplan``: opus plans, sonnet works).
    plan_model: str | None = learnt(None)
    # The user's ``apiKeyHelper`` (Claude Code's settings): run for the key, again on a 401.
    api_key_helper: str | None = learnt(None, secret=True)
    # Where a turn goes on when the model is overloaded or not found (``--fallback-model``).
    fallback_model: str | None = allowed(None)
    compact_model: str | None = allowed(None)
    context_window: int | None = allowed(None)  # None: from the model table
    # What the provider's Models API said about a model the table does not know
    # (filled in by the session, never from the environment).
    reported_window: int | None = learnt(None)
    window_reported_by: str | None = learnt(None)
    home: Path = field(default_factory=lambda: Path.home() / ".mini-claude",
                       metadata=policy("refused"))
    # Each provider's key and endpoint, by its name in models.PROVIDERS, read from the
    # variables its row names (see PER_PROVIDER): a new provider needs no field here.
    api_keys: Mapping[str, str] = per_provider("allowed", secret=True)
    base_urls: Mapping[str, str] = per_provider("own key")

    # Thinking: 0 = off, else the Anthropic budget_tokens (models with adaptive thinking
    # think adaptively instead, steered by ``effort``); OpenAI reasoning models take
    # ``reasoning_effort``.
    thinking_tokens: int = allowed(0)
    effort: str | None = allowed(None)  # low | medium | high | xhigh | max
    # none | minimal | low | medium | high | xhigh | max
    reasoning_effort: str | None = allowed(None)
    reported_thinking: str | None = learnt(None)  # "adaptive" | "enabled", from the Models API

    # Output and accounting
    max_output_tokens: int = allowed(8_192)
    output_reserve: int = allowed(20_000)
    chars_per_token: float = allowed(4.0)

    # Tier 0: at tool execution
    persist_threshold_bytes: int = allowed(30 * 1024)
    truncate_chars: int = allowed(50_000)
    preview_lines: int = allowed(200)
    preview_bytes: int = allowed(2_048)

    # read_file shows at most this share of the effective window per call (and never more
    # than tier 0 would let through uncut); a longer file says where to read on. Its output is
    # never saved to a file: the file itself is the copy on disk.
    read_page_window_share: float = allowed(0.35)

    # Tier 1: budget
    budget_low_pct: float = allowed(0.50)
    budget_low_chars: int = allowed(30_000)
    budget_high_pct: float = allowed(0.70)
    # What a cut keeps is what the next steps see of a result, and they mostly work on what
    # the newest reads showed: text a cut drops that they need is read back, written to the
    # prompt cache a second time along with the calls that page it. So the tighter step
    # still keeps some 5,000 tokens of a result.
    budget_high_chars: int = allowed(20_000)
    # On small windows a result may keep at most this share of the effective window, so the
    # newest results that no tier touches still leave room (tokens ~ chars / 4). The same
    # share at both steps: at a tenth, a read page (35% of the window) kept under a third of
    # itself, and the steps after it read most of the rest back.
    budget_low_window_share: float = allowed(0.20)
    budget_high_window_share: float = allowed(0.20)
    # Cuts wait until together they free this share of the effective window: each cut
    # breaks the prompt cache from that result on, so they go in batches. More than what one
    # read page frees (35% of the window cut to a fifth: 15%), so pages are cut two or more at
    # a time, not one cache break each.
    budget_min_free_pct: float = allowed(0.25)

    # Tier 2: snip
    snip_pct: float = allowed(0.60)
    keep_recent_results: int = allowed(3)
    keep_recent_per_tool: int = allowed(3)
    # of the effective window: a cache break must be worth it
    snip_min_free_pct: float = allowed(0.15)

    # Tier 3: microcompact
    microcompact_idle_seconds: float = allowed(300.0)
    # After an idle gap a history at least this large is summarized instead of cleared.
    idle_compact_min_tokens: int = allowed(45_000)

    # While the user is away, the last request is sent again (cut to one output token) just
    # before its cache entry expires: a re-read costs 0.1 of the input price, a rewrite 1.25.
    # Pings stop once together they would cost one rewrite (1.25 / 0.1 = 12), so a user who
    # never comes back costs at most one rewrite more than any choice made knowing when they
    # would. 0 turns it off (as aider's default). Anthropic only: its cache life is stated.
    # A history with no room left for a read page is not kept (see room_for_a_page).
    cache_keepalive_pings: int = allowed(12)
    # A ping goes this long after the last call, inside the 5-minute life with room to spare.
    cache_keepalive_seconds: float = allowed(270.0)

    # Before a summary inside a turn, old exchanges whose results were cleared are folded to
    # one line each (see context/fold.py); the newest this many messages never are.
    fold_cleared_calls: bool = allowed(True)
    fold_keep_messages: int = allowed(6)

    # Tier 4: auto-compact
    auto_compact: bool = allowed(True)
    autocompact_pct: float = allowed(0.85)
    # The summary threshold never goes above this many tokens, whatever the window. Every
    # request re-reads the history it carries from the cache, so what a call costs grows with
    # the threshold; under it old results are cleared inside a turn (relief_max_tokens), and a
    # clearing rewrites only what is kept above the fixed prompt, which with the rebuild at a
    # quarter of the room (below) grows with the room as slowly as the steps between
    # clearings do: per step it costs the same at any threshold. So lower is cheaper until
    # one step's largest result, a read_file page of truncate_chars (50,000 characters, some
    # 12.5K tokens), no longer fits in the three quarters of the room above a rebuilt
    # history: past that every big read brings its own compaction. With a 3-5K fixed prompt
    # that is about 24K. Cleared results stay on disk, and the notes and the ledger say what
    # they held; a user who wants more in view raises it.
    autocompact_max_tokens: int = allowed(24_000)
    post_compact_target_pct: float = allowed(0.30)
    # ... and at most the fixed prompt plus this share of the room between it and the summary
    # threshold: that room is the work the next compaction is put off by, every compaction
    # writes the rebuilt history to the prompt cache again, and every later request reads it.
    # Where the threshold is capped (large windows), a share of the window alone would refill
    # most of that room at once. A quarter leaves three quarters for work and still holds the
    # notes, the ledger, the newest exchanges and the files re-attached for the next steps,
    # which are the first thing a tighter rebuild drops.
    post_compact_threshold_share: float = allowed(0.25)
    summary_max_tokens: int = allowed(4_096)
    kept_user_tokens: int = allowed(20_000)
    reattach_max_files: int = allowed(5)
    reattach_file_tokens: int = allowed(5_000)
    reattach_total_tokens: int = allowed(50_000)
    compact_failure_limit: int = allowed(3)
    # Inside a turn, fewer new tool calls than this since the last summary means clearing
    # old results comes before another summary.
    summary_min_work: int = allowed(40)
    # ... and cutting long results (budget), snipping superseded ones and clearing old ones
    # inside a turn happen only while the summary threshold is at most this many tokens
    # (a request that would not fit is always cut). Each of them writes the history after its
    # first edit to the prompt cache again, and all it buys is a later compaction. Past this
    # size that rewrite costs more than the compaction it puts off: the compaction's own
    # rewrite is of a history held to a share of the threshold, and notes written in the
    # background usually stand in for its summary call.
    relief_max_tokens: int = allowed(32_000)
    # Results that relief leaves whole, the newest: everything after the oldest cleared
    # result is written to the prompt cache again, so on a small window each one kept is
    # paid for again at every clearing. The model has read them; their placeholders name
    # the saved copies.
    relief_keep_results: int = allowed(1)
    # ... and that clearing starts, inside such a turn, as soon as the history leaves no room
    # in the effective window for a whole read page, not at the summary threshold. A result
    # the model has read is re-read from the cache by every later request, while a clearing
    # rewrites only what follows the oldest result it clears (the same few exchanges at any
    # fill), so clearing earlier saves reads for about the same rewrite. And a turn that ends with
    # room for a page is one whose cache the keep-alive pings hold over an idle gap
    # (room_for_a_page); a fuller one goes cold and its whole history is written again.
    # Where the threshold is far below that room (large windows) this never comes first.
    relief_keeps_page_room: bool = allowed(True)
    summary_retry_limit: int = allowed(3)
    # Share of the effective window for the newest messages kept as they were beside a summary.
    compact_tail_share: float = allowed(0.05)
    # A compaction right after a tool call keeps the results the model has not read yet whole
    # (above the rebuild's target while the history is still smaller than before and under the
    # threshold): cut or cleared, whatever their middle held would be gone before it was seen.
    compact_spares_unread: bool = allowed(True)
    # The summary request asks for every path, command and search in full: the pointers that
    # let the model read back what the summary left out.
    summary_keep_pointers: bool = allowed(True)
    # The ledger re-attached after every summary: at most this many tokens, and at most
    # this share of the effective window (see context/ledger.py). 0 turns it off.
    ledger_tokens: int = allowed(1_500)
    ledger_window_share: float = allowed(0.03)

    # Session memory (context/session_memory.py): notes about the session kept up to date in
    # the background, so that at the threshold they replace the old history without a summary
    # call. The first update comes when the history reaches this share of the summary
    # threshold; later ones from the measured replies an update takes and growth per reply.
    session_memory: bool = allowed(True)
    session_memory_start_pct: float = allowed(0.90)
    # Off: the loop waits for each update (the benchmark, for requests in a fixed order).
    session_memory_background: bool = allowed(True)
    # When the summary threshold comes before the notes, the request goes out as it is (an
    # update on its way) while it stays this share of the effective window below the hard
    # limit (window minus output reserve); only there does anything wait for notes or a
    # summary. 1 turns this off (a summary at the threshold, as without notes on the way).
    # On a small window the threshold sits close to that limit (24K tokens of the 30K a 40K
    # window leaves), so a wide margin leaves almost no room to go on while an update runs:
    # the update lands after a summary had to be waited for, describing history the summary
    # already replaced. A request sent as is pays only for the few steps until the notes
    # land, and one that would not fit is still cut or summarized at the hard limit.
    session_memory_defer_margin_pct: float = allowed(0.05)
    # The share of the effective window a history may grow by while an update runs: the
    # first update of a history comes that far below the hard limit at the latest.
    session_memory_lead_pct: float = allowed(0.30)
    # Once a summary heads the history, an update asks only for what the messages after it
    # add and merges that into the summary (context/notes_merge.py): the notes are not written
    # out again in full, in output tokens, at every update. Off: every update is in full.
    session_memory_additions: bool = allowed(True)

    # Provider calls
    max_retries: int = allowed(4)
    # Ask the server why a cached prefix was not reused (Anthropic ``diagnostics``).
    cache_diagnostics: bool = allowed(True)
    request_timeout_seconds: float = allowed(600.0)
    # A stream that sends nothing (not even a ping) for this long is given up and retried.
    # 90 s is Claude Code's default (CLAUDE_STREAM_IDLE_TIMEOUT_MS, 90,000 ms); the SDKs
    # alone would wait their whole 600 s request timeout on each attempt.
    stream_idle_timeout_seconds: float = allowed(90.0)

    # Tools
    shell_timeout_seconds: float = allowed(120.0)
    tool_output_cap_chars: int = allowed(200_000)
    result_retention_days: int = stricter(30, "higher")

    # The todo plan: remind the model after this many model calls without todo_write while
    # its list is unfinished (0: never).
    todo_reminder_calls: int = allowed(10)
    # Compaction at a task boundary: when a todo item is marked done and the context is above
    # this share of the auto-compact threshold, compact then rather than mid-task later.
    task_boundary_compact: bool = allowed(False)
    task_boundary_compact_pct: float = allowed(0.6)
    # The loop guard (agent/loop_guard.py): how many times a repetition must happen in one turn
    # before the model is asked to change tactic (0: that check off), and how many such
    # reminders for the same repetition come before the user is told.
    loop_guard: bool = allowed(True)
    loop_guard_same_call: int = allowed(3)
    loop_guard_failing_command: int = allowed(3)
    loop_guard_reread: int = allowed(3)
    loop_guard_edit_undone: bool = allowed(True)
    loop_guard_reminders: int = allowed(1)
    # Loaded skills re-attached after a compaction, newest first, whole, within this many tokens.
    reattach_skills_tokens: int = allowed(10_000)
    # Hooks: seconds a hook command may run when its entry gives no "timeout".
    hook_timeout_seconds: float = refused(60.0)

    # Claude Code's events and terminal notifications. A Stop/SubagentStop hook may send the
    # model back to work at most this many times in one turn.
    stop_hook_limit: int = allowed(5)
    # How a waiting question or a long turn's end is signalled: auto, bell, osc9, osc777, off.
    notify: str = allowed("auto")
    # A turn that ran at least this long notifies when it ends (0: never).
    notify_after_seconds: float = allowed(30.0)

    # REPL: every tier report on its own line instead of one summary line per model call
    verbose: bool = allowed(False)

    # MCP servers
    mcp_connect_timeout_seconds: float = allowed(30.0)
    mcp_tool_timeout_seconds: float = allowed(120.0)
    # Variables a project's .mcp.json may expand with ${VAR} (names, commas or spaces
    # between); provider keys never. The user's own mcp.json may use any.
    mcp_project_variables: str | None = refused(None)

    # A message waits this long for MCP servers still connecting, so that their tools are in
    # its request (REPL and print mode; 0: never wait, the tools join a later request).
    mcp_startup_wait_seconds: float = allowed(15.0)

    # The prompt edits as vi does (``/vim`` switches it for the session).
    vim_mode: bool = allowed(False)

    # Sub-agents (the task tool): off removes the tool; the model for children (None: the same)
    task_tool: bool = allowed(True)
    task_model: str | None = allowed(None)
    # Permissions: also read Claude Code's settings files (~/.claude/settings.json,
    # .claude/settings.json, .claude/settings.local.json) beside our own.
    read_claude_settings: bool = refused(True)

    # The window a server proved by refusing a prompt ("prompt is too long: 63289 tokens >
    # 60000 maximum"): it outranks every other source, a setting included, because the
    # server is what accepts or refuses (filled in at run time, never from the environment).
    rejected_window: int | None = learnt(None)
    window_rejected_by: str | None = learnt(None)

    # Tools for real work: live shell output, web_fetch, images.
    # The REPL and stream-json get a running command's last lines at most this often.
    shell_progress_interval_seconds: float = stricter(0.5, "higher")
    # A background shell's log on disk keeps its first and last half of this many bytes and
    # says how many were dropped between (a shell running `yes` fills no disk).
    shell_log_cap_bytes: int = stricter(4 * 1024 * 1024, "lower")
    # web_fetch: largest body read, seconds for the whole fetch, minutes a page stays cached.
    web_fetch_max_bytes: int = stricter(5 * 1024 * 1024, "lower")
    web_fetch_timeout_seconds: float = stricter(30.0, "lower")
    web_fetch_cache_seconds: float = stricter(300.0, "lower")
    # Hosts or networks (comma-separated: ``127.0.0.1``, ``10.0.0.0/8``, ``localhost``) that
    # web_fetch may reach although they are private or loopback; plain http stays http there.
    web_fetch_allow_private: str = refused("")
    # The model accepts images (read_file of a picture, @shot.png); 0 for a text-only model.
    vision: bool = allowed(True)
    # Images larger than this many pixels are not decoded (a small PNG can unpack to
    # gigabytes); a JPEG is decoded reduced instead when that brings it under.
    image_max_pixels: int = stricter(36_000_000, "lower")

    # The OS sandbox for commands (bubblewrap): None leaves it to the settings files'
    # ``sandbox.enabled`` (off unless one says so); MINI_CLAUDE_SANDBOX=1 or 0 outranks them.
    sandbox: bool | None = stricter(None, "higher")
    # The bubblewrap program; with ``sandbox_fail_if_unavailable`` (or the files'
    # ``sandbox.failIfUnavailable``) no command runs when the sandbox is wanted and cannot.
    sandbox_bwrap_path: str = refused("bwrap")
    sandbox_fail_if_unavailable: bool = stricter(False, "higher")
    # The network of sandboxed commands: "auto" goes through the domain proxy when a settings
    # file lists ``sandbox.network.allowedDomains`` and is off otherwise; "proxy" always
    # through it (each new domain asked about); "off" never. A project may not open it.
    sandbox_network: str = refused("auto")
    # The port the proxy answers on inside the sandbox (its own loopback, not the host's).
    sandbox_proxy_port: int = allowed(3128)
    # For tests only: "name=address,…" the proxy uses instead of DNS for those names.
    sandbox_proxy_resolve: str = refused("")

    # Checkpoints (what /rewind restores): files larger than this are recorded as "not
    # checkpointed"; the store of one project is kept under the bound, oldest sessions first.
    checkpoint_max_file_bytes: int = stricter(10 * 1024 * 1024, "higher")
    checkpoint_store_max_bytes: int = stricter(1024 * 1024 * 1024, "higher")
    # Commands (run_shell, background shells, MCP tools, `!cmd`) are checkpointed too: the
    # project is listed before and after each, and what changed is recorded like an edit.
    checkpoint_commands: bool = stricter(True, "higher")

    @property
    def window(self) -> int:
        return (self.rejected_window or self.context_window or self.reported_window
                or window_for_model(self.model))

    @property
    def window_source(self) -> str:
        """Where :attr:`window` came from, for ``/context``."""
        if self.rejected_window:
            return self.window_rejected_by or "a server rejection"
        if self.context_window:
            return "MINI_CLAUDE_CONTEXT_WINDOW"
        if self.reported_window:
            return self.window_reported_by or "the provider's Models API"
        if known_window(self.model) is not None:
            return "the model table"
        return "a default (model unknown to the table and the Models API)"

    @property
    def reserve(self) -> int:
        """Output reserve, capped at a quarter of small windows.

        It also absorbs the token estimate's error, so it never drops below 5% of
        the window whatever the setting says.
        """
        return max(min(self.output_reserve, self.window // 4), self.window // 20)

    @property
    def reads_page_themselves(self) -> bool:
        """read_file stops at a page of its own size and tier 0 never saves its output."""
        return self.read_page_window_share > 0

    @property
    def effective_window(self) -> int:
        return self.window - self.reserve

    @property
    def autocompact_tokens(self) -> int:
        return min(int(self.effective_window * self.autocompact_pct), self.autocompact_max_tokens)

    def post_compact_target(self, fixed_tokens: int) -> int:
        """The most a compaction may leave: a share of the window, and the fixed prompt
        (system prompt and tools, which no compaction shrinks) plus a share of the room above
        it to the threshold."""
        fixed = max(0, min(fixed_tokens, self.autocompact_tokens))
        by_threshold = fixed + (self.autocompact_tokens - fixed) * self.post_compact_threshold_share
        return int(min(self.effective_window * self.post_compact_target_pct, by_threshold))

    @property
    def clearing_pays(self) -> bool:
        """Whether cutting or clearing old results can be worth the cache it breaks (see
        ``relief_max_tokens``)."""
        return self.autocompact_tokens <= self.relief_max_tokens

    @property
    def transcripts_dir(self) -> Path:
        return self.home / "transcripts"

    @property
    def tool_results_dir(self) -> Path:
        return self.home / "tool-results"

    @property
    def checkpoints_dir(self) -> Path:
        return self.home / "checkpoints"

    @property
    def api_key(self) -> str | None:
        """The chosen provider's key."""
        return self.api_keys.get(self.provider)

    @property
    def base_url(self) -> str | None:
        """The chosen provider's endpoint (None: the SDK's default)."""
        return self.base_urls.get(self.provider)

    def with_overrides(self, **changes: Any) -> Settings:
        return replace(self, **changes)

    def with_model(self, model: str, plan_model: str | None) -> Settings:
        """Another model: what was learnt about this one's window (reported, enforced)
        does not carry over; the new one starts from its own sources."""
        return replace(self, model=model, plan_model=plan_model, reported_window=None,
                       window_reported_by=None, reported_thinking=None, rejected_window=None,
                       window_rejected_by=None)


# Per-provider field -> the ProviderRow attribute that names each provider's variable for it
# (the SDKs' own names: ANTHROPIC_API_KEY, OPENAI_BASE_URL, ...).
PER_PROVIDER: dict[str, str] = {"api_keys": "key_variable", "base_urls": "base_url_variable"}


def provider_variables(name: str) -> dict[str, str]:
    """Provider -> its variable for a per-provider field, read from the table when asked,
    so a row added after start-up is read like the others."""
    return {row.name: getattr(row, PER_PROVIDER[name]) for row in PROVIDERS.values()}


def field_of_variable(variable: str) -> str | None:
    """The setting an environment variable sets; None for a variable no setting reads."""
    for name in PER_PROVIDER:
        if variable in provider_variables(name).values():
            return name
    return _FIELD_OF_VARIABLE.get(variable)


# Field name -> environment variable, for every field but the per-provider ones.
ENV_NAMES: dict[str, str] = {
    "provider": "MINI_CLAUDE_PROVIDER",
    "model": "MINI_CLAUDE_MODEL",
    "compact_model": "MINI_CLAUDE_COMPACT_MODEL",
    "context_window": "MINI_CLAUDE_CONTEXT_WINDOW",
    "home": "MINI_CLAUDE_HOME",
    "auto_compact": "MINI_CLAUDE_AUTO_COMPACT",
    "autocompact_pct": "MINI_CLAUDE_AUTOCOMPACT_PCT",
    "stream_idle_timeout_seconds": "MINI_CLAUDE_STREAM_IDLE_TIMEOUT",
}


def policy_of_field(name: str, metadata: Mapping[str, Any]) -> Policy:
    """A field's declared policy; a field declared without one stops the import."""
    if POLICY not in metadata:
        raise TypeError(f"setting {name!r} has no project .env policy: declare it with "
                        "allowed(), stricter(), own_key(), refused() or learnt()")
    return cast(Policy, metadata[POLICY])


PROJECT_ENV_POLICY: dict[str, Policy] = {
    f.name: policy_of_field(f.name, f.metadata) for f in fields(Settings)}
NOT_FROM_ENVIRONMENT = {name for name, word in PROJECT_ENV_POLICY.items() if word == "learnt"}
EFFORTS = ("low", "medium", "high", "xhigh", "max")
SANDBOX_NETWORKS = ("auto", "proxy", "off")
REASONING_EFFORTS = ("none", "minimal", *EFFORTS)
for _f in fields(Settings):
    if _f.name not in PER_PROVIDER:
        ENV_NAMES.setdefault(_f.name, "MINI_CLAUDE_" + _f.name.upper())
_FIELD_OF_VARIABLE = {variable: name for name, variable in ENV_NAMES.items()}

_PERCENT_FIELDS = {
    "autocompact_pct",
    "budget_low_pct",
    "budget_high_pct",
    "snip_pct",
    "budget_low_window_share",
    "budget_high_window_share",
    "snip_min_free_pct",
    "budget_min_free_pct",
    "post_compact_target_pct",
    "post_compact_threshold_share",
    "compact_tail_share",
    "ledger_window_share",
    "read_page_window_share",
    "session_memory_start_pct",
    "session_memory_defer_margin_pct",
    "session_memory_lead_pct",
    "task_boundary_compact_pct",
}


# Time limits that guard something (a hook, a command, a stream): never zero or negative.
_POSITIVE_SECONDS = {
    "hook_timeout_seconds",
    "shell_timeout_seconds",
    "request_timeout_seconds",
    "stream_idle_timeout_seconds",
    "mcp_connect_timeout_seconds",
    "mcp_tool_timeout_seconds",
    "web_fetch_timeout_seconds",
    "cache_keepalive_seconds",
}
# Days of retention: 0 would delete every saved result, this session's too; relief keeping
# no result could clear one the model has not read yet; a zero cap would keep no log or image.
# A count of keep-alive pings: 0 turns them off, and a negative one means nothing.
_NOT_NEGATIVE = {"cache_keepalive_pings"}
_AT_LEAST_ONE = {"result_retention_days", "relief_keep_results", "shell_log_cap_bytes",
                 "image_max_pixels"}


def parse(name: str, raw: str, default: Any) -> Any:
    """Convert one environment string to the field's type, with a one-line error."""
    raw = raw.strip()
    try:
        return _parser_for(name, default)(raw)
    except ValueError:
        raise SettingsError(f"{ENV_NAMES[name]}={raw!r} is not a valid value") from None


# Each parser takes the stripped string and raises ValueError when it is not a valid value.
_Parser = Callable[[str], Any]


def _parser_for(name: str, default: Any) -> _Parser:
    """The field's own parser if it has one, else the one its default's type calls for."""
    own = _FIELD_PARSERS.get(name)
    if own is not None:
        return own
    if isinstance(default, bool):
        return _flag
    if name in _PERCENT_FIELDS:
        return _percent
    if isinstance(default, int):
        if name in _NOT_NEGATIVE:
            return _not_negative
        return _at_least_one if name in _AT_LEAST_ONE else _whole_number
    if isinstance(default, float):
        return _positive_seconds if name in _POSITIVE_SECONDS else float
    return lambda raw: raw or None


def _one_of(allowed: Collection[str], *, any_case: bool) -> _Parser:
    def choose(raw: str) -> str:
        value = raw.lower() if any_case else raw
        if value not in allowed:
            raise ValueError
        return value
    return choose


def _whole_number(raw: str) -> int:
    """``200_000`` and ``200,000`` read as 200000."""
    return int(raw.replace("_", "").replace(",", ""))


def _at_least_one(raw: str) -> int:
    number = _whole_number(raw)
    if number < 1:
        raise ValueError
    return number


def _not_negative(raw: str) -> int:
    number = _whole_number(raw)
    if number < 0:
        raise ValueError
    return number


def _flag(raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError


def _percent(raw: str) -> float:
    share = float(raw.rstrip("%"))
    if share > 1:
        share /= 100  # accept "85" as well as "0.85"
    if not 0 < share <= 1:
        raise ValueError
    return share


def _positive_seconds(raw: str) -> float:
    seconds = float(raw)
    if not 0 < seconds < math.inf:
        raise ValueError  # a zero or negative time limit would switch its guard off
    return seconds


def _port(raw: str) -> int:
    port = int(raw)
    if not 1 <= port <= 65535:
        raise ValueError
    return port


def _thinking_tokens(raw: str) -> int:
    tokens = _whole_number(raw)
    if tokens != 0 and tokens < 1_024:
        raise ValueError  # the API's minimum budget
    return tokens


def _context_window(raw: str) -> int:
    tokens = _whole_number(raw)
    if tokens < 1_000:
        raise ValueError
    return tokens


# Fields whose values are not simply their default's type.
_FIELD_PARSERS: dict[str, _Parser] = {
    "home": lambda raw: Path(raw).expanduser(),
    "provider": _one_of(PROVIDERS, any_case=False),
    "effort": _one_of(EFFORTS, any_case=True),
    "reasoning_effort": _one_of(REASONING_EFFORTS, any_case=True),
    "sandbox": _flag,  # on or off; unset leaves it to the settings files
    "sandbox_proxy_port": _port,
    "sandbox_network": _one_of(SANDBOX_NETWORKS, any_case=True),
    "thinking_tokens": _thinking_tokens,
    "context_window": _context_window,
}


def from_environment(
    environ: Mapping[str, str],
    *,
    provider: str | None = None,
    model: str | None = None,
    fallback_model: str | None = None,
) -> Settings:
    """Build settings from an environment mapping and the flags that override it."""
    base = Settings()
    values: dict[str, Any] = {}
    for f in fields(Settings):
        if f.name in NOT_FROM_ENVIRONMENT:
            continue
        if f.name in PER_PROVIDER:
            values[f.name] = _per_provider_values(f.name, environ)
            continue
        raw = environ.get(ENV_NAMES[f.name])
        if raw is not None and raw.strip() != "":
            values[f.name] = parse(f.name, raw, getattr(base, f.name))
    if provider:
        values["provider"] = parse("provider", provider, base.provider)
    elif "provider" not in values:
        values["provider"] = _choose_provider(environ)
    if model:
        values["model"] = model
    elif "model" not in values:
        values["model"] = provider_row(values["provider"]).default_model
    if fallback_model:
        values["fallback_model"] = fallback_model
    settings = with_models_resolved(replace(base, **values), environ)
    check_base_url(settings)
    return settings


def _per_provider_values(name: str, environ: Mapping[str, str]) -> dict[str, str]:
    """Each provider's value of a per-provider field, from the variable its row names (an
    empty one is no value)."""
    found = {provider: environ.get(variable, "").strip()
             for provider, variable in provider_variables(name).items()}
    return {provider: value for provider, value in found.items() if value}


def with_models_resolved(settings: Settings, environ: Mapping[str, str]) -> Settings:
    """Every model setting as the provider's ids: ``sonnet``, ``opusplan``, ``haiku[1m]``
    name what they name in Claude Code (see ``models.resolve_model``)."""
    choice = resolve_model(settings.model, settings.provider, environ)

    def one(name: str | None) -> str | None:
        return resolve_model(name, settings.provider, environ).model if name else None

    return replace(
        settings, model=choice.model, plan_model=choice.plan_model,
        fallback_model=one(settings.fallback_model), compact_model=one(settings.compact_model),
        task_model=one(settings.task_model),
    )


def check_base_url(settings: Settings) -> None:
    """The endpoint in use must be an http(s) URL with a host; anything else would only be
    retried as a lost connection."""
    from urllib.parse import urlsplit

    url = settings.base_url
    if url is None:
        return
    name = provider_row(settings.provider).base_url_variable
    try:
        parts = urlsplit(url.strip())
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        _ = parts.port  # a port that is not a number raises here
    except ValueError:
        valid = False
    if not valid:
        raise SettingsError(
            f"{name}={url!r} is not a valid base URL: it needs http:// or https:// and a host"
        )


def _choose_provider(environ: Mapping[str, str]) -> ProviderName:
    """The first provider (in table order) whose variables are set."""
    for row in PROVIDERS.values():
        if any(environ.get(variable) for variable in row.chosen_by):
            return row.name
    hints = ", or ".join(row.setup_hint for row in PROVIDERS.values())
    raise SettingsError(
        f"no model provider configured: set {hints}, in the environment or a .env file; "
        "or try mini-claude --demo, which needs no key"
    )
