"""Schedule a meeting with an agent. The duration is missing, so the tool
answers `needs`, the agent asks one question, the user answers, and the meeting is made.

The model is a plain Python function standing in for your SDK call (convert with
`tooljig.Provider("openai_chat").request(request)` / `.parse_response(body)` to use a real
one, or use `tooljig.HttpModel.openai_compatible("gpt-4o-mini")`). Run:

    python examples/python/agent_meeting.py
"""

from __future__ import annotations

from typing import Any

import tooljig
from tooljig.agent import Agent, AgentState, Emit, ModelClient

engine = tooljig.Engine()


@engine.tool
def schedule_meeting(person: str, duration_min: int | None = None) -> dict[str, Any]:
    """Schedules a meeting tomorrow.

    Args:
        person: Who to meet.
        duration_min: How long, in minutes.
    """
    if duration_min is None:
        raise tooljig.Needs("duration_min")
    return {
        "scheduled": True,
        "person": person,
        "duration_min": duration_min,
        "at": "tomorrow 10:00",
    }


def model(request: dict[str, Any], emit: Emit) -> Any:
    """A stand-in planner/responder: calls the tool with what the user said so far."""
    messages = request["messages"]
    last = messages[-1]
    if last["role"] == "tool":
        envelope = last["results"][-1]["envelope"]
        if envelope.get("ok"):
            d = envelope["data"]
            return f"Done: {d['duration_min']} minutes with {d['person']}, {d['at']}."
        return "Could you tell me how long the meeting should be?"
    if not request["tools"] or request["tool_choice"] == "none":
        return "How long should the meeting be?"
    minutes = [
        int(w) for m in messages if m["role"] == "user" for w in m["content"].split() if w.isdigit()
    ]
    arguments: dict[str, Any] = {"person": "Aviad"}
    if minutes:
        arguments["duration_min"] = minutes[-1]
    return {
        "tool_calls": [
            {"id": f"call_{len(messages)}", "name": "schedule_meeting", "arguments": arguments}
        ]
    }


def main() -> None:
    agent = Agent(engine, ModelClient(model, name="planner"))
    state = AgentState("Set a meeting with Aviad tomorrow")
    out = agent.run_sync(state)
    print(f"[{out.status}] {out.answer}")
    saved = state.to_json()  # a web app stores this between requests
    state = AgentState.from_json(saved)
    out = agent.send_sync(state, "30 minutes")
    print(f"[{out.status}] {out.answer}")
    assert out.status == "finished" and "30 minutes" in out.answer


if __name__ == "__main__":
    main()
