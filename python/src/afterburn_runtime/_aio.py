"""The asyncio runner, for async handlers and ASGI apps only.

asyncio costs tens of milliseconds of start-up, so it is imported here, when the first
async handler, async body or ASGI app needs it, and never by ``import afterburn_runtime``.
The worker carries one exchange at a time (PROTOCOL.md §2.1): one event loop lives as
long as the worker and runs each exchange to completion.
"""

from __future__ import annotations

import asyncio

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Coroutine
    from typing import Any


class Runner:
    """One event loop for the life of the worker."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)

    def run(self, coro: Coroutine[Any, Any, Any]) -> Any:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        try:
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            self.loop.close()
