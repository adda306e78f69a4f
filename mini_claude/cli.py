"""Command line entry point. It only parses and wires; each mode lives in its own module.

Kept free of heavy imports so that ``--help`` and ``--version`` answer at once.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from mini_claude import __version__

if TYPE_CHECKING:
    pass

from mini_claude.exit_codes import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE
from mini_claude.settings_loading import UsageError, load_settings

DESCRIPTION = """\
A terminal coding agent for Anthropic or any OpenAI-compatible endpoint that keeps long
sessions inside the context window. Run it in a project folder to open the REPL, or pass
-p for a single non-interactive turn."""

EPILOG = """\
environment:
  ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL   Anthropic credentials and endpoint
  OPENAI_API_KEY, OPENAI_BASE_URL         OpenAI or any compatible server (Ollama, vLLM, ...)
  MINI_CLAUDE_PROVIDER                    PROVIDER_NAMES
  MINI_CLAUDE_MODEL                       model name
  MINI_CLAUDE_CONTEXT_WINDOW              window in tokens (overrides the model table)
  MINI_CLAUDE_HOME                        where transcripts and results go (~/.mini-claude)
  MINI_CLAUDE_AUTO_COMPACT=0              turn auto-compact off
  MINI_CLAUDE_AUTOCOMPACT_PCT             auto-compact threshold (default 85)
  (every other setting: docs/configuration.md)

subcommands:
  mini-claude bench                       run the long-session benchmark
  mini-claude mcp add|add-json|list|get|remove   manage MCP servers (Claude Code's scopes)
  mini-claude export-atif RUN.jsonl       a stream-json run as an ATIF trajectory (Harbor)
"""


class OneLineParser(argparse.ArgumentParser):
    """Usage errors are one line (what was wrong, and where help is), not the whole usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    from mini_claude.models import PROVIDERS
    from mini_claude.permissions.mode_table import BYPASS_MODE, MODES

    parser = OneLineParser(
        prog="mini-claude",
        usage="%(prog)s [options] [PROMPT]",
        description=DESCRIPTION,
        epilog=EPILOG.replace("PROVIDER_NAMES", " | ".join(PROVIDERS)),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # "--system-prompt ''" is not "--system-prompt-file"
    )
    parser.add_argument(
        "prompt",
        nargs="?",
        metavar="PROMPT",
        help="the first message: the REPL starts with it, or with -p it is the one turn; "
        "options may come before or after it",
    )
    parser.add_argument(
        "-p",
        "--print",
        dest="print_mode",
        action="store_true",
        help="run one turn non-interactively and print the answer "
        "(text piped on stdin is added to the prompt)",
    )
    parser.add_argument(
        "--output-format",
        choices=("text", "json", "stream-json"),
        default="text",
        help="print mode output (default: text)",
    )
    parser.add_argument(
        "-y",
        "--yes",
        "--dangerously-skip-permissions",
        dest="yes",
        action="store_true",
        help="allow run_shell, write_file, edit_file and web_fetch without asking "
        f"(the same as --permission-mode {BYPASS_MODE})",
    )
    parser.add_argument(
        "--permission-mode",
        type=_permission_mode,
        metavar="MODE",
        help=f"start in this permission mode: {', '.join(MODES)} "
        "(Shift+Tab changes it in the REPL)",
    )
    add_headless_arguments(parser)
    add_editor_argument(parser)
    add_claude_code_arguments(parser)
    parser.add_argument(
        "--trust-project-mcp",
        action="store_true",
        help="start the MCP servers in this project's .mcp.json for this run without asking "
        "(--yes alone never does)",
    )
    parser.add_argument(
        "--provider",
        choices=tuple(PROVIDERS),
        help="model provider (default: from the environment)",
    )
    parser.add_argument(
        "--model",
        help="model id or alias: sonnet, opus, haiku, opusplan, default, NAME[1m] "
        "(default: MINI_CLAUDE_MODEL or the provider's)",
    )
    parser.add_argument(
        "-w",
        "--worktree",
        nargs="?",
        const="",
        metavar="NAME",
        help="start in a new git worktree of the project (.claude/worktrees/NAME on branch "
        "worktree-NAME), so parallel sessions do not collide",
    )
    parser.add_argument(
        "--fallback-model",
        help="go on with this model when the model is overloaded or not found "
        "(MINI_CLAUDE_FALLBACK_MODEL)",
    )
    parser.add_argument(
        "-c",
        "--continue",
        dest="continue_session",
        action="store_true",
        help="continue the newest session of this folder",
    )
    parser.add_argument(
        "-r",
        "--resume",
        metavar="ID",
        nargs="?",
        const="",
        help="resume the session with this id (in the REPL, without an id: pick one)",
    )
    parser.add_argument(
        "--fork-session",
        action="store_true",
        help="with -c or -r: continue in a new session from a copy of that one's history "
        "(the original is left as it is)",
    )
    parser.add_argument(
        "--resume-at",
        "--resume-session-at",
        dest="resume_at",
        metavar="MESSAGE_ID",
        help="print mode, with -c or -r: continue from the history as it stood after this "
        "message (the uuid of a stream-json assistant line)",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="watch the context pipeline work against a simulated model (no key)",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on internal errors")
    parser.add_argument("--version", action="version", version=f"mini-claude {__version__}")
    return parser


def add_headless_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags for scripted runs (print mode), named as Claude Code names them."""
    parser.add_argument(
        "--max-turns",
        type=_positive_int,
        metavar="N",
        help="print mode: stop after N model calls (exit 1, subtype error_max_turns)",
    )
    from mini_claude.claude_flags import ExtendSplit

    parser.add_argument(
        "--allowed-tools",
        "--allowedTools",
        dest="allowed_tools",
        action=ExtendSplit,
        nargs="+",
        metavar="RULE",
        help="tools allowed without asking, e.g. write_file 'run_shell(git diff:*)' "
        "(end the list with -- before a prompt)",
    )
    parser.add_argument(
        "--disallowed-tools",
        "--disallowedTools",
        dest="disallowed_tools",
        action=ExtendSplit,
        nargs="+",
        metavar="RULE",
        help="tools (or run_shell commands) never allowed; deny wins over allow",
    )
    parser.add_argument(
        "--append-system-prompt",
        metavar="TEXT",
        help="add these instructions at the end of the system prompt",
    )
    parser.add_argument(
        "--system-prompt-file",
        metavar="PATH",
        help="print mode: use this file instead of the built-in instructions",
    )
    parser.add_argument(
        "--system-prompt",
        metavar="TEXT",
        help="print mode: use this text instead of the built-in instructions "
        "(empty: the built-in ones)",
    )


def add_claude_code_arguments(parser: argparse.ArgumentParser) -> None:
    """The rest of Claude Code's flags, as the Claude Agent SDK and its users pass them."""
    from mini_claude.claude_flags import THINKING_CHOICES, add_refused_flags

    parser.add_argument(
        "--input-format",
        choices=("text", "stream-json"),
        default="text",
        help="print mode input: text, or stream-json (one JSON message per line on stdin, "
        "a turn each, with control requests; needs --output-format stream-json)",
    )
    parser.add_argument(
        "--verbose",
        action="store_true",
        help="accepted for Claude Code compatibility (stream-json always writes every line)",
    )
    parser.add_argument(
        "--include-partial-messages",
        action="store_true",
        help="stream-json: also write the reply as it streams (stream_event lines)",
    )
    parser.add_argument(
        "--add-dir",
        action="append",
        metavar="DIR",
        help="a folder that counts as the project's, for reads and edits (repeatable)",
    )
    parser.add_argument(
        "--mcp-config",
        action="append",
        metavar="FILE_OR_JSON",
        help='MCP servers from a file or JSON ({"mcpServers": {...}}; repeatable)',
    )
    parser.add_argument(
        "--strict-mcp-config",
        action="store_true",
        help="use only the --mcp-config servers (not .mcp.json or the home's)",
    )
    parser.add_argument(
        "--settings",
        metavar="FILE_OR_JSON",
        help="one more settings file (or JSON), ranked above the others",
    )
    parser.add_argument(
        "--session-id", metavar="UUID", help="start a new session with this id"
    )
    parser.add_argument(
        "--agents",
        metavar="JSON",
        help='sub-agent types: {"name": {"description": ..., "prompt": ..., "tools": [...]}}',
    )
    parser.add_argument(
        "--tools",
        metavar="LIST",
        help='the built-in tools offered: "default" (all), "" (none), or a list',
    )
    parser.add_argument(
        "--permission-prompt-tool",
        metavar="NAME",
        help="stdio: ask the controlling program over the stream-json channel",
    )
    parser.add_argument(
        "--max-thinking-tokens", type=int, metavar="N", help="thinking budget (0: off)"
    )
    parser.add_argument("--thinking", choices=THINKING_CHOICES, help="turn thinking on or off")
    parser.add_argument("--thinking-display", metavar="MODE", help=argparse.SUPPRESS)
    parser.add_argument("--effort", metavar="LEVEL", help="effort level sent to the model")
    add_refused_flags(parser)


def add_editor_argument(parser: argparse.ArgumentParser) -> None:
    """``--acp``: an editor drives mini-claude (see mini_claude/acp)."""
    parser.add_argument(
        "--acp",
        action="store_true",
        help="speak the Agent Client Protocol on stdin/stdout, for editors (Zed, JetBrains, "
        "Neovim); the editor opens sessions and sends prompts",
    )


def _run_editor(args: argparse.Namespace) -> int:
    """Before anything reads stdin: it carries the editor's messages."""
    if args.prompt is not None or args.print_mode:
        raise UsageError("--acp takes no prompt and no -p: the editor sends the prompts")
    _check_rules(args, Path.cwd())
    _check_permission_flags(args)
    from mini_claude.acp import run_acp

    return run_acp(args)


PRINT_ONLY_FLAGS = {
    "max_turns": "--max-turns",
    "system_prompt_file": "--system-prompt-file",
    "system_prompt": "--system-prompt",
    "resume_at": "--resume-at",
    "include_partial_messages": "--include-partial-messages",
    "permission_prompt_tool": "--permission-prompt-tool",
    "tools": "--tools",
}


# A flag whose empty value would quietly mean "not given", and what it needs instead.
NON_EMPTY_FLAGS = {
    "resume_at": ("--resume-at", "a message id (the uuid of a stream-json assistant line)"),
    "model": ("--model", "a model name"),
}


def _refuse_empty_values(args: argparse.Namespace) -> None:
    """``--resume-at ""`` is a mistake to report, not a flag to ignore."""
    for name, (flag, needed) in NON_EMPTY_FLAGS.items():
        value = getattr(args, name, None)
        if value is not None and not value.strip():
            raise UsageError(f"{flag} needs {needed}")


def _refuse_print_only_flags(args: argparse.Namespace) -> None:
    """Say so rather than ignore them."""
    given = [flag for name, flag in PRINT_ONLY_FLAGS.items() if getattr(args, name, None)]
    if given:
        verb = "applies" if len(given) == 1 else "apply"
        raise UsageError(f"{', '.join(given)} only {verb} to print mode (-p)")


def _check_rules(args: argparse.Namespace, cwd: Path) -> None:
    """A bad --allowed-tools / --disallowed-tools rule is a usage error before anything starts.

    Rules name tools by what they are, so the built-in tools are declared first; without
    rule flags nothing is loaded here (the REPL's first prompt is drawn before the tools)."""
    if not (args.allowed_tools or args.disallowed_tools):
        return
    from mini_claude.permissions.rules import RuleError, flag_rules

    _declare_tools()

    try:
        flag_rules(args.allowed_tools, args.disallowed_tools, cwd)
    except RuleError as exc:
        raise UsageError(str(exc)) from None


def _declare_tools() -> None:
    """What each built-in tool is, for rules and names read before a session loads them."""
    from mini_claude.tools.registry import declare_builtin_tools

    declare_builtin_tools()


def _starts_the_repl(args: argparse.Namespace) -> bool:
    """The REPL draws its first prompt before the tools load; every other way in needs them."""
    interactive = sys.stdin is not None and sys.stdin.isatty()
    return interactive and not (args.demo or args.acp or args.print_mode
                                or args.input_format == "stream-json")


def _permission_mode(text: str) -> str:
    from mini_claude.permissions.mode_table import parse_mode

    try:
        return parse_mode(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _check_permission_flags(args: argparse.Namespace) -> None:
    from mini_claude.permissions.mode_table import mode_from_flags

    try:
        mode_from_flags(args)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError("must be 1 or more")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "bench":
        from mini_claude.bench import main as bench_main

        return bench_main(argv[1:])
    if argv and argv[0] == "mcp":
        from mini_claude.mcp.cli_commands import main as mcp_main

        return mcp_main(argv[1:])
    if argv and argv[0] == "export-atif":
        from mini_claude.headless.atif import main as export_atif

        return export_atif(argv[1:])
    args = build_parser().parse_intermixed_args(argv)
    try:
        return _dispatch(args)
    except UsageError as exc:
        print(f"mini-claude: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except Exception as exc:  # the last line of defence: one line, never a traceback
        if args.debug:
            raise
        print(
            f"mini-claude: internal error: {type(exc).__name__}: {exc} (run with --debug for "
            "details)",
            file=sys.stderr,
        )
        return EXIT_FAILED


def _dispatch(args: argparse.Namespace) -> int:
    if args.worktree is not None and not args.demo:
        return _in_worktree(args)
    return _run(args, Path.cwd())


def _in_worktree(args: argparse.Namespace) -> int:
    """``-w [NAME]``: the whole session runs in a new git worktree of the project; at the
    end it is removed if nothing was done in it, else the user is told how to merge it."""
    from mini_claude.session.worktree import WorktreeError, enter_worktree

    try:
        worktree = enter_worktree(Path.cwd(), args.worktree)
    except WorktreeError as exc:
        raise UsageError(str(exc)) from None
    print(f"mini-claude: working in {worktree.path} (branch {worktree.branch})", file=sys.stderr)
    os.chdir(worktree.path)
    try:
        return _run(args, worktree.path)
    finally:
        try:
            print(f"mini-claude: {worktree.leave()}", file=sys.stderr)
        except WorktreeError as exc:
            print(f"mini-claude: {exc}", file=sys.stderr)


def _run(args: argparse.Namespace, cwd: Path) -> int:
    if not _starts_the_repl(args):
        _declare_tools()  # rules and Claude Code's names know the tools from the start
    if args.demo:
        return _run_demo(args)
    _refuse_empty_values(args)
    if args.acp:
        return _run_editor(args)
    resuming = bool(args.continue_session or args.resume)
    for flag, given in (("--fork-session", args.fork_session), ("--resume-at", args.resume_at)):
        if given and not resuming:
            raise UsageError(f"{flag} needs -c (continue) or -r ID (resume)")
    _check_claude_code_flags(args, cwd)
    if args.input_format == "stream-json":
        return _run_stream_input(args, cwd)
    prompt = _print_prompt(args)
    if args.resume is not None and not args.resume.strip() and prompt is not None:
        raise UsageError(
            "--resume needs a session id (or a prefix of one) in print mode; --continue "
            "resumes the newest session of this folder"
        )
    if prompt is None:
        _refuse_print_only_flags(args)
        _check_rules(args, cwd)  # print mode reports a bad rule itself, the same way
    _check_permission_flags(args)  # a contradiction is a usage error before anything starts
    settings = load_settings(args, cwd)
    if prompt is not None:
        from mini_claude.headless.printmode import run_print_mode

        return run_print_mode(settings, cwd, prompt, args)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError(
            'the REPL needs a terminal; use -p "PROMPT" (or pipe the prompt in) '
            "for non-interactive use"
        )
    from mini_claude.ui.early_keys import keys_kept_for_the_prompt

    with keys_kept_for_the_prompt(sys.stdin):  # from here on, typing is kept for the prompt
        from mini_claude.ui.repl import run_repl

        return run_repl(settings, cwd, args)


def _check_claude_code_flags(args: argparse.Namespace, cwd: Path) -> None:
    """Values of Claude Code's flags that cannot be honoured: one line, before anything runs."""
    from mini_claude.claude_flags import (
        FlagError,
        add_directories,
        agents_flag,
        check_prompt_tool,
        json_or_file,
        session_id_flag,
    )

    if args.input_format == "stream-json" and args.output_format != "stream-json":
        raise UsageError("--input-format stream-json needs --output-format stream-json")
    if args.system_prompt and args.system_prompt_file:
        raise UsageError("--system-prompt and --system-prompt-file cannot be used together")
    if args.session_id is not None and resuming_without_fork(args):
        raise UsageError("--session-id starts a new session: with -c or -r it needs "
                         "--fork-session")
    try:
        args.session_id = session_id_flag(args.session_id)
        check_prompt_tool(args.permission_prompt_tool, args.input_format)
        args.add_dir = list(add_directories(args.add_dir, cwd))
        agents_flag(args.agents)
        if args.settings is not None:
            json_or_file(args.settings, cwd, "--settings")
        for value in args.mcp_config or ():
            json_or_file(value, cwd, "--mcp-config")
    except FlagError as exc:
        raise UsageError(str(exc)) from None


def resuming_without_fork(args: argparse.Namespace) -> bool:
    return bool(args.continue_session or args.resume) and not args.fork_session


def _run_stream_input(args: argparse.Namespace, cwd: Path) -> int:
    """``--input-format stream-json``: the session a controlling program drives over stdin."""
    _check_permission_flags(args)
    settings = load_settings(args, cwd)
    from mini_claude.headless.stream_input import run_stream_input

    return run_stream_input(settings, cwd, args)


def _run_demo(args: argparse.Namespace) -> int:
    """The demo keeps what is typed while it starts, as the plain REPL does."""
    from mini_claude.ui.early_keys import keys_kept_for_the_prompt

    with keys_kept_for_the_prompt(sys.stdin):  # before the slow imports and the simulator
        from mini_claude.demo import run_demo

        return run_demo(args)


def _read_stdin() -> str:
    """Piped text; bytes that are not UTF-8 become U+FFFD instead of failing the run."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:
        return sys.stdin.read()
    data: bytes = buffer.read()
    return data.decode("utf-8", errors="replace")


def _print_prompt(args: argparse.Namespace) -> str | None:
    """The print-mode prompt: the prompt plus anything piped on stdin; None for the REPL.

    Without -p a prompt is the REPL's first message, unless text is piped in.
    """
    piped = ""
    if sys.stdin is not None and not sys.stdin.isatty():
        try:
            piped = _read_stdin()
        except (OSError, ValueError):
            piped = ""
    if not args.print_mode and not piped.strip():
        return None
    parts = [p for p in (args.prompt or "", piped.strip()) if p.strip()]
    if not parts:
        raise UsageError("-p needs a prompt (as an argument or on stdin)")
    return "\n\n".join(parts)


if __name__ == "__main__":
    raise SystemExit(main())
