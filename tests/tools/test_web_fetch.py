"""web_fetch against a real local HTTP server: Markdown, pass-through, the address guard,
redirects, limits, the cache, and permission per domain."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_claude.permissions.addresses import refused
from mini_claude.permissions.rules import parse_rule
from mini_claude.protocol import ToolOutput
from mini_claude.tools.base import NOTHING_TO_ASK, ToolContext
from mini_claude.tools.builtin.web_fetch import WebFetchTool
from mini_claude.tools.web_guard import PrivateAllowance, checked_url
from tests.support.tools import run, tool_context
from tests.support.web_server import WebServer, web_server

LOOPBACK_ALLOWED = "127.0.0.1"


@pytest.fixture
def server() -> Iterator[WebServer]:
    with web_server() as running:
        yield running


def fetch(ctx: ToolContext, url: str, tool: WebFetchTool | None = None, **extra: str
          ) -> ToolOutput:
    return run((tool or WebFetchTool()).run({"url": url, **extra}, ctx, NOTHING_TO_ASK))


def allowed_ctx(root: Path, **settings: Any) -> ToolContext:
    return tool_context(root, web_fetch_allow_private=LOOPBACK_ALLOWED, **settings)


def test_an_html_page_becomes_markdown_without_scripts(tmp_path: Path, server: WebServer
                                                       ) -> None:
    out = fetch(allowed_ctx(tmp_path), server.url("/page"), prompt="the install command")
    assert not out.is_error, out.content
    lines = out.content.splitlines()
    assert lines[0].startswith(f"[web_fetch {server.url('/page')} · 200 · text/html · ")
    assert "as Markdown" in lines[0]
    assert lines[1] == "[look for: the install command]"
    assert "# Install guide" in out.content
    assert "Run `pip install demo` and then [read on](/next)." in out.content
    assert "never shown" not in out.content and "color:red" not in out.content


def test_json_and_plain_text_pass_through_and_binary_is_refused(
    tmp_path: Path, server: WebServer
) -> None:
    ctx = allowed_ctx(tmp_path)
    data = fetch(ctx, server.url("/data.json"))
    assert '"version": "1.2"' in data.content
    image = fetch(ctx, server.url("/image.png"))
    assert image.is_error and "image/png" in image.content and "not text" in image.content
    missing = fetch(ctx, server.url("/nothing"))
    assert missing.is_error and "404" in missing.content.splitlines()[0]


def test_loopback_is_refused_unless_allowed_and_the_server_never_hears_of_it(
    tmp_path: Path, server: WebServer
) -> None:
    refused_out = fetch(tool_context(tmp_path), server.url("/page"))
    assert refused_out.is_error
    assert "refused: 127.0.0.1 resolves to 127.0.0.1, a loopback address" in refused_out.content
    by_name = fetch(tool_context(tmp_path), server.url("/page", host="localhost"))
    assert by_name.is_error and "loopback address" in by_name.content  # checked after DNS
    assert server.hits == []


def test_addresses_that_are_off_limits() -> None:
    def why(text: str) -> str | None:
        return refused(ipaddress.ip_address(text))

    assert why("169.254.169.254") == "link-local"  # cloud metadata
    assert why("10.1.2.3") == "private" and why("192.168.0.1") == "private"
    assert why("::ffff:127.0.0.1") == "loopback" and why("::1") == "loopback"
    assert why("fe80::1") == "link-local"
    assert why("8.8.8.8") is None and why("2606:4700::1111") is None


def test_http_is_upgraded_except_for_allowed_private_hosts() -> None:
    none = PrivateAllowance.parse("")
    assert checked_url("http://docs.python.org/3/", none) == "https://docs.python.org/3/"
    local = PrivateAllowance.parse("127.0.0.1, 10.0.0.0/8")
    assert checked_url("http://127.0.0.1:8000/x", local) == "http://127.0.0.1:8000/x"
    assert checked_url("http://10.2.3.4/x", local) == "http://10.2.3.4/x"
    with pytest.raises(Exception, match="only http and https"):
        checked_url("file:///etc/passwd", none)


def test_a_redirect_on_the_same_host_is_followed_and_to_another_host_reported(
    tmp_path: Path, server: WebServer
) -> None:
    ctx = tool_context(tmp_path, web_fetch_allow_private="127.0.0.1,localhost")
    same = fetch(ctx, server.url("/moved"))
    assert "# Install guide" in same.content
    other = fetch(ctx, server.url("/elsewhere"))
    assert not other.is_error
    assert other.content.startswith(f"{server.url('/elsewhere')} redirects (302) to another host: "
                                    f"{server.url('/page', host='localhost')}")
    assert "was not followed" in other.content
    assert server.hits == ["/moved", "/page", "/elsewhere"]  # localhost was never fetched


def test_the_size_limit_cuts_and_the_cache_answers_a_second_fetch(
    tmp_path: Path, server: WebServer
) -> None:
    ctx = allowed_ctx(tmp_path, web_fetch_max_bytes=50_000)
    tool = WebFetchTool()
    first = fetch(ctx, server.url("/big"), tool)
    assert "cut at the size limit" in first.content.splitlines()[0]
    assert first.content.count("y") == 50_000
    second = fetch(ctx, server.url("/big"), tool)
    assert "from the cache" in second.content.splitlines()[0]
    assert server.hits == ["/big"]


def test_permission_is_asked_per_domain_and_rules_match_the_host(tmp_path: Path) -> None:
    ctx = tool_context(tmp_path)
    request = WebFetchTool().permission(
        {"url": "https://docs.python.org/3/library/os.html"}, ctx
    ).request
    assert request is not None
    assert request.subject == "web_fetch:docs.python.org"
    other_page = WebFetchTool().permission({"url": "https://docs.python.org/3/"}, ctx).request
    assert other_page is not None and other_page.subject == request.subject
    rule = parse_rule("WebFetch(domain:docs.python.org)", "test")
    assert rule.allows("web_fetch", {"url": "https://docs.python.org/3/"})
    assert not rule.allows("web_fetch", {"url": "https://evil.example/docs.python.org"})
