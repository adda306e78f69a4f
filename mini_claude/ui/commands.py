"""Slash commands: one small function each, recognised only at the start of a message."""

from __future__ import annotations

import difflib
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from mini_claude.project.commands import split_invocation
from mini_claude.ui.render import note
from mini_claude.ui.rewind_view import checkpoint_store_line, rewind
from mini_claude.ui.statusbar import cost_label, format_money, short_tokens

if TYPE_CHECKING:
    from mini_claude.transcript import SessionInfo
    from mini_claude.ui.host import ReplHost

RESUME_MENU_SIZE = 9
# 20261127-204512-3fa9c1, or a UUID
SESSION_ID_SHAPE = re.compile(r"^(\d{8}-\d{4,}|[0-9a-f]{8}-[0-9a-f]{4}-)")


class Outcome(Enum):
    CONTINUE = "continue"
    EXIT = "exit"


Handler = Callable[["ReplHost", str], Awaitable[Outcome]]


@dataclass(frozen=True, slots=True)
class Command:
    name: str
    summary: str
    handler: Handler
    aliases: tuple[str, ...] = ()
    argument: str = ""


parse_command = split_invocation  # custom commands are recognised the same way


def find_command(name: str) -> Command | None:
    for command in COMMANDS:
        if name == command.name or name in command.aliases:
            return command
    return None


def suggest(name: str) -> str | None:
    """The closest command name, for a typo."""
    names = [n for c in COMMANDS for n in (c.name, *c.aliases)]
    match = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    if match:
        return match[0]
    prefixed = [n for n in names if n.startswith(name[:2])] if len(name) >= 2 else []
    return prefixed[0] if prefixed else None


async def dispatch(repl: ReplHost, text: str) -> Outcome:
    parsed = parse_command(text)
    assert parsed is not None
    name, argument = parsed
    command = find_command(name)
    if command is None:
        from mini_claude.ui.claude_view import run_custom_command

        if await run_custom_command(repl, text):
            return Outcome.CONTINUE
        guess = suggest(name)
        hint = f" Did you mean /{guess}?" if guess else " Type /help for the list."
        repl.console.print(Text(f"Unknown command /{name}.{hint}", style="yellow"))
        return Outcome.CONTINUE
    return await command.handler(repl, argument)


# ---- the commands ----------------------------------------------------------------------


async def help_command(repl: ReplHost, argument: str) -> Outcome:
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
    table.add_column(style="bold cyan")
    table.add_column()
    for command in COMMANDS:
        names = " ".join(f"/{n}" for n in (command.name, *command.aliases))
        usage = f"{names} {command.argument}".strip()
        table.add_row(Text(usage), Text(command.summary))  # Text: "[name]" is not markup
    from mini_claude.ui.claude_view import command_rows

    for usage, description in command_rows(repl):
        table.add_row(Text(usage), Text(description))
    table.add_row(Text("!command"), Text("run a shell command yourself; its output goes with "
                                         "your next message"))
    table.add_row(Text("@path"), Text("attach a file (or a folder's listing, or an image)"))
    table.add_row(Text("# note"), Text("save a note to a memory file (CLAUDE.md and others)"))
    repl.console.print(table)
    repl.console.print(Text(
        "Keys: Enter sends · \\ then Enter, Alt+Enter or Ctrl-J for a new line · Esc or Ctrl-C "
        "interrupts a turn · Ctrl-B sends a running shell command to the background (twice "
        "under tmux) · Esc twice on an empty prompt rewinds (/rewind) · Ctrl-C twice or "
        "Ctrl-D exits · Ctrl-R searches history · Tab completes commands · Shift+Tab cycles the "
        "permission mode", style="dim"))
    return Outcome.CONTINUE


async def compact_command(repl: ReplHost, argument: str) -> Outcome:
    if not repl.agent.conversation.messages:
        repl.console.print(note("nothing to compact yet"))
        return Outcome.CONTINUE
    await repl.run_events(repl.agent.compact(argument or None), label="compacting…")
    return Outcome.CONTINUE


async def context_command(repl: ReplHost, argument: str) -> Outcome:
    from mini_claude.ui.context_view import breakdown, render_breakdown

    agent = repl.agent
    view = breakdown(agent.status(), agent.system_prompt, agent.tools, agent.conversation.messages)
    repl.console.print(render_breakdown(view, repl.session.settings.model,
                                        agent.loop_guard.summary()))
    repl.console.print(note(f"window {agent.settings.window:,} tokens, from "
                            f"{agent.settings.window_source}"))
    from mini_claude.ui.claude_view import instruction_table

    table = instruction_table(repl)
    repl.console.print(table if table.row_count else note(
        "instruction files: none (MINI-CLAUDE.md, CLAUDE.md or AGENTS.md; /init writes "
        "one)"))
    repl.console.print(note(checkpoint_store_line(repl.session)))
    return Outcome.CONTINUE


async def cost_command(repl: ReplHost, argument: str) -> Outcome:
    from mini_claude.models import price_for
    from mini_claude.pricing import cost_notes

    costs = repl.agent.costs
    usage = costs.usage
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("input (uncached)", f"{usage.input_tokens:,} tokens")
    table.add_row("cache read", f"{usage.cache_read_tokens:,} tokens")
    table.add_row("cache write", f"{usage.cache_write_tokens:,} tokens")
    table.add_row("output", f"{usage.output_tokens:,} tokens")
    table.add_row("requests", f"{costs.requests:,}")
    table.add_row("cost", cost_label(costs))
    summaries = costs.summaries
    table.add_row("  of which summary and notes calls",
                  f"{summaries.requests:,} · {summaries.usage.prompt_tokens:,} in, "
                  f"{summaries.usage.output_tokens:,} out · {format_money(summaries.dollars)}")
    subagents = costs.subagents
    if subagents.requests:
        table.add_row("  of which sub-agents (task)",
                      f"{subagents.requests:,} · {subagents.usage.prompt_tokens:,} in, "
                      f"{subagents.usage.output_tokens:,} out · {format_money(subagents.dollars)}")
    pings = costs.pings
    if pings.requests:
        table.add_row("  of which keep-alive pings",
                      f"{pings.requests:,} · {pings.usage.cache_read_tokens:,} read from cache · "
                      f"{format_money(pings.dollars)}")
    table.add_row("API time", _duration(costs.api_seconds))
    table.add_row("wall time", _duration(time.monotonic() - repl.started))
    repl.console.print(table)
    repl.console.print(note(cost_notes(usage, repl.agent.steps.cache_miss_summary())))
    price = price_for(repl.session.settings.model)
    if price is None:
        repl.console.print(note(f"no price known for {repl.session.settings.model}; "
                                "its usage is counted in tokens only"))
    else:
        repl.console.print(note(
            f"{repl.session.settings.model} per million tokens: input {format_money(price.input)}, "
            f"cache write {format_money(price.cache_write)}, cache read "
            f"{format_money(price.cache_read)}, output {format_money(price.output)}"))
    repl.console.print(note(checkpoint_store_line(repl.session)))
    return Outcome.CONTINUE


def _duration(seconds: float) -> str:
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m {rest:02d}s" if minutes else f"{seconds:.1f}s"


async def clear_command(repl: ReplHost, argument: str) -> Outcome:
    from mini_claude.agent.lifecycle import end_session

    previous = repl.session.session_id
    for warning in await end_session(repl.agent.hooks, "clear"):
        repl.console.print(note(warning, "warning"))
    repl.agent.transcript.close()
    repl.session.start_new()
    repl.show_resumed()
    repl.console.print(note(f"new conversation (session {repl.session.session_id}); the previous "
                            f"one can be resumed with: mini-claude --resume {previous}"))
    return Outcome.CONTINUE


async def think_command(repl: ReplHost, argument: str) -> Outcome:
    word = argument.split()[0] if argument.split() else ""
    if word and (not word.isdigit() or 0 < int(word) < 1_024):
        repl.console.print(note("usage: /think [tokens] (a budget of at least 1024, or 0 for off)",
                                "warning"))
        return Outcome.CONTINUE
    tokens = repl.session.toggle_thinking(int(word) if word else None)
    repl.console.print(note(f"thinking on, budget {tokens:,} tokens" if tokens else "thinking off"))
    return Outcome.CONTINUE


async def model_command(repl: ReplHost, argument: str) -> Outcome:
    settings = repl.session.settings
    if argument:
        repl.session.switch_model(argument.split()[0])
        settings = repl.session.settings
        repl.console.print(note(f"model switched to {settings.model} "
                                f"({short_tokens(settings.window)} window)"))
    else:
        repl.console.print(note(f"model: {settings.model} ({settings.provider}, "
                                f"{short_tokens(settings.window)} window) · /model NAME switches"))
    return Outcome.CONTINUE


async def resume_command(repl: ReplHost, argument: str) -> Outcome:
    """``/resume`` picks from this folder's sessions; ``/resume ID`` resumes one; any other
    ``/resume TEXT`` picks from the sessions whose name or messages hold the text."""
    from mini_claude.session.titles import load_titles, matching_sessions
    from mini_claude.transcript import list_sessions
    from mini_claude.ui.choice import ChoiceInterrupted, choose

    session = repl.session
    folder = session.settings.transcripts_dir
    earlier = [s for s in list_sessions(folder, session.cwd)
               if s.session_id != session.session_id]
    titles = load_titles(folder)
    query = argument.strip()
    if query and _names_a_session(query, folder):
        return _resume(repl, query)
    if query:
        earlier = matching_sessions(earlier, query, titles)
        if not earlier:
            repl.console.print(note(f"no earlier session of {session.cwd} mentions {query!r}"))
            return Outcome.CONTINUE
    earlier = forks_under_origins(earlier)[:RESUME_MENU_SIZE]
    if not earlier:
        repl.console.print(note(f"no earlier sessions in {session.cwd}"))
        return Outcome.CONTINUE
    repl.console.print(Text("Resume which session?", style="bold"))
    try:
        index = await choose([_session_label(s, titles) for s in earlier],
                             hint="esc to cancel")
    except ChoiceInterrupted:
        index = None
    if index is None:
        repl.console.print(note("resume cancelled"))
        return Outcome.CONTINUE
    return _resume(repl, earlier[index].session_id)


def _names_a_session(query: str, folder: Path) -> bool:
    """An id or an id's prefix (of any folder's session), or text shaped like one."""
    from mini_claude.transcript import list_sessions

    if " " in query:
        return False
    return bool(SESSION_ID_SHAPE.match(query)) or any(
        s.session_id.startswith(query) for s in list_sessions(folder))


def _resume(repl: ReplHost, session_id: str) -> Outcome:
    from mini_claude.session.wiring import SessionError

    old = repl.agent
    try:
        agent = repl.session.resume(session_id)
    except (SessionError, OSError) as exc:
        repl.console.print(note(str(exc), "error"))
        return Outcome.CONTINUE
    old.transcript.close()
    repl.show_resumed()
    repl.console.print(note(f"resumed session {repl.session.session_id} "
                            f"({len(agent.conversation)} messages)"))
    for warning in repl.session.warnings:
        repl.console.print(note(warning, "warning"))
    repl.session.warnings.clear()
    return Outcome.CONTINUE


def _session_label(info: SessionInfo, titles: dict[str, str] | None = None) -> str:
    age = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.modified))
    prompt = " ".join(info.first_prompt.split()) or "(no prompt)"
    name = (titles or {}).get(info.session_id)
    fork = f"  ↳ fork of {info.forked_from} " if info.forked_from else ""
    return f"{fork}{info.session_id}  {age}  {name or prompt[:60]}"


async def rename_command(repl: ReplHost, argument: str) -> Outcome:
    """``/rename NAME``: the name /resume lists and finds this session by."""
    from mini_claude.session.titles import set_title

    session = repl.session
    try:
        kept = set_title(session.settings.transcripts_dir, session.session_id, argument)
    except OSError as exc:
        repl.console.print(note(f"cannot save the name: {exc.strerror or exc}", "error"))
        return Outcome.CONTINUE
    repl.console.print(note(f"session {session.session_id} is named {kept!r}" if kept
                            else f"session {session.session_id} has no name now"))
    return Outcome.CONTINUE


def forks_under_origins(sessions: list[SessionInfo]) -> list[SessionInfo]:
    """Newest first, each fork right under the session it was forked from (when listed)."""
    listed = {s.session_id for s in sessions}
    forks: dict[str, list[SessionInfo]] = {}
    for info in sessions:
        if info.forked_from in listed:
            forks.setdefault(info.forked_from, []).append(info)
    ordered: list[SessionInfo] = []

    def add(info: SessionInfo) -> None:
        ordered.append(info)
        for fork in forks.get(info.session_id, []):
            add(fork)

    for info in sessions:
        if info.forked_from not in listed:
            add(info)
    return ordered


async def rewind_command(repl: ReplHost, argument: str) -> Outcome:
    await rewind(repl)
    return Outcome.CONTINUE


async def exit_command(repl: ReplHost, argument: str) -> Outcome:
    return Outcome.EXIT


async def mcp_servers_command(repl: ReplHost, argument: str) -> Outcome:
    from mini_claude.ui.mcp_view import mcp_command

    await mcp_command(repl, argument)
    return Outcome.CONTINUE


# ---- looking back, and how much the screen says ------------------------------------------


async def todos_command(repl: ReplHost, argument: str) -> Outcome:
    from mini_claude.ui.plan_view import show_todos

    show_todos(repl)
    return Outcome.CONTINUE


async def skills_command(repl: ReplHost, argument: str) -> Outcome:
    from mini_claude.ui.plan_view import show_skills

    show_skills(repl)
    return Outcome.CONTINUE


async def hooks_list_command(repl: ReplHost, argument: str) -> Outcome:
    from mini_claude.ui.hooks_view import hooks_command

    await hooks_command(repl, argument)
    return Outcome.CONTINUE


async def permissions_list_command(repl: ReplHost, argument: str) -> Outcome:
    from mini_claude.ui.permissions_view import permissions_command

    await permissions_command(repl, argument)
    return Outcome.CONTINUE


async def sandbox_view_command(repl: ReplHost, argument: str) -> Outcome:
    from mini_claude.ui.sandbox_view import sandbox_command

    await sandbox_command(repl, argument)
    return Outcome.CONTINUE


async def memory_command(repl: ReplHost, argument: str) -> Outcome:
    from mini_claude.ui.claude_view import memory_command as edit_memory

    await edit_memory(repl, argument)
    return Outcome.CONTINUE


async def init_command(repl: ReplHost, argument: str) -> Outcome:
    from mini_claude.ui.claude_view import init_command as write_claude_md

    await write_claude_md(repl, argument)
    return Outcome.CONTINUE


async def verbose_command(repl: ReplHost, argument: str) -> Outcome:
    repl.verbose = not repl.verbose
    repl.console.print(note("verbose: every tier report on its own line" if repl.verbose else
                            "verbose off: one line per model call for what the tiers did"))
    return Outcome.CONTINUE


async def expand_command(repl: ReplHost, argument: str) -> Outcome:
    """``/expand`` shows the latest collapsed result; ``/expand 3`` the third latest."""
    word = argument.strip()
    if word and not word.isdigit():
        repl.console.print(note("usage: /expand [N], N counting back from the latest result (1)",
                                "warning"))
        return Outcome.CONTINUE
    repl.console.print(repl.recall.full_result(int(word) if word else 1))
    return Outcome.CONTINUE


async def shells_list_command(repl: ReplHost, argument: str) -> Outcome:
    from mini_claude.ui.shells_view import shells_command

    await shells_command(repl, argument)
    return Outcome.CONTINUE


async def summary_command(repl: ReplHost, argument: str) -> Outcome:
    repl.console.print(repl.recall.full_summary())
    agent = repl.agent
    notes = agent.steps.current_notes()
    if notes is not None:
        repl.console.print(Text(f"── session notes (kept in the background; they cover the first "
                                f"{notes.covered} messages and stand in for the next summary)",
                                style="bold"), Text(notes.text))
    return Outcome.CONTINUE


async def status_command(repl: ReplHost, argument: str) -> Outcome:
    from mini_claude.ui.info_views import status_table

    repl.console.print(status_table(repl))
    return Outcome.CONTINUE


async def config_command(repl: ReplHost, argument: str) -> Outcome:
    import os

    from mini_claude.project.dotenv_rule import layered_environment
    from mini_claude.ui.info_views import config_table

    layered = layered_environment(repl.cwd, os.environ).values
    dotenv = {k: v for k, v in layered.items() if os.environ.get(k) != v}
    repl.console.print(Text("Settings not at their defaults, and where each came from "
                            "(docs/configuration.md lists them all):", style="bold"))
    repl.console.print(config_table(repl.settings, os.environ, dotenv))
    return Outcome.CONTINUE


async def doctor_command(repl: ReplHost, argument: str) -> Outcome:
    from mini_claude.ui.info_views import doctor_rows, doctor_table

    rows = doctor_rows(repl)
    repl.console.print(doctor_table(rows))
    problems = sum(1 for _, _, fine in rows if not fine)
    repl.console.print(note("all checks passed" if not problems else
                            f"{problems} to look at (marked !)", "info" if not problems
                            else "warning"))
    return Outcome.CONTINUE


async def export_command(repl: ReplHost, argument: str) -> Outcome:
    """``/export [file]`` writes Markdown; ``/export --clipboard`` copies it (OSC 52)."""
    from mini_claude.transcript import load_session
    from mini_claude.ui.info_views import conversation_markdown, export_target, osc52_copy

    session = repl.session
    loaded = load_session(repl.agent.transcript.path)
    text = conversation_markdown(loaded.original_messages or repl.agent.conversation.messages,
                                 f"mini-claude session {session.session_id}")
    if argument.strip() in ("--clipboard", "-c"):
        repl.console.file.write(osc52_copy(text))
        repl.console.file.flush()
        repl.console.print(note(f"conversation copied to the clipboard ({len(text):,} characters;"
                                " a terminal without OSC 52 ignores it: /export FILE writes it)"))
        return Outcome.CONTINUE
    target = export_target(argument, repl.cwd, session.session_id)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        repl.console.print(note(f"cannot write {target}: {exc.strerror or exc}", "error"))
        return Outcome.CONTINUE
    repl.console.print(note(f"conversation exported to {target}"))
    return Outcome.CONTINUE


async def agents_list_command(repl: ReplHost, argument: str) -> Outcome:
    from mini_claude.ui.agents_view import agents_command

    await agents_command(repl, argument)
    return Outcome.CONTINUE


async def vim_command(repl: ReplHost, argument: str) -> Outcome:
    on = repl.toggle_vim_mode()
    repl.console.print(note("vim editing mode (Esc for normal mode, i to insert)" if on
                            else "standard editing mode"))
    return Outcome.CONTINUE


async def add_dir_command(repl: ReplHost, argument: str) -> Outcome:
    from mini_claude.claude_flags import FlagError, add_directories

    if not argument.strip():
        repl.console.print(note("usage: /add-dir <path>"))
        return Outcome.CONTINUE
    session = repl.session
    try:
        (folder,) = add_directories([argument.strip()], session.cwd)
    except FlagError as exc:
        repl.console.print(note(str(exc).replace("--add-dir", "/add-dir")))
        return Outcome.CONTINUE
    session.permission_setup.add_directory(folder)
    repl.console.print(note(f"tools may now read and edit in {folder}"))
    return Outcome.CONTINUE


COMMANDS: tuple[Command, ...] = (
    Command("help", "show commands and keys", help_command),
    Command("compact", "summarize the conversation now to free context", compact_command,
            argument="[focus]"),
    Command("context", "what fills the context window", context_command),
    Command("cost", "tokens and money spent in this session", cost_command),
    Command("clear", "start a new conversation (new transcript)", clear_command, ("new",)),
    Command("model", "show the model, or switch to another", model_command, argument="[name]"),
    Command("think", "turn extended thinking on or off", think_command, argument="[tokens]"),
    Command("resume", "continue an earlier session of this folder, or find one by what was "
            "said", resume_command, argument="[id | text]"),
    Command("rename", "name this session (/resume lists and finds it by the name)",
            rename_command, argument="<name>"),
    Command("rewind", "go back to an earlier message: code, conversation or both (Esc Esc)",
            rewind_command, ("checkpoint",)),
    Command("mcp", "MCP servers, their status and tools", mcp_servers_command,
            argument="[approve|reconnect [name]]"),
    Command("verbose", "show every context tier report, or one line per call", verbose_command),
    Command("expand", "show the latest collapsed tool result in full (also Ctrl-O), or the "
            "Nth latest", expand_command, argument="[N]"),
    Command("summary", "show the latest compaction summary", summary_command),
    Command("todos", "show the model's todo list", todos_command),
    Command("skills", "list the skills the model can load", skills_command),
    Command("hooks", "the hooks that run, or approve the project's", hooks_list_command,
            argument="[approve]"),
    Command("permissions", "the permission rules in force, and their sources; remove one",
            permissions_list_command, argument="[remove N]"),
    Command("sandbox", "the OS sandbox commands run in: on or off, what they may touch",
            sandbox_view_command, argument="[on|off]"),
    Command("shells", "background shells: list them, show one's output, or stop one",
            shells_list_command, ("bashes",), argument="[<id> | kill <id>]"),
    Command("status", "version, session, model, mode, context and MCP at a glance",
            status_command),
    Command("config", "the settings in force and where each came from", config_command),
    Command("doctor", "check the install, the key, ripgrep, the sandbox, MCP and the terminal",
            doctor_command),
    Command("export", "the conversation as Markdown, to a file or the clipboard",
            export_command, argument="[file | --clipboard]"),
    Command("agents", "sub-agent types: list, show one, or create one", agents_list_command,
            argument="[name | new <name>]"),
    Command("vim", "switch the prompt between vim and standard editing", vim_command),
    Command("memory", "edit a memory file (CLAUDE.md) in $EDITOR", memory_command),
    Command("init", "study the project and write its CLAUDE.md", init_command,
            argument="[focus]"),
    Command("add-dir", "let tools read and edit in one more folder", add_dir_command,
            argument="<path>"),
    Command("exit", "leave mini-claude", exit_command, ("quit",)),
)
