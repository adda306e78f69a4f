"""Shared by the sandbox tests: whether this machine can sandbox, and a recording approver."""

from __future__ import annotations

import pytest

from mini_claude.permissions.asking import PermissionDecision, PermissionRequest
from mini_claude.permissions.sandbox.bwrap import unavailable_reason

CANNOT_SANDBOX = unavailable_reason("bwrap")
# CI installs bubblewrap (.ci/run), so these run there; only a machine that truly cannot
# sandbox (not Linux, no user namespaces) skips them.
needs_bwrap = pytest.mark.skipif(
    CANNOT_SANDBOX is not None,
    reason=f"this machine cannot sandbox ({CANNOT_SANDBOX}); CI installs bubblewrap",
)


class SaysNo:
    """Records every question and refuses it: a command that needed one did not run."""

    def __init__(self) -> None:
        self.requests: list[PermissionRequest] = []

    async def __call__(self, request: PermissionRequest) -> PermissionDecision:
        self.requests.append(request)
        return PermissionDecision(False, reason="not now")
