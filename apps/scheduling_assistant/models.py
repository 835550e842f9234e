"""The planner and the responder (seed 000's Phase A and Phase B).

Offline, both are small scripted functions, so the app and its tests run without an API key:
the planner reads the conversation the way the seed's prompt asks a model to (tools for
actionable intents, human names never ids, "Israel time" as `tzHint`, one clarifying question
for a missing field, then the call) and the responder turns results and error codes into the
user-facing copy of the seed's error policy. With `OPENAI_API_KEY` set, a real model plays
both (`real_models`), with the same tools and the same copy rules in its system prompt.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Any

import tooljig
from tooljig.agent import Emit, Model

SYSTEM = """You are Perin, a scheduling assistant. Prefer tools for actionable intents
(scheduling, confirming). If information is missing, ask one concise clarifying question and
then call the tool. Never fabricate ids; pass human names or emails, the server resolves them.
If the user mentions a region ("Israel time"), set tzHint to its IANA zone. After actions,
summarize what you did and what happens next. Turn error codes into plain words: not_found →
nobody by that name among the user's connections; ambiguous → ask which candidate;
permission_denied with reason connection_inactive → they are no longer connected;
scopes_missing → the user must connect their calendar; rate_limited → try again shortly;
conflict with reason slot_taken → the time was just taken and the hold released."""

ZONES = {"israel": "Asia/Jerusalem", "london": "Europe/London", "new york": "America/New_York"}
ORDINALS = {"first": 0, "second": 1, "third": 2, "1": 0, "2": 1, "3": 2}


def planner(today: datetime) -> Model:
    """The scripted planner: a tool call for an actionable message, else a reply."""

    def plan(request: dict[str, Any], emit: Emit) -> Any:
        messages = request["messages"]
        text = messages[-1].get("content") or ""
        confirm = _confirm_call(text, messages)
        if confirm is not None:
            return {"tool_calls": [confirm]}
        arguments = _schedule_arguments(text, today)
        previous = _unanswered_schedule(messages)
        if arguments is None and previous is not None:
            # The answer to a clarifying question: the earlier call with what was missing.
            arguments = {**previous, **_duration(text)}
        if arguments is None:
            return respond(request, emit)
        return {"tool_calls": [{"id": f"call_{len(messages)}", "name": "network_schedule_meeting", "arguments": arguments}]}

    return tooljig.ModelClient(plan, name="scripted-planner")


def responder() -> Model:
    """The scripted responder: the user-facing copy."""
    return tooljig.ModelClient(respond, name="scripted-responder")


def respond(request: dict[str, Any], emit: Emit) -> str:
    messages = request["messages"]
    # The loop may add a note for the responder (a system message) after the results.
    last = next(m for m in reversed(messages) if m["role"] != "system")
    if last["role"] != "tool":
        return "Hi! I can set up meetings with your connections. Who would you like to meet?"
    return " ".join(
        _copy(r["name"], r["envelope"], _arguments_of(messages, r["call_id"])) for r in last["results"]
    )


def real_models(model: str = "gpt-4o-mini") -> tuple[Model, Model]:
    """A real planner and responder over OpenAI's Chat Completions (`OPENAI_API_KEY`)."""
    return tooljig.HttpModel.openai_compatible(model), tooljig.HttpModel.openai_compatible(model)


def _copy(tool: str, envelope: dict[str, Any], arguments: dict[str, Any]) -> str:
    """One result in the user's words: the seed's error policy, mapped by code and reason."""
    if envelope.get("ok"):
        data = envelope["data"]
        if tool == "network_confirm_meeting":
            return f"Booked: {_when(data['meeting'])}. I've let them know."
        slots = ", ".join(_time(p["start"]) for p in data["proposals"])
        return (
            f"I've sent {data['counterpart']} {len(data['proposals'])} options for a "
            f"{data['durationMins']}-minute meeting on {_day(data['proposals'][0]['start'])}: {slots}. "
            "Tell me which one to book."
        )
    if "needs" in envelope:
        fields = ", ".join(envelope["needs"])
        if fields == "durationMins":
            return f"How long should the meeting with {arguments.get('counterpart', 'them')} be?"
        return f"Could you tell me the {fields}?"
    error = envelope["error"]
    code, reason = error["code"], error.get("reason")
    if code == "ambiguous":
        return f"Which one do you mean: {' or '.join(error.get('candidates', []))}?"
    if code == "not_found" and reason == "no_common_slot":
        return "You have no common free time in that window. Shall I look at another day?"
    if code == "not_found":
        return f"I couldn't find {error.get('value', 'them')} among your connections."
    if reason == "connection_inactive":
        who = arguments.get("counterpart", "them")
        return f"You're no longer connected with {who}, so I can't schedule a meeting. Reconnect first?"
    if code == "scopes_missing":
        return "To schedule for you I need access to your calendar. Please connect it in Settings."
    if code == "rate_limited":
        return "That's a lot of scheduling at once. Please try again in a minute."
    if reason == "slot_taken":
        return "That time was just taken, so I released the hold. Shall I book another option?"
    if reason == "already_confirmed":
        return "That meeting is already confirmed."
    return f"Sorry, that didn't work ({error['message']})."


def _schedule_arguments(text: str, today: datetime) -> dict[str, Any] | None:
    """The arguments of `network_schedule_meeting` for a scheduling request, or None."""
    who = re.search(r"\b(?:meeting|meet|call)\s+with\s+([A-Z][\w.@-]*)", text) or re.search(
        r"\bwith\s+([A-Z][\w.@-]*)", text
    )
    if who is None or not re.search(r"\b(meet|meeting|schedule|set up|call)\b", text, re.I):
        return None
    arguments: dict[str, Any] = {"counterpart": who.group(1)}
    arguments.update(_duration(text))
    zone = next((z for name, z in ZONES.items() if f"{name} time" in text.lower()), None)
    if zone:
        arguments["tzHint"] = zone
    window = re.search(r"between\s+(\d{1,2})(?::(\d\d))?\s*(?:and|to|–|-)\s*(\d{1,2})(?::(\d\d))?", text)
    day = (today + timedelta(days=1)).date() if "tomorrow" in text.lower() else None
    if window and day:
        h1, m1, h2, m2 = window.groups()
        arguments["startWindow"] = f"{day.isoformat()}T{int(h1):02}:{m1 or '00'}"
        arguments["endWindow"] = f"{day.isoformat()}T{int(h2):02}:{m2 or '00'}"
    return arguments


def _duration(text: str) -> dict[str, int]:
    lowered = text.lower()
    if "half an hour" in lowered or "half-hour" in lowered or "half hour" in lowered:
        return {"durationMins": 30}
    if re.search(r"\ban hour\b", lowered):
        return {"durationMins": 60}
    minutes = re.search(r"(\d+)\s*-?\s*(?:min|minute)", lowered)
    return {"durationMins": int(minutes.group(1))} if minutes else {}


def _unanswered_schedule(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The arguments of the last scheduling call, when its answer was `needs`."""
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if m["role"] == "tool":
            for r in m["results"]:
                if r["name"] == "network_schedule_meeting":
                    if "needs" not in r["envelope"]:
                        return None
                    return _arguments_of(messages, r["call_id"])
    return None


def _confirm_call(text: str, messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    match = re.search(r"\b(?:book|confirm|take)\b.*?\b(first|second|third|[123])\b", text, re.I)
    session = _last_session(messages)
    if match is None or session is None:
        return None
    return {
        "id": f"call_{len(messages)}",
        "name": "network_confirm_meeting",
        "arguments": {"sessionId": session, "selectionIndex": ORDINALS[match.group(1).lower()]},
    }


def _last_session(messages: list[dict[str, Any]]) -> str | None:
    for m in reversed(messages):
        for r in m.get("results") or []:
            data = r["envelope"].get("data")
            if r["name"] == "network_schedule_meeting" and isinstance(data, dict):
                return str(data["sessionId"])
    return None


def _arguments_of(messages: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    for m in messages:
        for call in m.get("tool_calls") or []:
            if call["id"] == call_id:
                a = call["arguments"]
                return dict(json.loads(a) if isinstance(a, str) else a)
    return {}


def _time(iso: str) -> str:
    return datetime.fromisoformat(iso).strftime("%H:%M")


def _day(iso: str) -> str:
    return datetime.fromisoformat(iso).strftime("%A %d %B")


def _when(slot: dict[str, str]) -> str:
    return f"{_day(slot['start'])}, {_time(slot['start'])}–{_time(slot['end'])}"
