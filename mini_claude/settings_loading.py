"""Settings from flags, the environment and .env files: the start-up every front end shares
(the REPL, print mode and an editor's session over ACP)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mini_claude.settings import Settings


class UsageError(Exception):
    """Bad flags or configuration; printed as one line, exit code 2."""


def load_settings(args: argparse.Namespace, cwd: Path) -> Settings:
    """Settings from flags > environment > .env files."""
    from mini_claude.claude_flags import settings_overrides
    from mini_claude.project.dotenv_rule import layered_environment
    from mini_claude.settings import SettingsError, from_environment

    layered = layered_environment(cwd, os.environ)
    for warning in layered.warnings:
        print(f"mini-claude: warning: {warning}", file=sys.stderr)
    for note in layered.notes:
        print(f"mini-claude: {note}", file=sys.stderr)
    environ = dict(layered.values)
    environ.update(settings_overrides(args))
    environ, helper = _key_from_helper(environ, args, cwd)
    try:
        settings = from_environment(environ, provider=args.provider, model=args.model,
                                    fallback_model=args.fallback_model)
    except SettingsError as exc:
        raise UsageError(str(exc)) from None
    return settings.with_overrides(api_key_helper=helper) if helper else settings


def _key_from_helper(environ: dict[str, str], args: argparse.Namespace,
                     cwd: Path) -> tuple[dict[str, str], str | None]:
    """With no key set, the user's ``apiKeyHelper`` (if any) supplies it."""
    from mini_claude.models import DEFAULT_PROVIDER, PROVIDERS
    from mini_claude.project.dotenv_rule import home_folder
    from mini_claude.providers.key_helper import KeyHelperError, run_key_helper
    from mini_claude.session.settings_files import user_api_key_helper

    if any(environ.get(row.key_variable) for row in PROVIDERS.values()):
        return environ, None
    helper = user_api_key_helper(cwd, home_folder(os.environ))
    if helper is None:
        return environ, None
    name = args.provider or environ.get("MINI_CLAUDE_PROVIDER") or DEFAULT_PROVIDER
    row = PROVIDERS.get(name, PROVIDERS[DEFAULT_PROVIDER])
    try:
        return {**environ, row.key_variable: run_key_helper(helper)}, helper
    except KeyHelperError as exc:
        raise UsageError(str(exc)) from None
