"""Sandboxed commands reach the network only through the domain proxy outside the sandbox
(``sandbox.network.allowedDomains``, Claude Code's key), through the model's ``run_shell``
over HTTP on both providers. A web server on the host's 127.0.0.1 stands in for the domains:
the proxy's test-only resolver maps names to it, and the settings list 127.0.0.1 by address,
the only way a host's loopback is reached."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_claude.permissions.asking import PermissionDecision, PermissionRequest
from mini_claude.permissions.sandbox.config import read_sandbox
from mini_claude.permissions.sandbox.domains import matches
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.sandbox.support import needs_bwrap
from tests.support.agent import PROVIDERS, Run, last_results

PAGE = "served-through-the-proxy-31"
NAMES = ("allowed.test", "new.test", "refused.test", "nobody.test")


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def web_server() -> Iterator[int]:
    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = PAGE.encode() + b"\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()
    thread.join()


class Answers:
    """The user: yes-and-don't-ask-again for new.test, no for refused.test."""

    def __init__(self, can_ask: bool = True) -> None:
        self.requests: list[PermissionRequest] = []
        self.can_ask = can_ask

    async def __call__(self, request: PermissionRequest) -> PermissionDecision:
        self.requests.append(request)
        if not self.can_ask:
            return PermissionDecision(False, reason="nobody here", asked=False)
        if "new.test" in request.summary:
            return PermissionDecision(True, remember=True)
        return PermissionDecision(False, reason="not that one")


def user_settings(network: dict[str, object]) -> None:
    path = Path.home() / ".claude" / "settings.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"sandbox": {"enabled": True, "network": network}}))


def run_commands(sim: Simulator, provider: str, home: Path, project: Path, commands: list[str],
                 answers: Answers) -> list[str]:
    sim.policy = ScriptedPolicy([*(Reply("Running.", [ToolCall("run_shell", {"command": c})])
                                   for c in commands), Reply("Done.")])
    resolve = ",".join(f"{name}=127.0.0.1" for name in NAMES)
    run = Run(sim, provider, home, project, approver=answers, sandbox=True,
              sandbox_proxy_resolve=resolve)
    try:
        run.start()
        run.turn("fetch them")
    finally:
        run.session.shells.stop_all(grace=0.5)
        sandbox = run.session.permission_setup.permissions.sandbox
        if sandbox is not None:
            sandbox.close()
        run.close()
    return [r for request in run.model_requests()[1:] for r in last_results(request)]


def fetch(host: str, port: int) -> str:
    return (f"python3 -c \"import urllib.request as u; print(u.urlopen('http://{host}:{port}/', "
            "timeout=20).read().decode())\"")


@needs_bwrap
def test_allowed_domains_are_reached_a_new_one_is_asked_once_and_kept(
    provider: str, simulator: Simulator, isolated_home: Path, tmp_path: Path, web_server: int,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    user_settings({"allowedDomains": ["allowed.test", "127.0.0.1"]})
    answers = Answers()
    told = run_commands(simulator, provider, isolated_home, project, [
        f"curl -sS --max-time 20 -p http://allowed.test:{web_server}/",  # a CONNECT tunnel
        f"curl -sS --max-time 20 http://refused.test:{web_server}/",
        fetch("new.test", web_server),
        fetch("new.test", web_server),
        f"curl -sS --max-time 20 --socks5-hostname 127.0.0.1:3128 http://new.test:{web_server}/",
    ], answers)
    assert PAGE in told[0], told[0]
    assert PAGE not in told[1]
    assert "Blocked by the sandbox: the user refused refused.test" in told[1], told[1]
    assert all(PAGE in result for result in told[2:]), told
    asked = [r.summary for r in answers.requests]
    assert len(asked) == 2, asked  # refused.test once, new.test once: then it is known
    assert "refused.test" in asked[0] and "new.test" in asked[1]
    local = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert local["sandbox"]["network"]["allowedDomains"] == ["new.test"]


@needs_bwrap
def test_without_anyone_to_ask_an_unlisted_domain_and_the_hosts_loopback_are_refused(
    simulator: Simulator, isolated_home: Path, tmp_path: Path, web_server: int,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    user_settings({"allowedDomains": ["allowed.test"], "deniedDomains": ["*.blocked.test"]})
    answers = Answers(can_ask=False)
    told = run_commands(simulator, "anthropic", isolated_home, project, [
        fetch("nobody.test", web_server),
        fetch("allowed.test", web_server),  # listed, but it is the host's loopback
        f"curl -sS --max-time 20 --noproxy '' http://127.0.0.1:{web_server}/",  # by the proxy
        f"curl -sS --max-time 20 http://a.blocked.test:{web_server}/",
    ], answers)
    assert all(PAGE not in result for result in told), told
    assert ("nobody.test is not in sandbox.network.allowedDomains, and nobody can be asked "
            "here") in told[0], told[0]
    assert "allowed.test is 127.0.0.1, a loopback address" in told[1], told[1]
    assert "127.0.0.1 is an address of this machine" in told[2], told[2]
    assert "a.blocked.test is in sandbox.network.deniedDomains" in told[3], told[3]
    assert [r.summary for r in answers.requests] == [
        f"A sandboxed command wants to reach nobody.test (port {web_server}); "
        "\"don't ask again\" adds it to sandbox.network.allowedDomains"]


@needs_bwrap
def test_without_allowed_domains_the_network_stays_off(
    simulator: Simulator, isolated_home: Path, tmp_path: Path, web_server: int,
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    user_settings({})
    answers = Answers()
    told = run_commands(simulator, "openai", isolated_home, project, [
        fetch("127.0.0.1", web_server),
        "env | grep -i _proxy= ; echo done",
    ], answers)
    assert PAGE not in told[0]
    assert "there is no network" in told[0]
    assert told[1].startswith("done"), told[1]
    assert answers.requests == []


def test_domain_entries_match_as_claude_codes_do(tmp_path: Path) -> None:
    assert matches("api.example.com", 443, "*.example.com")
    assert matches("a.b.example.com", 80, "*.example.com")
    assert not matches("example.com", 443, "*.example.com")  # subdomains only
    assert not matches("evilexample.com", 443, "*.example.com")
    assert matches("pypi.org", 443, "PyPI.org:443") and not matches("pypi.org", 80, "pypi.org:443")
    assert matches("::1", 8080, "[::1]")
    warnings: list[str] = []
    config = read_sandbox({"network": {"allowedDomains": ["*.com", "ok.example", "*",
                                                          "http://x.org/"]}},
                          tmp_path / "settings.json", tmp_path, warnings)
    assert config.allowed_domains == ("ok.example",)
    assert len(warnings) == 3 and "'*.com' is not used" in warnings[0]
