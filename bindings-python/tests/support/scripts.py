"""Scripted handlers: the README's script table, written in Python, as `async def` and as
`def` handlers (the sync ones sleep with `time.sleep` and hang by polling `ctx.cancelled`)."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from tooljig import Needs, ToolContext, ToolError

from .vectors import Script


def make_handler(
    script: Script, tool: str, invocations: Counter[str], lock: threading.Lock, *, sync: bool
) -> Callable[..., Any]:
    """A handler doing what ``script`` says, counting its runs in ``invocations[tool]``."""

    def count() -> None:
        with lock:
            invocations[tool] += 1

    def outcome(args: dict[str, Any], ctx: ToolContext) -> Any:
        if script.fail_times is not None and ctx.attempt <= script.fail_times:
            raise ToolError("external_api_error", "transient failure")
        kind, value = script.outcome, script.value
        if kind == "return":
            return value
        if kind == "error":
            raise ToolError(value["code"], value["message"], value.get("retryable"))
        if kind == "needs":
            return Needs(*value)
        if kind == "panic":
            raise RuntimeError(value)
        return args

    if sync:

        def run_sync(args: dict[str, Any], ctx: ToolContext) -> Any:
            count()
            if script.sleep_ms:
                time.sleep(script.sleep_ms / 1000)
            if script.outcome == "hang":
                # A sync handler cannot be interrupted: it stops when told to.
                while not ctx.cancelled:
                    time.sleep(0.005)
                return None
            return outcome(args, ctx)

        return run_sync

    async def run_async(args: dict[str, Any], ctx: ToolContext) -> Any:
        count()
        if script.sleep_ms:
            await asyncio.sleep(script.sleep_ms / 1000)
        if script.outcome == "hang":
            await asyncio.Event().wait()
        return outcome(args, ctx)

    return run_async
