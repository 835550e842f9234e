"""Perin, the scheduling assistant of seed 000, on tooljig: planner → tool executor →
responder, with the seed's guardrails held by the engine.

    python apps/scheduling_assistant/app.py            # the demo conversation, offline
    OPENAI_API_KEY=... python apps/scheduling_assistant/app.py   # the same, with a real model

`Assistant.chat(user, message)` is the seed's `POST /api/ai/chat`: it answers the reply and
an HTTP status (409 for a duplicate or a race, 403 for a refused permission, 429 for a rate
limit), read from the audit log of the turn's calls. Everything lives under one directory:
the app's data (`network.db`), tooljig's state (`state.db`: idempotency, runs) and its audit
log (`audit.db`, a hash chain).
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

sys.path.insert(0, str(Path(__file__).parent))

import tooljig  # noqa: E402
from tooljig.agent import Agent, AgentState  # noqa: E402

import models  # noqa: E402
from network import Network, seed  # noqa: E402
from tools import build_engine  # noqa: E402

ISRAEL = ZoneInfo("Asia/Jerusalem")
TODAY = datetime(2026, 11, 26, 9, 0, tzinfo=ISRAEL)

# What each user granted the assistant (the seed's integration scopes).
ALL_SCOPES = [
    "calendar.availability.read",
    "calendar.events.propose",
    "calendar.events.write.confirm",
]
GRANTS = {"u_dana": ALL_SCOPES, "u_yoav": ["calendar.availability.read"]}


@dataclass(frozen=True)
class Reply:
    """What `POST /api/ai/chat` answers."""

    status: int
    text: str


class Assistant:
    """The chat endpoint over one directory of state."""

    def __init__(self, home: str | Path, *, today: datetime = TODAY, real_model: bool | None = None) -> None:
        self.home = Path(home)
        self.home.mkdir(parents=True, exist_ok=True)
        self.network = Network(self.home / "network.db")
        self.engine = build_engine(
            self.network,
            state=f"sqlite://{self.home / 'state.db'}",
            audit=f"sqlite://{self.home / 'audit.db'}",
            today=today,
        )
        use_real = bool(os.environ.get("OPENAI_API_KEY")) if real_model is None else real_model
        if use_real:
            planner, responder = models.real_models()
            options: dict[str, Any] = {"system": models.SYSTEM}
        else:
            planner, responder = models.planner(today), models.responder()
            options = {}
        # The responder answers without tools: the seed's two phases, planner then responder.
        options["responder_tools"] = False
        self.agent = Agent(self.engine, planner, responder=responder, options=options)
        # Conversations as a web app keeps them between requests: JSON, per user.
        self.conversations: dict[str, str] = {}

    def chat(self, user: str, message: str, *, new_conversation: bool = False) -> Reply:
        """One user message: the reply, and the status the seed's API answers."""
        saved = None if new_conversation else self.conversations.get(user)
        state = AgentState.from_json(saved) if saved else None
        before = self._audited(user)
        caller = {"principal": user, "scopes": GRANTS.get(user, [])}
        if state is None:
            state = AgentState(message)
            outcome = self.agent.run_sync(state, caller=caller)
        else:
            outcome = self.agent.send_sync(state, message, caller=caller)
        self.conversations[user] = state.to_json()
        turn = self._audited(user)[len(before):]
        status = _status(turn)
        if any(r["replayed"] for r in turn):
            # The seed's 409 for a duplicate: the first request's answer, and nothing redone.
            return Reply(status, f"You already asked me this, so nothing new was sent. {outcome.answer}")
        return Reply(status, outcome.answer)

    def _audited(self, user: str) -> list[dict[str, Any]]:
        return sorted(self.engine.audit_query(principal=user), key=lambda r: r["seq"])


def _status(records: list[dict[str, Any]]) -> int:
    """The seed's HTTP status for a turn, from its audit records."""
    codes = {r.get("code") for r in records}
    if "rate_limited" in codes:
        return 429
    if "conflict" in codes or any(r["replayed"] for r in records):
        return 409
    if codes & {"permission_denied", "scopes_missing"}:
        return 403
    return 200


def demo(home: Path) -> list[tuple[str, str, Reply]]:
    """The seed's acceptance conversation and its edge cases; returns the transcript."""
    assistant = Assistant(home)
    seed(assistant.network, TODAY)
    transcript: list[tuple[str, str, Reply]] = []

    def say(user: str, text: str, **kw: Any) -> None:
        reply = assistant.chat(user, text, **kw)
        transcript.append((user, text, reply))
        print(f"{user:>7}: {text}\n  Perin [{reply.status}]: {reply.text}")

    request = "Can you set a meeting with Aviad tomorrow between 12:00 and 14:00 Israel time?"
    say("u_dana", request)
    say("u_dana", "30 minutes")
    # Meanwhile Aviad accepts another meeting at 12:00: the first proposal is gone.
    noon = TODAY.replace(hour=12, minute=0) + timedelta(days=1)
    assistant.network.add_busy("u_aviad", noon, noon + timedelta(minutes=30), "another meeting")
    print("  (meanwhile Aviad books 12:00 elsewhere)")
    say("u_dana", "Book the first one")
    say("u_dana", "OK, book the second one then")
    # The same request sent again (a double submit): replayed, never a second session.
    say("u_dana", "Set a 30-minute meeting with Aviad tomorrow between 12:00 and 14:00 Israel time", new_conversation=True)
    say("u_dana", "Set a 30 minute meeting with Noa tomorrow", new_conversation=True)
    say("u_dana", "Schedule a half-hour call with Dan tomorrow", new_conversation=True)
    say("u_yoav", "Set a 30-minute meeting with Aviad tomorrow", new_conversation=True)
    return transcript


def main() -> None:
    home = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="perin-"))
    demo(home)
    assistant_audit = tooljig.Engine(audit=f"sqlite://{home / 'audit.db'}")
    print(f"\nnotifications: {[(n['user'], n['kind']) for n in Network(home / 'network.db').notifications()]}")
    print(f"audit: {assistant_audit.verify_audit()}  (in {home})")


if __name__ == "__main__":
    main()
