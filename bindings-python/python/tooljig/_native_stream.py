"""The async iterator over a native run's events, shared by ``Engine.stream`` (a batch) and
``Agent.stream`` (an agent run): the native source starts with the iteration, its events are
read in chunks and handed out one by one, and a source still running when the reader stops
(an error, ``aclose()``, the stream dropped) is cancelled.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Generic, Protocol, TypeVar

E = TypeVar("E")
R = TypeVar("R")
S = TypeVar("S", bound="NativeEventStream[Any, Any]")


class NativeSource(Protocol[E, R]):
    """What the compiled module hands back for a started run (``Batch``, ``AgentRun``)."""

    @property
    def result(self) -> asyncio.Future[R]: ...
    def next_events(self) -> Awaitable[list[E]]: ...
    def cancel(self) -> None: ...


class NativeEventStream(Generic[E, R]):
    """The events of a native source (started lazily by ``start``), as an async iterator
    of ``E``; once every event was read, the source's result is an ``R``."""

    def __init__(self, start: Callable[[], NativeSource[E, R]]) -> None:
        self._start: Callable[[], NativeSource[E, R]] | None = start
        self._source: NativeSource[E, R] | None = None
        self._buffer: deque[E] = deque()
        self._finished = False

    def __aiter__(self: S) -> S:
        return self

    async def __anext__(self) -> E:
        if self._source is None and self._start is not None:
            self._source, self._start = self._start(), None
        while not self._buffer:
            if self._finished or self._source is None:
                raise StopAsyncIteration
            try:
                events = await self._source.next_events()
            except BaseException:
                self._source.cancel()
                raise
            if not events:
                self._finished = True
            self._buffer.extend(events)
        return self._buffer.popleft()

    async def aclose(self) -> None:
        """Stops listening; a source still running is cancelled."""
        self._start = None
        if self._source is not None and not self._finished:
            self._source.cancel()
        self._finished = True

    async def __aenter__(self: S) -> S:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __del__(self) -> None:
        # Leaving an `async for` early drops the stream: the source should not run on.
        source = getattr(self, "_source", None)
        if source is not None and not getattr(self, "_finished", True):
            source.cancel()

    def _result(self) -> R:
        """The source's result, once every event was read."""
        if self._source is None or not self._finished:
            raise RuntimeError("the stream is not finished yet")
        return self._source.result.result()
