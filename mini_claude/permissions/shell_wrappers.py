"""Commands that run another command, and how to find the command they run.

``timeout 5 rm f`` runs ``rm``; ``env -S 'rm f'`` and ``su -c 'rm f'`` run a line;
``flock lock rm f`` and ``chroot /srv rm f`` take one word of their own first. Each
wrapper's own options are listed in full: an option that is not listed may take
a value, so where the command starts is not known, and the line is then read as
uncertain (a deny rule denies it) rather than guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class WrapperSpec:
    """The options of a command that runs another one."""

    flags: frozenset[str] = frozenset()  # options without a value
    valued: frozenset[str] = frozenset()  # options with a value (attached or the next word)
    optional: frozenset[str] = frozenset()  # options whose value can only be attached
    scripts: frozenset[str] = frozenset()  # options whose value is a command line
    operands: int = 0  # plain words of its own before the command (timeout's duration)
    runs_nothing: frozenset[str] = frozenset()  # options after which no command runs
    shells: frozenset[str] = frozenset()  # options that make it run a shell (sudo -s)
    numeric: bool = False  # -5 is an option (nice)
    script_after_operand: bool = False  # flock FILE -c 'line'


def spec(flags: str = "", valued: str = "", optional: str = "", scripts: str = "",
         **rest: object) -> WrapperSpec:
    """A spec from space-separated option lists (short to read, and to check against a man page)."""
    return WrapperSpec(frozenset(flags.split()), frozenset(valued.split()),
                       frozenset(optional.split()), frozenset(scripts.split()),
                       **rest)  # type: ignore[arg-type]


WRAPPERS: dict[str, WrapperSpec] = {
    "sudo": spec("-A -b -E -H -K -k -l -n -P -S -V -v -i -s --askpass --background "
                 "--preserve-env --set-home --login --list --non-interactive --shell "
                 "--stdin --validate --reset-timestamp --remove-timestamp",
                 "-u -g -h -p -C -D -R -r -t -T -U --user --group --host --prompt "
                 "--close-from --chdir --chroot --role --type --command-timeout "
                 "--other-user", "--preserve-env",
                 runs_nothing=frozenset({"-l", "--list", "-v", "--validate", "-K", "-k",
                                         "--reset-timestamp", "--remove-timestamp", "-V"}),
                 shells=frozenset({"-s", "-i", "--shell", "--login"})),
    "doas": spec("-n -s -L", "-u -C", shells=frozenset({"-s"})),
    "env": spec("-i -0 -v --ignore-environment --null --debug --list-signal-handling",
                "-u -C --unset --chdir",
                "--ignore-signal --default-signal --block-signal", "-S --split-string"),
    "nice": spec("", "-n --adjustment", numeric=True),
    "ionice": spec("-t --ignore", "-c -n -p -P -u --class --classdata --pid --pgid --uid",
                   runs_nothing=frozenset({"-p", "-P", "-u", "--pid", "--pgid", "--uid"})),
    "nohup": spec(),
    "time": spec("-p -a -q -v --append --portability --quiet --verbose",
                 "-f -o --format --output"),
    "command": spec("-p -v -V", runs_nothing=frozenset({"-v", "-V"})),
    "builtin": spec(),
    "exec": spec("-c -l", "-a"),
    "setsid": spec("-c -f -w --ctty --fork --wait"),
    "stdbuf": spec("", "-i -o -e --input --output --error"),
    "chrt": spec("-a -b -d -f -i -o -r -R -m -v --all-tasks --batch --deadline --fifo --idle "
                 "--other --rr --reset-on-fork --max --verbose -p --pid",
                 "-T -P -D --sched-runtime --sched-period --sched-deadline", operands=1,
                 runs_nothing=frozenset({"-p", "--pid", "-m", "--max"})),
    "taskset": spec("-a -c -p --all-tasks --cpu-list --pid", operands=1,
                    runs_nothing=frozenset({"-p", "--pid"})),
    "unbuffer": spec("-p"),
    "caffeinate": spec("-d -i -m -s -u", "-t -w"),
    "watch": spec("-b -c -C -e -g -t -x -r -w -p --beep --color --no-color --errexit "
                  "--chgexit --no-title --exec --no-rerun --no-wrap --precise",
                  "-n -q -s --interval --equexit --shotsdir", "-d --differences"),
    "strace": spec("-f -ff -c -C -d -D -F -h -i -q -qq -r -t -tt -ttt -T -v -V -w -x -xx -y "
                   "-yy -k -n -Z -z", "-e -o -O -p -s -S -u -a -b -E -I -P -X -U"),
    "ltrace": spec("-b -c -C -d -f -h -i -L -r -S -t -tt -ttt -T -V",
                   "-a -A -D -e -F -l -n -o -p -s -u -w -x"),
    "timeout": spec("-v --verbose --preserve-status --foreground",
                    "-s -k --signal --kill-after", operands=1),
    "xargs": spec("-0 -o -p -r -t -x --null --open-tty --interactive --no-run-if-empty "
                  "--verbose --exit --show-limits",
                  "-a -d -E -I -L -n -P -s --arg-file --delimiter --max-args --max-procs "
                  "--max-chars --process-slot-var", "-e -i -l --eof --replace --max-lines"),
    "flock": spec("-s -e -x -u -n -o -F --shared --exclusive --unlock --nb --nonblock --close "
                  "--no-fork --verbose", "-w -E --wait --timeout --conflict-exit-code",
                  scripts="-c --command", operands=1, script_after_operand=True),
    "script": spec("-a -e -f -q --append --return --flush --quiet --force",
                   "-E -T -I -O -B -m -o --echo --log-timing --log-in --log-out --log-io "
                   "--logging-format --output-limit", "-t --timing", "-c --command",
                   operands=1, shells=frozenset({"<bare>"})),
    "setpriv": spec("-d --dump --nnp --no-new-privs --clear-groups --keep-groups "
                    "--init-groups --reset-env",
                    "--reuid --regid --ruid --rgid --euid --egid --groups --inh-caps "
                    "--ambient-caps --bounding-set --securebits --pdeathsig --selinux-label "
                    "--apparmor-profile --landlock-access --landlock-rule --seccomp-filter"),
    "unshare": spec("-m -u -i -n -p -U -C -T -f -r -c --fork --map-root-user "
                    "--map-current-user --keep-caps --map-auto",
                    "--propagation --setgroups -R -w -S -G -l --root --wd --setuid --setgid "
                    "--map-user --map-group --map-users --map-groups --monotonic --boottime "
                    "--load-interp",
                    "--mount --uts --ipc --net --pid --user --cgroup --time --mount-proc "
                    "--mount-binfmt --kill-child", shells=frozenset({"<bare>"})),
    "prlimit": spec("--noheadings --raw --verbose", "-p -o --pid --output",
                    "-c -d -e -f -i -l -m -n -q -r -s -t -u -v -x -y --core --data --nice "
                    "--fsize --sigpending --memlock --rss --nofile --msgqueue --rtprio "
                    "--stack --cpu --nproc --as --locks --rttime",
                    runs_nothing=frozenset({"-p", "--pid"})),
    "chroot": spec("--skip-chdir", "--userspec --groups", operands=1,
                   shells=frozenset({"<bare>"})),
    "nsenter": spec("-a -F -Z --all --no-fork --follow-context --preserve-credentials",
                    "-t -S -G -r -w --target --setuid --setgid --root --wd",
                    "-m -u -i -n -p -U -C -T --mount --uts --ipc --net --pid --user --cgroup "
                    "--time", shells=frozenset({"<bare>"})),
    "pkexec": spec("--disable-internal-agent --keep-cwd", "--user",
                   shells=frozenset({"<bare>"})),
    "systemd-run": spec("--user --system --scope -q --quiet --wait -P --pipe -t --pty -G "
                        "--collect --no-block -S --shell --same-dir -d",
                        "-p -u -E --property --unit --setenv --working-directory --uid --gid "
                        "--nice --slice --description -M --machine -H --host"),
    "firejail": spec(),
    "busybox": spec(),
    "catchsegv": spec(),
}
# The first plain word after their options is their own (a duration, a priority, a lock file).
WRAPPERS_WITH_ONE_ARGUMENT = frozenset(n for n, s in WRAPPERS.items() if s.operands)
BARE = "<bare>"  # in ``shells``: with no command, it runs an interactive shell


@dataclass
class Unwrapped:
    """What a wrapper runs: a command (its words), command lines, or nothing."""

    inner: list[str | None] = field(default_factory=list)
    scripts: list[str | None] = field(default_factory=list)
    options: list[str] = field(default_factory=list)
    assignments: list[str] = field(default_factory=list)  # env X=1 / sudo X=1
    unknown: str | None = None  # why where the command starts cannot be known
    through_shell: bool = False  # sudo -s cmd: the words are a line for a shell
    runs_nothing: bool = False


def unwrap(program: str, rest: Sequence[str | None]) -> Unwrapped:
    """Read a wrapper's own options and operands; the rest is the command it runs."""
    wrapper = WRAPPERS[program]
    out = Unwrapped()
    index = _read_options(program, wrapper, list(rest), out)
    if out.unknown is not None:
        return out
    words = list(rest)
    for _ in range(wrapper.operands):
        if index < len(words) and words[index] == "--":
            index += 1
        if index >= len(words):
            break
        if words[index] is None:
            out.unknown = f"an argument of {program} is only known when the line runs"
            return out
        index += 1
        if wrapper.script_after_operand and index < len(words) and words[index] in (
                "-c", "--command"):
            out.scripts.append(words[index + 1] if index + 1 < len(words) else None)
            return out
    # env X=1 cmd, sudo X=1 cmd; after another wrapper X=1 would be a program's name, but
    # reading it as env does can only find more.
    while index < len(words) and words[index] is not None and is_assignment(str(words[index])):
        out.assignments.append(str(words[index]))
        index += 1
    if out.runs_nothing:
        return out
    out.inner = words[index:]
    shell_option = any(o in wrapper.shells for o in out.options)
    if not out.inner and not out.scripts and (shell_option or BARE in wrapper.shells):
        out.unknown = f"{program} with no command runs a shell that reads its commands from stdin"
    out.through_shell = shell_option and bool(out.inner)
    return out


def _read_options(program: str, wrapper: WrapperSpec, words: list[str | None],
                  out: Unwrapped) -> int:
    """The index of the first word after the options (``--`` consumed); sets out.unknown."""
    index = 0
    while index < len(words):
        word = words[index]
        if word is None:
            out.unknown = f"an argument of {program} is only known when the line runs"
            return index
        if word == "--":
            return index + 1
        if not word.startswith("-") or word == "-":
            if word == "-" and program == "env":
                out.options.append("-i")
                index += 1
                continue
            return index
        step = (_long_option(program, wrapper, words, index, out) if word.startswith("--")
                else _short_options(program, wrapper, words, index, out))
        if out.unknown is not None:
            return index
        index += step
    return index


def _long_option(program: str, wrapper: WrapperSpec, words: list[str | None], index: int,
                 out: Unwrapped) -> int:
    name, equals, value = str(words[index]).partition("=")
    out.options.append(name)
    _note_stop(wrapper, name, out)
    following = words[index + 1] if index + 1 < len(words) else None
    if name in wrapper.scripts:
        out.scripts.append(value if equals else following)
        return 1 if equals else 2
    if name in wrapper.valued:
        return 1 if equals else 2
    if name in wrapper.optional or (name in wrapper.flags and not equals):
        return 1
    out.unknown = f"{program} is given {name}, an option not known here"
    return 1


def _short_options(program: str, wrapper: WrapperSpec, words: list[str | None], index: int,
                   out: Unwrapped) -> int:
    word = str(words[index])
    if word in wrapper.flags:  # single-dash flags of several letters (strace -ff, -tt)
        out.options.append(word)
        _note_stop(wrapper, word, out)
        return 1
    body = word[1:]
    if wrapper.numeric and body.isdigit():
        return 1
    following = words[index + 1] if index + 1 < len(words) else None
    for position, letter in enumerate(body):
        option, attached = "-" + letter, body[position + 1:]
        out.options.append(option)
        _note_stop(wrapper, option, out)
        if option in wrapper.flags:
            continue
        if option in wrapper.scripts:
            out.scripts.append(attached or following)
            return 1 if attached else 2
        if option in wrapper.valued:
            return 1 if attached else 2
        if option in wrapper.optional:
            return 1
        out.unknown = f"{program} is given {option}, an option not known here"
        return 1
    return 1


def _note_stop(wrapper: WrapperSpec, option: str, out: Unwrapped) -> None:
    if option in wrapper.runs_nothing:
        out.runs_nothing = True


def is_assignment(word: str) -> bool:
    """``NAME=value``, as a shell or env reads it."""
    name, equals, _value = word.partition("=")
    return bool(equals) and bool(name) and name.replace("_", "a").isalnum() and not (
        name[0].isdigit())
