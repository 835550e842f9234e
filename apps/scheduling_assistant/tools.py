"""The assistant's tools over the app's business logic (seed 000's `lib/ai/tools/`), with the
seed's guardrails declared as tooljig policy instead of written in each handler:

- no ids from the model: `userId` comes from the caller, `connectionId` from the `contacts`
  resolver over the human reference the model wrote (`counterpart`);
- membership and status: an inactive connection is refused (`permission_denied`,
  `reason: connection_inactive`);
- scopes: proposing needs `calendar.availability.read` and `calendar.events.propose`,
  confirming `calendar.events.write.confirm` or `calendar.events.write.auto`;
- idempotency: a duplicate request replays the first one's result (the app answers 409) and
  never makes a second session or booking;
- two-phase booking: `network_confirm_meeting` holds the slot, then books it, in one atomic
  nested batch of internal tools: when the booking fails the hold is released;
- rate limits per user; the audit log keeps every call;
- notifications to the counterpart after the action, from `on_success`: out of the model's reach.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import tooljig

from network import Network, SlotTaken

SCHEDULE_SCHEMA = {
    "type": "object",
    "properties": {
        "counterpart": {
            "type": "string",
            "description": "Human name or email mentioned by the user (e.g., 'Aviad').",
        },
        "durationMins": {"type": "integer", "minimum": 5, "maximum": 240},
        "startWindow": {"type": "string", "description": "ISO start of candidate window (optional)."},
        "endWindow": {"type": "string", "description": "ISO end of candidate window (optional)."},
        "tzHint": {
            "type": "string",
            "description": "IANA timezone when user mentions 'Israel time' etc. (optional).",
        },
        "userId": {"type": "string"},
        "connectionId": {"type": "string"},
    },
    "required": ["counterpart", "userId", "connectionId"],
    "additionalProperties": False,
}

CONFIRM_SCHEMA = {
    "type": "object",
    "properties": {
        "sessionId": {"type": "string", "description": "The session network_schedule_meeting returned."},
        "selectionIndex": {"type": "integer", "minimum": 0, "description": "Which proposal, from 0."},
        "userId": {"type": "string"},
    },
    "required": ["sessionId", "selectionIndex", "userId"],
    "additionalProperties": False,
}

# Five proposals a minute per user: a loop of a confused model cannot spam a counterpart.
SCHEDULE_RATE = [{"max": 5, "per_ms": 60_000, "scope": "principal"}]


def build_engine(network: Network, *, state: str, audit: str, today: datetime) -> tooljig.Engine:
    """The engine with the assistant's tools, its state (idempotency, runs) and audit log in
    the given stores (`sqlite://...`, or `postgres://...` for several workers)."""

    def contacts(request: dict[str, Any]) -> dict[str, Any]:
        matches = network.resolve(request["caller"]["principal"], request["value"])
        if not matches:
            return {"status": "not_found"}
        if len(matches) > 1:
            return {"status": "ambiguous", "candidates": [m.name for m in matches]}
        return {"status": "found", "value": matches[0].connection_id}

    engine = tooljig.Engine(state_store=state, audit=audit, resolvers={"contacts": contacts})

    def schedule(args: dict[str, Any]) -> dict[str, Any]:
        if "durationMins" not in args:
            raise tooljig.Needs("durationMins")
        connection = network.connection(args["connectionId"])
        if connection is None or connection["status"] != "active":
            raise tooljig.ToolError(
                "permission_denied",
                f"the connection with {args['counterpart']} is not active",
                reason="connection_inactive",
            )
        zone = _zone(args.get("tzHint"))
        start, end = _window(args, zone, today)
        minutes = args["durationMins"]
        users = [args["userId"], connection["counterpart"]]
        proposals = network.free_slots(users, start, end, minutes)
        if not proposals:
            raise tooljig.ToolError(
                "not_found", "no common free time in that window", reason="no_common_slot"
            )
        session = network.create_session(
            args["userId"], connection["counterpart"], connection["id"], minutes, proposals
        )
        return {
            "sessionId": session,
            "proposals": proposals,
            "counterpart": connection["name"],
            "counterpartUserId": connection["counterpart"],
            "connectionId": connection["id"],
            "durationMins": minutes,
        }

    def proposed(event: dict[str, Any]) -> None:
        data = event["result"]
        network.notify(
            data["counterpartUserId"],
            "meeting_proposed",
            {"session": data["sessionId"], "from": event["arguments"]["userId"], "proposals": data["proposals"]},
        )

    engine.register(
        "network_schedule_meeting",
        "Start a negotiation session and propose slots to a counterpart.",
        SCHEDULE_SCHEMA,
        schedule,
        on_success=proposed,
        hidden={
            "userId": {"from": "principal"},
            "connectionId": {"from": "resolver", "resolver": "contacts", "input": "counterpart"},
        },
        scopes=["calendar.availability.read", "calendar.events.propose"],
        idempotency={"mode": "arguments"},
        rate_limits=SCHEDULE_RATE,
    )

    async def confirm(args: dict[str, Any], ctx: tooljig.ToolContext) -> dict[str, Any]:
        session = network.session(args["sessionId"])
        if session is None or session["owner"] != args["userId"]:
            raise tooljig.ToolError("not_found", f"no session {args['sessionId']} of yours")
        if session["status"] == "confirmed":
            raise tooljig.ToolError(
                "conflict", "this meeting is already confirmed", reason="already_confirmed"
            )
        proposals = session["proposals"]
        if args["selectionIndex"] >= len(proposals):
            raise tooljig.ToolError(
                "invalid_arguments", f"there are {len(proposals)} proposals, numbered from 0"
            )
        slot = proposals[args["selectionIndex"]]
        out = await ctx.run(
            [
                {"id": "hold", "tool": "calendar_hold", "arguments": {"sessionId": session["id"], **slot}},
                {
                    "id": "book",
                    "tool": "calendar_book",
                    "arguments": {
                        "sessionId": session["id"],
                        "holdId": {"$from": "hold", "pointer": "/holdId"},
                    },
                },
            ],
            atomic=True,
        )
        booked = out.get("book")
        if booked.envelope.get("ok"):
            return {"sessionId": session["id"], "meeting": booked.envelope["data"], "counterpartUserId": session["counterpart"]}
        error = booked.envelope.get("error") or out.get("hold").envelope.get("error") or {}
        released = [e["outcome"] for e in (out.rollback or {}).get("entries", [])]
        raise tooljig.ToolError(
            "conflict" if error.get("reason") == "slot_taken" else "unavailable",
            f"{error.get('message', 'the booking failed')}; the hold was released",
            reason=error.get("reason", "booking_failed"),
            rolled_back=released,
        )

    def confirmed(event: dict[str, Any]) -> None:
        data = event["result"]
        network.notify(
            data["counterpartUserId"],
            "meeting_confirmed",
            {"session": data["sessionId"], "meeting": data["meeting"]},
        )

    engine.register(
        "network_confirm_meeting",
        "Confirm one of a session's proposed slots: books it on both calendars.",
        CONFIRM_SCHEMA,
        confirm,
        on_success=confirmed,
        hidden={"userId": {"from": "principal"}},
        scopes=["calendar.events.write.confirm|calendar.events.write.auto"],
        may_call=["calendar_hold", "calendar_book"],
        idempotency={"mode": "arguments"},
    )

    # The two phases, internal: only network_confirm_meeting runs them, never the model.
    engine.register(
        "calendar_hold",
        "Holds a slot on the owner's calendar.",
        {"type": "object", "required": ["sessionId", "start", "end"]},
        lambda a: {"holdId": network.hold(a["sessionId"], a["start"], a["end"])},
        internal=True,
        compensation="calendar_release_hold",
    )
    engine.register(
        "calendar_release_hold",
        "Releases a hold.",
        {"type": "object", "required": ["result"]},
        lambda a: {"released": network.release(a["result"]["holdId"])},
        internal=True,
    )

    def book(args: dict[str, Any]) -> dict[str, str]:
        try:
            return network.book(args["sessionId"], args["holdId"])
        except SlotTaken as taken:
            raise tooljig.ToolError(
                "conflict", f"the slot at {taken} was just taken", reason="slot_taken"
            ) from None

    engine.register(
        "calendar_book",
        "Books a held slot on both calendars.",
        {"type": "object", "required": ["sessionId", "holdId"]},
        book,
        internal=True,
    )
    return engine


def _zone(hint: str | None) -> ZoneInfo:
    try:
        return ZoneInfo(hint or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        raise tooljig.ToolError("invalid_arguments", f"unknown time zone {hint!r}; use an IANA name") from None


def _window(args: dict[str, Any], zone: ZoneInfo, today: datetime) -> tuple[datetime, datetime]:
    """The candidate window: the given ISO times (in `zone` when they carry no offset), else
    tomorrow's working hours in `zone`."""
    tomorrow = (today + timedelta(days=1)).date()
    default_start = datetime(tomorrow.year, tomorrow.month, tomorrow.day, 9, tzinfo=zone)

    def parse(key: str, fallback: datetime) -> datetime:
        text = args.get(key)
        if text is None:
            return fallback
        try:
            at = datetime.fromisoformat(text)
        except ValueError:
            raise tooljig.ToolError("invalid_arguments", f"{key} is not an ISO time: {text!r}") from None
        return at if at.tzinfo else at.replace(tzinfo=zone)

    start = parse("startWindow", default_start)
    end = parse("endWindow", start.replace(hour=17, minute=0))
    if end <= start:
        raise tooljig.ToolError("invalid_arguments", "endWindow must come after startWindow")
    return start, end
