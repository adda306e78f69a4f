"""web_fetch: one web page as Markdown (HTML) or as it is (plain text, JSON).

Safe by default: https only (http is upgraded), public addresses only, a
redirect to another host is reported rather than followed, the body and the
time are bounded, and the same URL is served from a short cache. The result is
an ordinary tool result: tier 0 saves a long page and keeps a preview.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx2
from bs4 import BeautifulSoup
from markdownify import MarkdownConverter

from mini_claude.permissions.asking import PermissionRequest
from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.settings import Settings
from mini_claude.text import human_size
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.base import Prepared, ToolContext
from mini_claude.tools.common import ToolError, reports_tool_errors
from mini_claude.tools.web_guard import (
    PrivateAllowance,
    check_host,
    checked_url,
    host_of,
    refused_without_lookup,
)

MAX_SAME_HOST_REDIRECTS = 5
USER_AGENT = "mini-claude web_fetch"
TEXT_TYPES = ("text/", "application/json", "application/xml", "application/xhtml+xml")
HTML_TYPES = ("text/html", "application/xhtml+xml")
# Parts of a page that are never content: dropped with what they hold.
DROPPED_TAGS = ("script", "style", "noscript", "svg", "iframe", "head", "template")

SPEC = ToolSpec(
    name="web_fetch",
    description=(
        "Fetch a web page as Markdown (plain text and JSON as they are). A redirect to another "
        "host is reported, not followed. Private addresses are refused. `prompt`: what to look "
        "for; it comes back with the page."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "The page's URL."},
            "prompt": {"type": "string", "description": "What to look for."},
        },
        "required": ["url"],
        "additionalProperties": False,
    },
)


@dataclass(frozen=True, slots=True)
class Page:
    url: str
    status: int
    content_type: str
    body: bytes
    truncated: bool
    redirected_to: str | None = None  # another host: reported, not followed


class WebFetchTool:
    spec = SPEC
    read_only = False  # it reaches out of the machine: asked per domain
    # It changes nothing, so plan mode lets it ask (as Claude Code does).
    traits = ToolTraits("web", "domain", "url", ("WebFetch",), plan_mode=True)

    def __init__(self, clock: Any = time.monotonic) -> None:
        self._clock = clock
        self._cache: dict[str, tuple[float, Page]] = {}

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        url = str(args.get("url", ""))
        host = host_of(url)
        allowance = PrivateAllowance.parse(ctx.settings.web_fetch_allow_private)
        if refused_without_lookup(url, allowance):
            return Prepared(None)  # nothing to approve: the fetch is refused whatever the answer
        return Prepared(PermissionRequest(
            tool_name=self.spec.name,
            summary=f"fetch {url}",
            subject=f"web_fetch:{host}",  # "don't ask again" allows the whole domain
            detail=f"domain: {host}" if host else None,
        ))

    @reports_tool_errors
    async def run(self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared) -> ToolOutput:
        settings = ctx.settings
        allowance = PrivateAllowance.parse(settings.web_fetch_allow_private)
        url = checked_url(str(args.get("url", "")), allowance)
        prompt = args.get("prompt")
        page, cached = self._cached(url, settings), True
        if page is None:
            cached = False
            try:
                async with asyncio.timeout(settings.web_fetch_timeout_seconds):
                    page = await fetch(url, settings, allowance)
            except TimeoutError:
                raise ToolError(
                    f"{url} did not answer within {settings.web_fetch_timeout_seconds:g} s"
                ) from None
            self._cache[url] = (self._clock(), page)
        return render(page, prompt if isinstance(prompt, str) else None, cached=cached)

    def _cached(self, url: str, settings: Settings) -> Page | None:
        now = self._clock()
        for key, (stamp, _page) in list(self._cache.items()):
            if now - stamp > settings.web_fetch_cache_seconds:
                del self._cache[key]
        entry = self._cache.get(url)
        return entry[1] if entry else None


async def fetch(url: str, settings: Settings, allowance: PrivateAllowance) -> Page:
    """GET the URL, following redirects only within its own host."""
    start_host = host_of(url)
    async with httpx2.AsyncClient(
        follow_redirects=False,
        timeout=settings.web_fetch_timeout_seconds,
        headers={"User-Agent": USER_AGENT, "Accept": "text/html, text/plain, */*;q=0.5"},
    ) as client:
        for _ in range(MAX_SAME_HOST_REDIRECTS + 1):
            parts = urlsplit(url)
            port = parts.port or (443 if parts.scheme == "https" else 80)
            await check_host(parts.hostname or "", port, allowance)
            try:
                page = await _get(client, url, settings.web_fetch_max_bytes)
            except httpx2.HTTPError as exc:
                raise ToolError(f"could not fetch {url}: {type(exc).__name__}: {exc}") from None
            target = page.redirected_to
            if target is None:
                return page
            if host_of(target) != start_host:
                return page
            url = checked_url(target, allowance)
    raise ToolError(f"{url} redirected more than {MAX_SAME_HOST_REDIRECTS} times")


async def _get(client: httpx2.AsyncClient, url: str, max_bytes: int) -> Page:
    async with client.stream("GET", url) as response:
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if response.is_redirect:
            location = response.headers.get("location", "")
            target = urljoin(url, location)
            return Page(url, response.status_code, content_type, b"", False, target)
        body = bytearray()
        truncated = False
        async for chunk in response.aiter_bytes():
            body.extend(chunk)
            if len(body) > max_bytes:
                del body[max_bytes:]
                truncated = True
                break
        return Page(url, response.status_code, content_type, bytes(body), truncated)


def render(page: Page, prompt: str | None, *, cached: bool = False) -> ToolOutput:
    """The page for the model: a header line, what to look for, then the content."""
    if page.redirected_to is not None:
        return ToolOutput(
            f"{page.url} redirects ({page.status}) to another host: {page.redirected_to}\n"
            "It was not followed. To read it, call web_fetch with that URL."
        )
    text, kind = _content(page)
    notes = [f"{page.status}", page.content_type or "no content type", human_size(len(page.body))]
    if kind == "markdown":
        notes.append(f"as Markdown, {human_size(len(text.encode()))}")
    if page.truncated:
        notes.append("cut at the size limit")
    if cached:
        notes.append("from the cache")
    lines = [f"[web_fetch {page.url} · {' · '.join(notes)}]"]
    if prompt:
        lines.append(f"[look for: {prompt}]")
    lines.append(text.strip() or "(the page has no text)")
    return ToolOutput("\n".join(lines), is_error=page.status >= 400)


def _content(page: Page) -> tuple[str, str]:
    content_type = page.content_type
    if content_type and not content_type.startswith(TEXT_TYPES) and not _looks_textual(page):
        raise ToolError(
            f"{page.url} is {content_type} ({human_size(len(page.body))}), not text; "
            "web_fetch reads web pages, plain text and JSON"
        )
    text = page.body.decode("utf-8", errors="replace")
    if content_type in HTML_TYPES or (not content_type and "<html" in text[:1000].lower()):
        return html_to_markdown(text), "markdown"
    if content_type == "application/json":
        return _pretty_json(text), "json"
    return text, "text"


def _looks_textual(page: Page) -> bool:
    """A type we do not list (``application/javascript``) is read if it decodes as text."""
    sample = page.body[:4096]
    if b"\x00" in sample:
        return False
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(sample) - 3  # only a character cut at the sample's end
    return True


def html_to_markdown(html: str) -> str:
    """Markdown of the page's content, without scripts, styles and runs of blank lines."""
    markdown: str = MarkdownConverter(heading_style="ATX").convert_soup(_without_chrome(html))
    lines = [line.rstrip() for line in markdown.splitlines()]
    kept: list[str] = []
    for line in lines:
        if not line and kept and not kept[-1]:
            continue
        kept.append(line)
    return "\n".join(kept)


def _without_chrome(html: str) -> BeautifulSoup:
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(DROPPED_TAGS):
        tag.decompose()
    return soup


def _pretty_json(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text
