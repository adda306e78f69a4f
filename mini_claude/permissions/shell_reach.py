"""What a command line reaches: whether it can only read, and which files it writes.

Both questions are answered from allow-lists, never deny-lists. A program is
read-only only if every option it is given is listed as read-only for it
(``sort -o``, ``sort --compress-program``, ``file -C``, ``git grep -O`` are not),
it has no more operands than it reads (``uniq in out`` writes ``out``), and
nothing on the line is left to run time in a way that could change that: no
command substitution, no assignment (``GIT_EXTERNAL_DIFF=…``), no redirection
into a file, no git setting (``-c``, ``--config-env``). Anything not known is
not read-only.

For a file command (``cp``, ``mv``, ``mkdir``, ``touch``) every path it names
counts, options included (``--target-directory=DIR``, ``-t DIR``); an option not
listed makes its reach unknown.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tree_sitter import Node

from mini_claude.permissions.shell_parse import analyse, command_name, command_words, parse, walk
from mini_claude.permissions.shell_wrappers import unwrap

Words = Sequence[str | None]


@dataclass(frozen=True)
class Options:
    """A program's options that are known (for the question at hand)."""

    flags: frozenset[str] = frozenset()  # no value
    valued: frozenset[str] = frozenset()  # a value, attached or the next word
    optional: frozenset[str] = frozenset()  # a value only when attached (--color=always)
    paths: frozenset[str] = frozenset()  # valued options whose value is a path it writes to
    max_operands: int | None = None  # operands past this many are written (uniq in out)
    operand_ok: Callable[[str], bool] | None = None  # date +FORMAT, never date MMDDhhmm
    numeric: bool = False  # head -5, git log -3


def options(flags: str = "", valued: str = "", optional: str = "", paths: str = "",
            **rest: object) -> Options:
    """Options from space-separated lists, to read next to the program's manual."""
    path_set = frozenset(paths.split())
    return Options(frozenset(flags.split()), frozenset(valued.split()) | path_set,
                   frozenset(optional.split()), path_set, **rest)  # type: ignore[arg-type]


@dataclass
class Parsed:
    """A command's words sorted into options, option values that are paths, and operands."""

    options: list[str] = field(default_factory=list)
    path_values: list[str | None] = field(default_factory=list)
    operands: list[str | None] = field(default_factory=list)
    problem: str | None = None


def read_options(program: str, spec: Options, words: Words) -> Parsed:
    """Sort ``words`` by ``spec``; ``problem`` names the first word that is not known."""
    parsed = Parsed()
    index, ended = 0, False
    while index < len(words) and parsed.problem is None:
        word = words[index]
        if ended or word == "-" or (word is not None and not word.startswith("-")):
            parsed.operands.append(word)
            index += 1
        elif word is None:
            parsed.problem = f"an argument of {program} is only known when the line runs"
        elif word == "--":
            ended = True
            index += 1
        elif word.startswith("--"):
            index += _long(program, spec, words, index, parsed)
        else:
            index += _short(program, spec, words, index, parsed)
    if parsed.problem is None:
        parsed.problem = _operand_problem(program, spec, parsed.operands)
    return parsed


def _long(program: str, spec: Options, words: Words, index: int, parsed: Parsed) -> int:
    name, equals, value = str(words[index]).partition("=")
    parsed.options.append(name)
    following = words[index + 1] if index + 1 < len(words) else None
    if name in spec.valued:
        if name in spec.paths:
            parsed.path_values.append(value if equals else following)
        return 1 if equals else 2
    if name in spec.optional or (name in spec.flags and not equals):
        return 1
    parsed.problem = f"{program} {name} is not known to be safe here"
    return 1


def _short(program: str, spec: Options, words: Words, index: int, parsed: Parsed) -> int:
    word = str(words[index])
    if word in spec.flags or (spec.numeric and word[1:].isdigit()):
        parsed.options.append(word)
        return 1
    following = words[index + 1] if index + 1 < len(words) else None
    body = word[1:]
    for position, letter in enumerate(body):
        option, attached = "-" + letter, body[position + 1:]
        parsed.options.append(option)
        if option in spec.flags:
            continue
        if option in spec.valued:
            if option in spec.paths:
                parsed.path_values.append(attached or following)
            return 1 if attached else 2
        if option in spec.optional:
            return 1
        parsed.problem = f"{program} {option} is not known to be safe here"
        return 1
    return 1


def _operand_problem(program: str, spec: Options, operands: list[str | None]) -> str | None:
    if spec.max_operands is not None and len(operands) > spec.max_operands:
        return f"{program} writes to its operand {operands[spec.max_operands]!r}"
    if spec.max_operands is not None and None in operands:
        return f"{program} is given operands only known when the line runs"
    if spec.operand_ok is not None:
        for operand in operands:
            if operand is None or not spec.operand_ok(operand):
                return f"{program} {operand or '…'} may change something"
    return None


# ---- read-only programs ---------------------------------------------------------------------

# Every option of these reads (GNU coreutils, grep, util-linux and BSD manuals): they take any
# words, even ones only known at run time (a glob, $VAR, xargs).
ANY_WORDS = frozenset({
    "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "ls", "pwd", "echo",
    "which", "whereis", "type", "stat", "du", "df", "basename", "dirname", "realpath",
    "readlink", "true", "false", "test", "[", "cmp", "comm", "cut", "tr", "nl", "column",
    "fold", "od", "hexdump", "md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum",
    "sha512sum", "b2sum", "cksum", "tac", "rev", "seq", "expr", "printenv", "id", "ps", "jq",
    "diff", "whoami", "groups", "nproc", "arch", "tty", "locale", "sleep",
})
READ_ONLY: dict[str, Options] = {
    "printf": options(),  # never -v: it sets a variable (PATH) that decides what runs next
    "sort": options("-b -d -f -g -i -M -h -n -R -r -V -c -C -m -s -u -z --ignore-leading-blanks "
                    "--dictionary-order --ignore-case --general-numeric-sort "
                    "--ignore-nonprinting --month-sort --human-numeric-sort --numeric-sort "
                    "--random-sort --reverse --version-sort --merge --stable --unique "
                    "--zero-terminated --debug --check",
                    "-k -t -S --key --field-separator --buffer-size --parallel --sort "
                    "--files0-from --random-source", "--check"),
    "uniq": options("-c -d -D -i -u -z --count --repeated --ignore-case --unique "
                    "--zero-terminated", "-f -s -w --skip-fields --skip-chars --check-chars",
                    "--all-repeated --group", max_operands=1),
    "xxd": options("-a -b -C -E -e -i -p -ps -plain -u -d -autoskip -bits -capitalize "
                   "-EBCDIC -include -postscript -uppercase -decimal",
                   "-c -g -l -n -o -s -cols -groupsize -len -name -offset -seek",
                   max_operands=1),
    "file": options("-b -c -d -E -h -i -k -l -L -N -n -r -s -S -v -z -Z -0 --brief "
                    "--checking-printout --dereference --no-dereference --keep-going --list "
                    "--mime --mime-type --mime-encoding --no-pad --no-buffer --raw "
                    "--special-files --no-sandbox --uncompress --uncompress-noreport "
                    "--print0 --extension --apple",
                    "-e -F -f -m -P --exclude --exclude-quiet --separator --files-from "
                    "--magic-file --parameter"),
    "tree": options("-a -d -l -f -x -q -N -Q -p -u -g -s -h -D -F -v -t -c -U -r -C -n -J -X "
                    "--noreport --si --du --inodes --device --dirsfirst --filesfirst "
                    "--gitignore --prune --matchdirs --ignore-case --fromfile",
                    "-L -P -I --filelimit --charset --timefmt --sort", numeric=False),
    "date": options("-u -R --utc --universal --rfc-email --debug",
                    "-d -r --date --reference", "-I --iso-8601 --rfc-3339",
                    operand_ok=lambda word: word.startswith("+")),
    "uname": options("-a -s -n -r -v -m -p -i -o --all --kernel-name --nodename "
                     "--kernel-release --kernel-version --machine --processor "
                     "--hardware-platform --operating-system", max_operands=0),
    "hostname": options("-a -A -d -f -i -I -s -y --alias --all-fqdns --domain --fqdn --long "
                        "--ip-address --all-ip-addresses --short", max_operands=0),
    "rg": options("-i -S -s -w -x -v -c -l -L -n -N -H -I -F -o -U -u -uu -uuu -0 -p -a -b -q "
                  "--ignore-case --smart-case --case-sensitive --word-regexp --line-regexp "
                  "--invert-match --count --count-matches --files-with-matches "
                  "--files-without-match --follow --line-number --no-line-number "
                  "--with-filename --no-filename --fixed-strings --only-matching --multiline "
                  "--multiline-dotall --hidden --no-ignore --no-ignore-vcs --no-ignore-dot "
                  "--no-ignore-global --no-ignore-parent --no-ignore-exclude --no-ignore-files "
                  "--files --type-list --null --heading --no-heading --column --vimgrep "
                  "--json --no-messages --stats --passthru --trim --pretty --text --binary "
                  "--byte-offset --quiet --no-config --crlf --null-data --one-file-system "
                  "--pcre2 --no-pcre2 --sort-files --line-buffered --block-buffered "
                  "--include-zero --no-unicode --unrestricted --debug --trace",
                  "-e -g -t -T -A -B -C -m -d -E -f -j -M -r --regexp --glob --iglob --type "
                  "--type-not --type-add --type-clear --after-context --before-context "
                  "--context --max-count --max-depth --max-filesize --max-columns --sort "
                  "--sortr --color --colors --encoding --file --threads --replace "
                  "--ignore-file --path-separator --context-separator --field-match-separator "
                  "--field-context-separator --engine --regex-size-limit --dfa-size-limit",
                  numeric=False),
    "ag": options("-i -s -S -w -v -c -l -L -n -Q -o -a -u -U -f -H --ignore-case "
                  "--case-sensitive --smart-case --word-regexp --invert-match --count "
                  "--files-with-matches --files-without-matches --literal --only-matching "
                  "--all-types --unrestricted --skip-vcs-ignores --follow --hidden --nocolor "
                  "--noheading --heading --nogroup --group --column --numbers --nonumbers "
                  "--vimgrep --null --print0 --stats --silent",
                  "-A -B -C -G -g -m --after --before --context --file-search-regex "
                  "--ignore --ignore-dir --depth --max-count --color-match --color-path "
                  "--color-line-number", "--color"),
    "fd": options("-H -I -u -s -i -g -F -a -l -L -p -0 -q --hidden --no-ignore "
                  "--no-ignore-vcs --unrestricted --case-sensitive --ignore-case --glob "
                  "--regex --fixed-strings --absolute-path --list-details --follow "
                  "--full-path --print0 --quiet --show-errors --prune --one-file-system",
                  "-d -t -e -E -S -c -j -o --max-depth --min-depth --exact-depth --type "
                  "--extension --exclude --size --changed-within --changed-before --owner "
                  "--color --threads --max-results --base-directory --path-separator "
                  "--ignore-file --search-path --format --newer --older"),
}
ENV_READ_OPTIONS = frozenset({"-i", "--ignore-environment", "-u", "--unset", "-0", "--null"})
# Wrappers plan mode looks through, and the options of theirs that change nothing.
READ_ONLY_WRAPPERS: dict[str, frozenset[str]] = {
    "timeout": frozenset({"-s", "--signal", "-k", "--kill-after", "-v", "--verbose",
                          "--preserve-status", "--foreground"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "env": ENV_READ_OPTIONS,
    "stdbuf": frozenset({"-i", "-o", "-e", "--input", "--output", "--error"}),
    "command": frozenset({"-v", "-V"}),
    "time": frozenset({"-p", "--portability"}),
    "xargs": frozenset({"-0", "--null", "-r", "--no-run-if-empty", "-t", "--verbose", "-x",
                        "--exit", "-d", "--delimiter", "-n", "--max-args", "-L", "-l",
                        "--max-lines", "-P", "--max-procs", "-s", "--max-chars", "-I", "-i",
                        "--replace", "-E", "-e", "--eof", "-a", "--arg-file"}),
}
# Syntax that runs or changes nothing by itself; anything else on the line is not read-only.
READ_ONLY_SYNTAX = frozenset({
    "program", "list", "pipeline", "command", "command_name", "word", "string",
    "string_content", "raw_string", "ansi_c_string", "translated_string", "concatenation",
    "simple_expansion", "expansion", "variable_name", "special_variable_name", "number",
    "file_redirect", "file_descriptor", "heredoc_redirect", "heredoc_start", "heredoc_body",
    "heredoc_content", "heredoc_end", "herestring_redirect", "redirected_statement",
    "subshell", "compound_statement", "if_statement", "elif_clause", "else_clause",
    "for_statement", "c_style_for_statement", "while_statement", "do_group",
    "case_statement", "case_item", "negated_command", "test_command", "binary_expression",
    "unary_expression", "parenthesized_expression", "postfix_expression",
    "ternary_expression", "test_operator", "regex", "comment", "arithmetic_expansion",
    "brace_expression", "extglob_pattern", "subscript",
})
SYNTAX_PROBLEMS = {
    "command_substitution": "a command substitution runs a command",
    "process_substitution": "a process substitution runs a command",
    "variable_assignment": "an assignment can change what a program runs",
    "variable_assignments": "an assignment can change what a program runs",
    "declaration_command": "export/declare can change what a program runs",
    "function_definition": "a function definition can stand in for a command",
}
ASSIGNING = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "**=", "<<=", ">>=", "&=", "^=", "|=",
                       "++", "--"})
SILENT_TARGETS = frozenset({"/dev/null"})
WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&", "&>|"})


def read_only_problem(command: str) -> str | None:
    """None when the line certainly only reads; otherwise why it may not."""
    root = parse(command)
    if root.has_error:
        return "the line does not parse"
    for node in walk(root):
        if not node.is_named:
            continue
        if node.type not in READ_ONLY_SYNTAX:
            return SYNTAX_PROBLEMS.get(node.type, f"{node.type.replace('_', ' ')} on the line")
        changed = _sets_a_variable(node)
        if changed:
            return changed
        if node.type == "file_redirect":
            problem = redirect_problem(node)
            if problem:
                return problem
        elif node.type == "command":
            problem = _command_problem(command_words(node))
            if problem:
                return problem
    analysis = analyse(command)
    return analysis.reasons[0] if analysis.uncertain else None


def _sets_a_variable(node: Node) -> str | None:
    """``for PATH in …``, ``((PATH=1))``, ``${PATH:=…}``: a variable that decides what runs
    (or what git runs) may change on the line."""
    if node.type == "for_statement":
        variable = node.child_by_field_name("variable")
        name = (variable.text or b"").decode() if variable is not None else ""
        if name == name.upper():
            return f"for {name} changes a variable programs read"
    arithmetic = node.type in ("arithmetic_expansion", "c_style_for_statement") or (
        node.type == "compound_statement" and node.child_count and node.children[0].type == "((")
    if arithmetic and any(not n.is_named and n.type in ASSIGNING for n in walk(node)):
        return "arithmetic that assigns a variable"
    if node.type == "expansion" and any(not c.is_named and c.type in ("=", ":=")
                                        for c in node.children):
        return "an expansion that assigns a variable"
    return None


def redirect_problem(node: Node) -> str | None:
    """A redirection that writes a file (``>``, ``>>``, ``>|``, ``&>``, ``>& file``)."""
    operator = next((c.type for c in node.children if not c.is_named), "")
    target = node.child_by_field_name("destination")
    text = (target.text or b"").decode("utf-8", "replace") if target is not None else ""
    if operator not in WRITE_REDIRECTS:
        return None
    if operator in (">&", "<&") and (text.isdigit() or text == "-"):
        return None  # 2>&1: one descriptor onto another
    if target is not None and target.type == "word" and text in SILENT_TARGETS:
        return None
    return f"the output is redirected into a file ({operator} {text})"


def _command_problem(words: Words, *, via_xargs: bool = False) -> str | None:
    if not words:
        return None
    first = words[0]
    if first is None:
        return "the command word is only known when the line runs"
    if "/" in first:
        return f"{first} is a program named by its path"
    program = command_name(first)
    rest = list(words[1:])
    if via_xargs and program not in ANY_WORDS:
        return f"xargs gives {program} words only known when the line runs"
    if program in READ_ONLY_WRAPPERS:
        return _wrapper_problem(program, rest)
    if program == "git":
        return _git_problem(rest)
    if program == "find":
        return _find_problem(rest)
    if program in ANY_WORDS:
        return None
    spec = READ_ONLY.get(program)
    if spec is None:
        return f"{program} is not known to be read-only"
    return read_options(program, spec, rest).problem


def _wrapper_problem(program: str, rest: list[str | None]) -> str | None:
    unwrapped = unwrap(program, rest)
    if unwrapped.unknown:
        return unwrapped.unknown
    extra = [o for o in unwrapped.options if o not in READ_ONLY_WRAPPERS[program]]
    if extra:
        return f"{program} {extra[0]} is not known to be safe here"
    if unwrapped.assignments or unwrapped.scripts:
        return f"{program} sets variables or runs a line"
    if unwrapped.runs_nothing:
        return None
    inner = unwrapped.inner
    if program == "nice" and inner and inner[0] is not None and inner[0].lstrip("-").isdigit():
        return f"nice {inner[0]} is not known to be safe here"
    if program == "xargs":
        return _command_problem(inner or ["echo"], via_xargs=True)
    return _command_problem(inner)


# ---- git ----------------------------------------------------------------------------------

GIT_GLOBAL_READ_OPTIONS = frozenset({
    "--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs", "--glob-pathspecs",
    "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects",
})
_DIFF_FLAGS = (
    "-p -u -s -w -b -z -R -a -D -M -C -B -W -1 -2 -3 -c -m -t --cc --dd --patch --no-patch "
    "--raw --patch-with-raw --patch-with-stat --stat --compact-summary --numstat "
    "--shortstat --summary --name-only --name-status --no-color --no-renames "
    "--rename-empty --no-rename-empty --check --full-index --binary --text "
    "--ignore-cr-at-eol --ignore-space-at-eol --ignore-space-change --ignore-all-space "
    "--ignore-blank-lines --minimal --patience --histogram --indent-heuristic "
    "--no-indent-heuristic --function-context --exit-code --quiet --no-ext-diff "
    "--no-textconv --no-prefix --default-prefix --ita-invisible-in-index "
    "--ita-visible-in-index --cached --staged --merge-base --no-index "
    "--irreversible-delete --find-copies-harder --no-relative --pickaxe-all "
    "--pickaxe-regex --base --ours --theirs --combined-all-paths --first-parent --root "
    "--full-diff --no-color-moved --no-color-moved-ws"
)
_DIFF_VALUED = (
    "-S -G -l -U -I --unified --inter-hunk-context --diff-algorithm --anchored "
    "--diff-filter --src-prefix --dst-prefix --line-prefix --ignore-matching-lines "
    "--word-diff-regex --output-indicator-new --output-indicator-old "
    "--output-indicator-context --skip-to --rotate-to"
)
_DIFF_OPTIONAL = (
    "--stat --dirstat --cumulative --submodule --color --color-words --word-diff "
    "--abbrev --find-renames --find-copies --break-rewrites --relative --ignore-submodules "
    "--color-moved --color-moved-ws --stat-width --stat-name-width --stat-count "
    "--stat-graph-width --remerge-diff --diff-merges"
)
_LOG_FLAGS = (
    "--oneline --graph --no-decorate --all --reflog -g --walk-reflogs --merges --no-merges "
    "--not --left-right --left-only --right-only --cherry-pick --cherry-mark --cherry "
    "--boundary --simplify-by-decoration --full-history --dense --sparse --simplify-merges "
    "--show-pulls --topo-order --date-order --author-date-order --reverse --do-walk --follow "
    "--source --use-mailmap --mailmap --log-size --abbrev-commit --no-abbrev-commit "
    "--no-abbrev --parents --children --relative-date --no-expand-tabs --no-notes "
    "--show-linear-break --all-match --invert-grep -i --regexp-ignore-case --basic-regexp "
    "-E --extended-regexp -F --fixed-strings -P --perl-regexp --remove-empty "
    "--single-worktree --count --objects --objects-edge --no-object-names --timestamp "
    "--header --in-commit-order --bisect --clear-decorations --no-walk-reflogs"
)
_LOG_VALUED = (
    "-n --max-count --skip --since --after --until --before --author --committer --grep "
    "--grep-reflog --min-parents --max-parents --date --format --encoding --glob --exclude "
    "-L --since-as-filter --decorate-refs --decorate-refs-exclude"
)
_LOG_OPTIONAL = (
    "--decorate --branches --tags --remotes --no-walk --pretty --expand-tabs --notes "
    "--ancestry-path --show-notes-by-default"
)


def _git_options(flags: str = "", valued: str = "", optional: str = "", *, log: bool = False,
                 diff: bool = False, **rest: object) -> Options:
    parts = [(flags, valued, optional)]
    if diff:
        parts.append((_DIFF_FLAGS, _DIFF_VALUED, _DIFF_OPTIONAL))
    if log:
        parts.append((_LOG_FLAGS, _LOG_VALUED, _LOG_OPTIONAL))
    return options(" ".join(p[0] for p in parts), " ".join(p[1] for p in parts),
                   " ".join(p[2] for p in parts), "", numeric=True, **rest)


GIT_READERS: dict[str, Options] = {
    "status": _git_options("-s -b -v -z --short --branch --long --verbose --null --no-column "
                           "--ahead-behind --no-ahead-behind --renames --no-renames "
                           "--show-stash",
                           optional="-u --untracked-files --ignored --ignore-submodules "
                                    "--porcelain --column --find-renames"),
    "diff": _git_options(diff=True),
    "log": _git_options(log=True, diff=True),
    "whatchanged": _git_options(log=True, diff=True),
    "show": _git_options(log=True, diff=True),
    "rev-list": _git_options(log=True),
    "shortlog": _git_options("-s -e -c --summary --numbered --email --committer", "--group",
                             "-w", log=True),
    "blame": _git_options("-b -l -t -s -e -p -f -n -c -w --root --show-stats --porcelain "
                          "--line-porcelain --incremental --show-name --show-number "
                          "--show-email --minimal --first-parent --color-lines "
                          "--color-by-age --score-debug --reverse --no-progress",
                          "-L -S --date --contents --ignore-rev --ignore-revs-file "
                          "--since --encoding", "-M -C --abbrev"),
    "grep": _git_options("-a -i -I -r -w -v -h -H -E -G -P -F -n -l -L -z -o -c -p -W -q "
                         "--text --no-textconv --ignore-case --recursive --no-recursive "
                         "--word-regexp --invert-match --full-name --extended-regexp "
                         "--basic-regexp --perl-regexp --fixed-strings --line-number "
                         "--column --files-with-matches --name-only --files-without-match "
                         "--null --only-matching --count --no-color --break --heading "
                         "--show-function --function-context --and --or --not --all-match "
                         "--quiet --cached --untracked --no-index --exclude-standard "
                         "--no-exclude-standard --recurse-submodules",
                         "-A -B -C -f -e -m --max-depth --after-context --before-context "
                         "--context --threads --max-count", "--color"),
    "ls-files": _git_options("-c -d -m -o -i -s -u -k -z -t -v -f --cached --deleted "
                             "--modified --others --ignored --stage --killed --directory "
                             "--no-empty-directory --eol --deduplicate --exclude-standard "
                             "--error-unmatch --full-name --recurse-submodules --sparse "
                             "--debug --resolve-undo",
                             "-x -X --exclude --exclude-from --exclude-per-directory "
                             "--with-tree --format", "--abbrev"),
    "ls-tree": _git_options("-d -r -t -l -z --long --name-only --name-status --object-only "
                            "--full-name --full-tree", "--format", "--abbrev"),
    "rev-parse": _git_options("-q --show-toplevel --show-prefix --show-cdup --git-dir "
                              "--git-common-dir --absolute-git-dir --is-inside-git-dir "
                              "--is-inside-work-tree --is-bare-repository "
                              "--is-shallow-repository --show-superproject-working-tree "
                              "--verify --quiet --sq --not --symbolic --symbolic-full-name "
                              "--all --local-env-vars --show-ref-format",
                              "--default --prefix --glob --exclude --since --after --until "
                              "--before", "--short --abbrev-ref --branches --tags --remotes "
                              "--show-object-format --path-format"),
    "describe": _git_options("--all --tags --long --always --exact-match --first-parent "
                             "--contains --debug", "--match --exclude --candidates",
                             "--dirty --broken --abbrev"),
    "cat-file": _git_options("-t -s -p -e --batch-all-objects --buffer --unordered "
                             "--follow-symlinks --allow-unknown-type", "",
                             "--batch --batch-check"),
    "merge-base": _git_options("-a --all --octopus --independent --is-ancestor --fork-point"),
    "name-rev": _git_options("--tags --all --stdin --annotate-stdin --name-only "
                             "--no-undefined --always", "--refs --exclude"),
    "branch": _git_options("-a -r -v -vv -l -i --all --remotes --verbose --list "
                           "--show-current --no-color --no-column --ignore-case --omit-empty",
                           "--contains --no-contains --merged --no-merged --sort --format "
                           "--points-at", "--color --column --abbrev"),
    "tag": _git_options("-l -i --list --ignore-case --no-column --omit-empty",
                        "--contains --no-contains --merged --no-merged --sort --format "
                        "--points-at", "-n --color --column"),
    "remote": _git_options("-v --verbose", max_operands=0),
}
GIT_LISTERS = frozenset({"branch", "tag"})  # their operands create things, unless listing


def _git_problem(rest: list[str | None]) -> str | None:
    index = 0
    while index < len(rest):
        word = rest[index]
        if word is None:
            return "an argument of git is only known when the line runs"
        if not word.startswith("-"):
            break
        if word not in GIT_GLOBAL_READ_OPTIONS:
            return f"git {word.split('=')[0]} can make git run other programs or read elsewhere"
        index += 1
    if index >= len(rest):
        return "git with no subcommand"
    sub = str(rest[index])
    spec = GIT_READERS.get(sub)
    if spec is None:
        return f"git {sub} is not known to be read-only"
    parsed = read_options(f"git {sub}", spec, rest[index + 1:])
    if parsed.problem:
        return parsed.problem
    if sub in GIT_LISTERS and parsed.operands and not {"-l", "--list"} & set(parsed.options):
        return f"git {sub} with a name creates one"
    return None


# ---- find ---------------------------------------------------------------------------------

FIND_TESTS_WITHOUT_VALUE = frozenset({
    "-print", "-print0", "-ls", "-prune", "-quit", "-true", "-false", "-empty", "-readable",
    "-writable", "-executable", "-nouser", "-nogroup", "-depth", "-d", "-follow", "-xdev",
    "-mount", "-noleaf", "-daystart", "-ignore_readdir_race", "-noignore_readdir_race",
    "-not", "-and", "-or", "-a", "-o", "!", "(", ")", ",", "-nowarn", "-warn",
})
FIND_TESTS_WITH_VALUE = frozenset({
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
    "-lname", "-ilname", "-type", "-xtype", "-size", "-mtime", "-mmin", "-atime", "-amin",
    "-ctime", "-cmin", "-used", "-newer", "-anewer", "-cnewer", "-perm", "-user", "-group",
    "-uid", "-gid", "-links", "-inum", "-samefile", "-maxdepth", "-mindepth", "-regextype",
    "-printf", "-fstype", "-context",
})
NEWER_XY = frozenset(f"-newer{x}{y}" for x in "amcB" for y in "amcBt")


def _find_problem(rest: list[str | None]) -> str | None:
    """``find`` with paths and tests from the lists; -exec, -delete, -fprint… are not."""
    index = 0
    while index < len(rest) and rest[index] in ("-H", "-L", "-P"):
        index += 1
    expression = False
    while index < len(rest):
        word = rest[index]
        if word is None:
            return "an argument of find is only known when the line runs (quote its patterns)"
        is_test = word.startswith("-") or word in ("!", "(", ")", ",")
        if not is_test and not expression:
            index += 1  # a starting path
            continue
        expression = True
        if word in FIND_TESTS_WITHOUT_VALUE:
            index += 1
        elif word in FIND_TESTS_WITH_VALUE or word in NEWER_XY:
            if index + 1 >= len(rest) or rest[index + 1] is None:
                return f"find {word} with a value only known when the line runs"
            index += 2
        else:
            return f"find {word} is not known to be read-only"
    return None


# ---- file commands (acceptEdits) ------------------------------------------------------------

FILE_COMMANDS: dict[str, Options] = {
    "mkdir": options("-p -v -Z --parents --verbose", "-m --mode", "--context"),
    "touch": options("-a -c -f -h -m --no-create --no-dereference", "-d -t --date --time",
                     paths="-r --reference"),
    "cp": options("-a -b -d -f -i -H -l -L -n -P -p -R -r -s -u -v -x -T -Z --archive "
                  "--attributes-only --copy-contents --force --interactive --link "
                  "--dereference --no-clobber --no-dereference --parents --recursive "
                  "--remove-destination --strip-trailing-slashes --symbolic-link --verbose "
                  "--one-file-system --no-target-directory --keep-directory-symlink --debug",
                  "--no-preserve", "--backup --preserve --reflink --sparse --update "
                  "--context", paths="-t --target-directory"),
    "mv": options("-b -f -i -n -u -v -T -Z --force --interactive --no-clobber "
                  "--strip-trailing-slashes --verbose --no-target-directory --exchange "
                  "--no-copy --debug", "", "--backup --update --context",
                  paths="-t --target-directory"),
}


def file_command_paths(words: Words) -> list[str] | None:
    """Every path a ``mkdir``/``touch``/``cp``/``mv`` names, option values included; None when
    it is not one of them, or a word or option is not known."""
    if not words or words[0] is None or words[0] not in FILE_COMMANDS:
        return None
    parsed = read_options(words[0], FILE_COMMANDS[words[0]], list(words[1:]))
    if parsed.problem:
        return None
    paths = [*parsed.path_values, *parsed.operands]
    if not parsed.operands or any(path is None for path in paths):
        return None
    return [str(path) for path in paths]

