"""The factory: right adapter, retries around it, keys checked, no SDK import up front."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mini_claude.models import PROVIDERS, ProviderRow
from mini_claude.protocol import AuthenticationFailed
from mini_claude.providers import create_provider, preload_sdk
from mini_claude.providers.anthropic import AnthropicProvider
from mini_claude.providers.openai import OpenAIProvider
from mini_claude.providers.retry import RetryingProvider
from mini_claude.secrets import api_keys
from mini_claude.settings import Settings, from_environment


def settings(tmp_path: Path, **values: object) -> Settings:
    return Settings(home=tmp_path).with_overrides(**values)


def test_importing_the_package_imports_no_sdk() -> None:
    code = (
        "import sys\n"
        "import mini_claude.providers as p\n"
        "import mini_claude.providers.anthropic, mini_claude.providers.openai\n"
        "import mini_claude.providers.retry, mini_claude.providers.errors\n"
        "loaded = [m for m in ('anthropic', 'openai', 'httpx2') if m in sys.modules]\n"
        "print(','.join(loaded) or 'none')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "none"


def test_creating_a_provider_imports_no_sdk_either() -> None:
    code = (
        "import sys\n"
        "from mini_claude.providers import create_provider\n"
        "from mini_claude.settings import Settings\n"
        "create_provider(Settings(api_keys={'anthropic': 'k'}))\n"
        "create_provider(Settings(provider='openai', api_keys={'openai': 'k'}))\n"
        "print('anthropic' in sys.modules, 'openai' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "False False"


def test_preload_imports_the_named_sdk() -> None:
    code = (
        "import sys\n"
        "from mini_claude.providers import preload_sdk\n"
        "preload_sdk('openai')\n"
        "print('openai' in sys.modules, 'anthropic' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "True False"
    preload_sdk("no-such-provider")  # unknown names are ignored, not an error


def test_factory_wraps_the_configured_adapter(tmp_path: Path) -> None:
    anthropic = create_provider(settings(tmp_path, api_keys={"anthropic": "k"}, max_retries=7))
    assert isinstance(anthropic, RetryingProvider)
    assert isinstance(anthropic.inner, AnthropicProvider)
    assert anthropic.max_retries == 7 and anthropic.name == "anthropic"

    openai = create_provider(settings(tmp_path, provider="openai", api_keys={"openai": "k"}))
    assert isinstance(openai, RetryingProvider) and isinstance(openai.inner, OpenAIProvider)
    assert openai.name == "openai"


def test_missing_key_is_a_clear_error_unless_a_base_url_is_set(tmp_path: Path) -> None:
    with pytest.raises(AuthenticationFailed, match="OPENAI_API_KEY"):
        create_provider(settings(tmp_path, provider="openai"))
    with pytest.raises(AuthenticationFailed, match="ANTHROPIC_API_KEY"):
        create_provider(settings(tmp_path, provider="anthropic"))

    local = create_provider(
        settings(tmp_path, provider="openai",
                 base_urls={"openai": "http://127.0.0.1:11434/v1"})
    )
    assert isinstance(local, RetryingProvider) and isinstance(local.inner, OpenAIProvider)


@pytest.mark.parametrize("row", list(PROVIDERS.values()), ids=lambda row: row.name)
def test_each_provider_row_drives_choice_factory_and_key_masking(
    row: ProviderRow, tmp_path: Path
) -> None:
    """Everything provider-specific comes from the row: which variable picks it, its
    default model, the adapter built, the key masked, the key asked for."""
    chosen = from_environment({row.chosen_by[0]: "http://127.0.0.1:9" if "URL" in
                               row.chosen_by[0] else "secret-key-1"})
    assert chosen.provider == row.name and chosen.model == row.default_model
    keyed = settings(tmp_path, provider=row.name, api_keys={row.name: "secret-key-2"})
    provider = create_provider(keyed)
    assert isinstance(provider, RetryingProvider) and provider.inner.name == row.name
    assert api_keys(keyed) == ("secret-key-2",)
    with pytest.raises(AuthenticationFailed, match=row.key_variable):
        create_provider(settings(tmp_path, provider=row.name))
