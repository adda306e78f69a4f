"""The ``sandbox`` object of the settings files, with Claude Code's key names.

::

    "sandbox": {
      "enabled": true,
      "failIfUnavailable": false,
      "autoAllowBashIfSandboxed": true,
      "excludedCommands": ["docker"],
      "allowUnsandboxedCommands": true,
      "network": {"allowedDomains": ["pypi.org"], "deniedDomains": [],
                  "allowUnixSockets": [], "allowAllUnixSockets": false,
                  "allowLocalBinding": false},
      "filesystem": {"allowWrite": [], "denyWrite": [], "denyRead": [], "allowRead": []}
    }

Files are merged as the permission rules are: a single value from the highest file that
sets it, lists added up. What only narrows the sandbox (turning it on, ``denyRead``,
``denyWrite``, ``deniedDomains``, no auto-allow, no way out) counts from every file at
once; the rest of a project's file counts once the user approved the project's settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from mini_claude.permissions.sandbox.domains import entry_problem

TOP_KEYS = {
    "enabled": "enabled",
    "failIfUnavailable": "fail_if_unavailable",
    "autoAllowBashIfSandboxed": "auto_allow",
    "allowUnsandboxedCommands": "allow_unsandboxed",
    "excludedCommands": "excluded_commands",
}
NETWORK_KEYS = {
    "allowedDomains": "allowed_domains",
    "deniedDomains": "denied_domains",
    "allowUnixSockets": "allow_unix_sockets",
    "allowAllUnixSockets": "allow_all_unix_sockets",
    "allowLocalBinding": "allow_local_binding",
}
FILESYSTEM_KEYS = {
    "allowWrite": "allow_write",
    "denyWrite": "deny_write",
    "denyRead": "deny_read",
    "allowRead": "allow_read",
}
# Keys Claude Code knows that change nothing here (other platforms, its own proxy ports).
IGNORED_KEYS = {"enableWeakerNestedSandbox", "ignoreViolations", "httpProxyPort",
                "socksProxyPort", "allowManagedDomainsOnly", "allowManagedReadPathsOnly",
                "disabled", "credentials", "enableWeakerNetworkIsolation"}
NARROWING = ("deny_write", "deny_read", "denied_domains")


@dataclass(frozen=True)
class SandboxConfig:
    """What one file (or all of them merged) says; None: not said."""

    enabled: bool | None = None
    fail_if_unavailable: bool | None = None
    auto_allow: bool | None = None
    allow_unsandboxed: bool | None = None
    excluded_commands: tuple[str, ...] = ()
    allowed_domains: tuple[str, ...] = ()
    denied_domains: tuple[str, ...] = ()
    allow_unix_sockets: tuple[Path, ...] = ()
    allow_all_unix_sockets: bool | None = None
    allow_local_binding: bool | None = None
    allow_write: tuple[Path, ...] = ()
    deny_write: tuple[Path, ...] = ()
    deny_read: tuple[Path, ...] = ()
    allow_read: tuple[Path, ...] = ()
    said: tuple[str, ...] = field(default=(), compare=False)  # the keys the file set

    def grants(self) -> list[str]:
        """What a project file's sandbox object would widen, for the trust question."""
        lines: list[str] = []
        if self.enabled is False:
            lines.append("turn the sandbox off")
        if self.allow_write:
            lines.append("let sandboxed commands write in: "
                         + ", ".join(str(p) for p in self.allow_write))
        if self.allowed_domains:
            lines.append("let sandboxed commands reach: " + ", ".join(self.allowed_domains))
        if self.excluded_commands:
            lines.append("run outside the sandbox: " + ", ".join(self.excluded_commands))
        if self.allow_all_unix_sockets or self.allow_unix_sockets:
            lines.append("let sandboxed commands use Unix sockets")
        return lines

    def narrowing_only(self) -> SandboxConfig:
        """The part of this file that only restricts: it applies before any approval."""
        return SandboxConfig(
            enabled=True if self.enabled else None,
            fail_if_unavailable=True if self.fail_if_unavailable else None,
            allow_unsandboxed=False if self.allow_unsandboxed is False else None,
            auto_allow=False if self.auto_allow is False else None,
            deny_write=self.deny_write, deny_read=self.deny_read,
            denied_domains=self.denied_domains)


def merge(configs: list[SandboxConfig]) -> SandboxConfig:
    """Lowest precedence first: single values from the highest file, lists added up."""
    merged = SandboxConfig()
    for config in configs:
        changes: dict[str, Any] = {}
        for item in fields(SandboxConfig):
            if item.name == "said":
                continue
            value = getattr(config, item.name)
            if isinstance(value, tuple):
                if value:
                    changes[item.name] = tuple(dict.fromkeys((*getattr(merged, item.name),
                                                              *value)))
            elif value is not None:
                changes[item.name] = value
        merged = replace(merged, **changes)
    return merged


def read_sandbox(value: object, path: Path, cwd: Path, warnings: list[str]) -> SandboxConfig:
    """A file's ``sandbox`` object; what is wrong in it becomes a warning and is skipped."""
    if value is None:
        return SandboxConfig()
    if not isinstance(value, dict):
        warnings.append(f'{path}: "sandbox" must be an object; it is not used')
        return SandboxConfig()
    changes: dict[str, Any] = {}
    _read_keys(value, TOP_KEYS, "sandbox", path, cwd, warnings, changes,
               nested={"network": NETWORK_KEYS, "filesystem": FILESYSTEM_KEYS})
    return replace(SandboxConfig(), **changes, said=tuple(changes))


def _read_keys(value: dict[str, Any], keys: dict[str, str], where: str, path: Path, cwd: Path,
               warnings: list[str], changes: dict[str, Any],
               nested: dict[str, dict[str, str]] | None = None) -> None:
    for key, setting in value.items():
        if nested and key in nested:
            if isinstance(setting, dict):
                _read_keys(setting, nested[key], f"{where}.{key}", path, cwd, warnings, changes)
            else:
                warnings.append(f'{path}: "{where}.{key}" must be an object; it is not used')
            continue
        if key in IGNORED_KEYS:
            continue
        name = keys.get(key)
        if name is None:
            warnings.append(f'{path}: "{where}.{key}" is not a sandbox setting; ignored')
            continue
        default = getattr(SandboxConfig(), name)
        if default is None:
            if isinstance(setting, bool):
                changes[name] = setting
            else:
                warnings.append(f'{path}: "{where}.{key}" must be true or false; ignored')
        elif not isinstance(setting, list) or not all(isinstance(s, str) for s in setting):
            warnings.append(f'{path}: "{where}.{key}" must be a list of strings; ignored')
        elif name == "allowed_domains":
            changes[name] = _domains(setting, f"{where}.{key}", path, warnings)
        elif name in ("excluded_commands", "denied_domains"):
            changes[name] = tuple(s.strip() for s in setting if s.strip())
        else:
            changes[name] = tuple(setting_path(s, cwd) for s in setting if s.strip())


def _domains(entries: list[str], where: str, path: Path, warnings: list[str]) -> tuple[str, ...]:
    """The usable entries; each other one is a warning (``*.com`` would open too much)."""
    kept: list[str] = []
    for entry in (e.strip() for e in entries if e.strip()):
        problem = entry_problem(entry)
        if problem is None:
            kept.append(entry)
        else:
            warnings.append(f'{path}: "{where}" entry {entry!r} is not used: it must be '
                            f"{problem}")
    return tuple(kept)


def setting_path(text: str, cwd: Path) -> Path:
    """``~/x`` in the home, ``//x`` or ``/x`` absolute, anything else from the project."""
    text = text.strip()
    if text.startswith("//"):
        text = text[1:]
    return (cwd / Path(text).expanduser()).absolute()
