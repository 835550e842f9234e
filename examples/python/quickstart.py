"""Quick start: one batch with parallel and dependent calls, a repaired argument, a ``needs``,
and a failing tool, printed as the envelopes a model would read.

Run: ``python examples/python/quickstart.py`` (after ``pip install ./bindings-python``).
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

from pydantic import Field

import tooljig
from tooljig import ErrorCode, Retry, ToolContext, ToolError

engine = tooljig.Engine()


@engine.tool(timeout_ms=5000)
async def get_weather(city: str) -> dict[str, Any]:
    """Current temperature of a city.

    Args:
        city: The city to look up.
    """
    await asyncio.sleep(0.05)  # pretend to call an API
    return {"city": city, "temperature_c": 4.5 if city == "Oslo" else 21.0}


@engine.tool
def plan_outing(
    city: str,
    temperature_c: float,
    date: Annotated[str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$")],
    ctx: ToolContext,
) -> dict[str, Any]:
    """Suggests an outing for a date.

    Args:
        city: Where.
        temperature_c: The forecast, in °C.
        date: When, as an ISO date.
    """
    idea = "a picnic" if temperature_c > 15 else "a museum"
    return {"city": city, "date": date, "idea": idea, "for": ctx.caller.principal}


@engine.tool(retry=Retry(attempts=2, backoff_ms=20))
def book_table(city: str) -> None:
    """Books a restaurant table.

    Args:
        city: Where.
    """
    raise ToolError(ErrorCode.EXTERNAL_API_ERROR, "the booking service is down")


CALLS: list[tooljig.Call] = [
    # Two independent lookups run in parallel; the first one's arguments need repair.
    {"id": "w1", "tool": "get_weather", "arguments": "{'city': 'Lisbon',}"},
    {"id": "w2", "tool": "get_weather", "arguments": '{"city": "Oslo"}'},
    # Depends on w1 and takes its temperature by reference.
    {
        "id": "p1",
        "tool": "plan_outing",
        "arguments": {
            "city": "Lisbon",
            "date": "2026-11-28",
            "temperature_c": {"$from": "w1", "pointer": "/temperature_c"},
        },
    },
    # The model forgot the date: the envelope says what to ask the user.
    {
        "id": "p2",
        "tool": "plan_outing",
        "arguments": {"city": "Oslo", "temperature_c": {"$from": "w2", "pointer": "/temperature_c"}},
    },
    # A failing tool, retried once, then reported.
    {"id": "b1", "tool": "book_table", "arguments": {"city": "Lisbon"}},
]


async def main() -> None:
    out = await engine.run(CALLS, caller=tooljig.Caller(principal="user-1"), deadline_ms=15_000)
    for r in out:
        started = "-" if r.started_us is None else str(r.started_us)
        flags = f"attempts={r.attempts} repaired={r.repaired} ran {started}..{r.finished_us} µs"
        print(f"{r.call_id:<3} {r.tool:<12} {json.dumps(r.envelope)}  [{flags}]")
    print(f"batch took {out.duration_us // 1000} ms")


if __name__ == "__main__":
    asyncio.run(main())
