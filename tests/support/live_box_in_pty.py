"""A live box in a real terminal, printing above itself slowly (for test_terminal_input.py).

It prints PRINTING, holds the terminal for a moment (keys the test sends then arrive
while output is being printed above the box), and reports what the box received.
"""

from __future__ import annotations

import asyncio
import sys
import time

from mini_claude.ui.live import LiveView, TurnActivity

HOLD_SECONDS = 1.5


async def main() -> None:
    got: list[str] = []
    done = asyncio.Event()

    def submitted(text: str) -> None:
        got.append(f"SUBMITTED:{text}")
        done.set()

    def ended() -> None:
        got.append("END-OF-INPUT")
        done.set()

    view = LiveView(TurnActivity(), lambda: [("", "status")], lambda: None, lambda: 4.0,
                    on_submit=submitted, on_end_of_input=ended)
    view.start()
    await asyncio.sleep(0.3)

    def slow_write() -> None:
        print("PRINTING", flush=True)
        time.sleep(HOLD_SECONDS)  # the test's keys arrive now
        print("PRINTED", flush=True)

    await view.print_above(slow_write)
    try:
        await asyncio.wait_for(done.wait(), 5.0)
    except TimeoutError:
        got.append("NOTHING:" + repr(view.input.text))
    await view.stop()
    print(" ".join(got), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
