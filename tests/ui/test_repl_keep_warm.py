"""The REPL keeps the prompt cache warm while it waits for the user, and stops when they type."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mini_claude.simulator import Reply, ScriptedPolicy, Simulator
from tests.support.long_session import keepalive_pings
from tests.support.repl import ReplDriver, running_repl, sim_settings, until


def test_the_prompt_pings_while_the_user_is_away_and_the_next_turn_goes_on(
    simulator: Simulator, isolated_home: Path, tmp_path: Path
) -> None:
    simulator.policy = ScriptedPolicy([Reply("First answer."), Reply("Second answer.")])
    settings = sim_settings(simulator, isolated_home, cache_keepalive_seconds=0.2,
                            cache_keepalive_pings=2)

    async def scenario(repl: ReplDriver) -> None:
        mark = await repl.submit("hello")
        await repl.wait_for("First answer.", after=mark)
        await until(lambda: len(keepalive_pings(simulator)) == 2, "two keep-alive pings")
        await asyncio.sleep(0.5)  # no third: two was the limit
        assert len(keepalive_pings(simulator)) == 2
        assert all(p.status == 200 and p.cache_read_tokens > 0 for p in keepalive_pings(simulator))
        mark = await repl.submit("/cost")
        await repl.wait_for("keep-alive pings", after=mark)
        mark = await repl.submit("and now?")
        await repl.wait_for("Second answer.", after=mark)  # the pings took no scripted reply
        assert await repl.exit() == 0

    async def main() -> None:
        async with running_repl(settings, tmp_path) as repl:
            await scenario(repl)

    asyncio.run(main())
    assert "Second answer." in str(simulator.requests[-1].reply)
