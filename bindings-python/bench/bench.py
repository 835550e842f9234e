"""Per-call overhead of tooljig's Python package in a 1,000-call batch, side by side with
two baselines doing the same work (same tool, same arguments, validation on):

- plain ``asyncio.gather`` with pydantic validation and dict envelopes, written by hand;
- LangGraph's ``ToolNode`` fed one ``AIMessage`` carrying 1,000 tool calls.

Each handler does nothing but build its result, so wall time / calls is the overhead per
call. Every figure is the median of ``--repeat`` runs, after a warm-up. Run with ``run.sh``
(release build of the extension).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import pydantic

import tooljig

ARGS = {"city": "Lisbon", "units": "c", "days": 3}
ARGS_TEXT = json.dumps(ARGS)  # models send arguments as a JSON string


def _ratio(theirs: float, ours: float) -> str:
    """``theirs / ours`` in words: how much faster (or slower) tooljig is."""
    r = theirs / ours
    return f"tooljig {r:.1f}x faster" if r >= 1 else f"tooljig {1 / r:.1f}x slower"


def weather(city: str, units: Literal["c", "f"] = "c", days: int = 1) -> dict[str, Any]:
    """Weather forecast.

    Args:
        city: The city name.
        units: Celsius or Fahrenheit.
        days: How many days ahead.
    """
    return {"city": city, "units": units, "days": days, "temperature": 21}


async def aweather(city: str, units: Literal["c", "f"] = "c", days: int = 1) -> dict[str, Any]:
    """Weather forecast.

    Args:
        city: The city name.
        units: Celsius or Fahrenheit.
        days: How many days ahead.
    """
    return {"city": city, "units": units, "days": days, "temperature": 21}


# --- tooljig ---------------------------------------------------------------------------

def tooljig_runner(n: int) -> Callable[[str], Awaitable[list[dict[str, Any]]]]:
    engine = tooljig.Engine()
    engine.tool(name="weather_sync")(weather)
    engine.tool(name="weather_async")(aweather)
    engine.tool(name="weather_loop", sync_to_thread=False)(weather)
    calls = {
        kind: [{"id": f"c{i}", "tool": f"weather_{kind}", "arguments": ARGS_TEXT} for i in range(n)]
        for kind in ("sync", "async", "loop")
    }

    async def run(kind: str) -> list[dict[str, Any]]:
        out = await engine.run(calls[kind])
        return out.envelopes()

    return run


# --- plain asyncio.gather + pydantic ---------------------------------------------------

class WeatherArgs(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    city: str
    units: Literal["c", "f"] = "c"
    days: int = 1


def gather_runner(n: int) -> Callable[[str], Awaitable[list[dict[str, Any]]]]:
    validate = WeatherArgs.model_validate_json

    async def one(kind: str) -> dict[str, Any]:
        try:
            args = validate(ARGS_TEXT)
        except pydantic.ValidationError as e:
            return {"ok": False, "error": {"code": "invalid_arguments", "message": str(e), "retryable": False}}
        try:
            if kind == "async":
                data = await aweather(args.city, args.units, args.days)
            else:
                data = weather(args.city, args.units, args.days)
        except Exception as e:  # noqa: BLE001 - a baseline envelope, like tooljig's
            return {"ok": False, "error": {"code": "internal_error", "message": str(e), "retryable": False}}
        return {"ok": True, "data": data}

    async def run(kind: str) -> list[dict[str, Any]]:
        return list(await asyncio.gather(*(one(kind) for _ in range(n))))

    return run


# --- LangGraph ToolNode ----------------------------------------------------------------

def toolnode_runner(n: int) -> Callable[[str], Awaitable[list[dict[str, Any]]]] | None:
    try:
        from langchain_core.messages import AIMessage
        from langchain_core.tools import tool as lc_tool
        from langgraph.prebuilt import ToolNode
        from langgraph.runtime import Runtime
    except ImportError:
        return None
    tools = {"sync": lc_tool("weather_sync")(weather), "async": lc_tool("weather_async")(aweather)}
    nodes = {kind: ToolNode([t]) for kind, t in tools.items()}
    messages = {
        kind: AIMessage(
            content="",
            tool_calls=[
                {"id": f"c{i}", "name": f"weather_{kind}", "args": json.loads(ARGS_TEXT), "type": "tool_call"}
                for i in range(n)
            ],
        )
        for kind in tools
    }
    # Outside a graph, ToolNode needs a runtime in its config.
    config = {"configurable": {"__pregel_runtime": Runtime()}}

    async def run(kind: str) -> list[dict[str, Any]]:
        out = await nodes[kind].ainvoke({"messages": [messages[kind]]}, config=config)
        return [{"ok": m.status == "success", "data": m.content} for m in out["messages"]]

    return run


async def measure(run: Callable[[str], Awaitable[list[dict[str, Any]]]], kind: str, n: int, repeat: int) -> float:
    """Median µs per call over ``repeat`` batches of ``n`` calls."""
    out = await run(kind)  # warm-up, and a check that every call succeeded
    assert len(out) == n and all(e["ok"] for e in out), out[:2]
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        await run(kind)
        times.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(times)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    opts = parser.parse_args()
    n, repeat = opts.calls, opts.repeat
    runners = {
        "tooljig": tooljig_runner(n),
        "asyncio.gather + pydantic": gather_runner(n),
        "LangGraph ToolNode": toolnode_runner(n),
    }
    figures: dict[str, dict[str, float]] = {}
    for name, run in runners.items():
        if run is None:
            print(f"{name}: not installed (pip install -r bench/requirements.txt)", file=sys.stderr)
            continue
        figures[name] = {kind: await measure(run, kind, n, repeat) for kind in ("sync", "async")}
    # A `def` handler registered with `sync_to_thread=False` runs on the loop, as the
    # baselines' sync handlers do; only tooljig has the choice.
    loop = await measure(runners["tooljig"], "loop", n, repeat)
    if opts.json:
        figures["tooljig"]["sync_on_loop"] = loop
        print(json.dumps(figures, indent=2))
        return
    ours = figures["tooljig"]
    print(f"{n} calls a batch, median of {repeat} batches; Python {platform.python_version()}, {platform.machine()}")
    print(f"{'':28} {'sync handler':>14} {'async handler':>14}")
    for name, f in figures.items():
        print(f"{name:28} {f['sync']:>11.1f} µs {f['async']:>11.1f} µs")
    print(f"{'tooljig, sync on the loop':28} {loop:>11.1f} µs   (sync_to_thread=False)")
    for name, f in figures.items():
        if name != "tooljig":
            print(
                f"{name} / tooljig: {_ratio(f['sync'], ours['sync'])} (sync), "
                f"{_ratio(f['async'], ours['async'])} (async)"
            )


if __name__ == "__main__":
    asyncio.run(main())
