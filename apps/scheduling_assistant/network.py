"""The app's own business logic and data (seed 000's `lib/queries/network.ts`,
`lib/network/scheduling.ts`, notifications): people, connections, calendars, negotiation
sessions, holds, events and notifications, in one SQLite file.

Nothing here knows about models or tooljig: the tools in `tools.py` call it, as the seed's
handlers call the existing service layer.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

SCHEMA = """
CREATE TABLE IF NOT EXISTS users (id TEXT PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS connections (
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, counterpart TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS busy (user TEXT NOT NULL, start TEXT NOT NULL, end TEXT NOT NULL, what TEXT);
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY, owner TEXT NOT NULL, counterpart TEXT NOT NULL, connection TEXT NOT NULL,
  duration_mins INTEGER NOT NULL, proposals TEXT NOT NULL, status TEXT NOT NULL, confirmed TEXT);
CREATE TABLE IF NOT EXISTS holds (id TEXT PRIMARY KEY, session TEXT NOT NULL, start TEXT NOT NULL,
  end TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS notifications (id INTEGER PRIMARY KEY AUTOINCREMENT, user TEXT NOT NULL,
  kind TEXT NOT NULL, payload TEXT NOT NULL);
"""


class SlotTaken(Exception):
    """The slot is no longer free on the counterpart's calendar."""


@dataclass(frozen=True)
class Match:
    """A person a human reference may mean, through one of the user's connections."""

    connection_id: str
    user_id: str
    name: str
    status: str


class Network:
    """The app's data, over one SQLite file (safe to open from several threads)."""

    def __init__(self, path: str | Path) -> None:
        self.db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.executescript(SCHEMA)

    # People and connections

    def add_user(self, user_id: str, name: str, email: str) -> None:
        self.db.execute("INSERT OR REPLACE INTO users VALUES (?, ?, ?)", (user_id, name, email))

    def connect(self, owner: str, counterpart: str, status: str = "active") -> str:
        connection = f"conn_{owner}_{counterpart}"
        self.db.execute(
            "INSERT OR REPLACE INTO connections VALUES (?, ?, ?, ?)",
            (connection, owner, counterpart, status),
        )
        return connection

    def resolve(self, owner: str, reference: str) -> list[Match]:
        """Who `reference` (a first name, a full name or an email) may be among `owner`'s
        connections: the seed's fuzzy counterpart resolution, server-side."""
        needle = reference.strip().lower()
        rows = self.db.execute(
            "SELECT c.id, u.id AS uid, u.name, u.email, c.status FROM connections c "
            "JOIN users u ON u.id = c.counterpart WHERE c.owner = ?",
            (owner,),
        ).fetchall()
        exact = [r for r in rows if needle in (r["email"].lower(), r["name"].lower())]
        loose = exact or [r for r in rows if needle in r["name"].lower().split()]
        return [Match(r["id"], r["uid"], r["name"], r["status"]) for r in loose]

    def connection(self, connection_id: str) -> sqlite3.Row | None:
        row: sqlite3.Row | None = self.db.execute(
            "SELECT c.*, u.name FROM connections c JOIN users u ON u.id = c.counterpart WHERE c.id = ?",
            (connection_id,),
        ).fetchone()
        return row

    # Calendars

    def add_busy(self, user: str, start: datetime, end: datetime, what: str = "busy") -> None:
        self.db.execute(
            "INSERT INTO busy VALUES (?, ?, ?, ?)", (user, start.isoformat(), end.isoformat(), what)
        )

    def is_free(self, user: str, start: datetime, end: datetime) -> bool:
        for row in self.db.execute("SELECT start, end FROM busy WHERE user = ?", (user,)):
            if datetime.fromisoformat(row["start"]) < end and start < datetime.fromisoformat(row["end"]):
                return False
        return True

    def free_slots(
        self, users: list[str], start: datetime, end: datetime, minutes: int, limit: int = 3
    ) -> list[dict[str, str]]:
        """Up to `limit` slots of `minutes` in [start, end) free for every user, on the half hour."""
        slots: list[dict[str, str]] = []
        at = start
        length = timedelta(minutes=minutes)
        while at + length <= end and len(slots) < limit:
            if all(self.is_free(u, at, at + length) for u in users):
                slots.append({"start": at.isoformat(), "end": (at + length).isoformat()})
            at += timedelta(minutes=30)
        return slots

    # Negotiation sessions

    def create_session(
        self, owner: str, counterpart: str, connection: str, minutes: int, proposals: list[dict[str, str]]
    ) -> str:
        session = f"s_{uuid.uuid4().hex[:8]}"
        self.db.execute(
            "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, 'proposed', NULL)",
            (session, owner, counterpart, connection, minutes, json.dumps(proposals)),
        )
        return session

    def session(self, session_id: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT * FROM sessions WHERE id = ?", (session_id,)).fetchone()
        if row is None:
            return None
        out = dict(row)
        out["proposals"] = json.loads(out["proposals"])
        return out

    def sessions(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute("SELECT * FROM sessions ORDER BY rowid")]

    # Two-phase booking: a hold on the owner's calendar, then the event on both.

    def hold(self, session_id: str, start: str, end: str) -> str:
        hold = f"h_{uuid.uuid4().hex[:8]}"
        self.db.execute("INSERT INTO holds VALUES (?, ?, ?, ?, 'held')", (hold, session_id, start, end))
        return hold

    def release(self, hold_id: str) -> bool:
        cur = self.db.execute("UPDATE holds SET status = 'released' WHERE id = ? AND status = 'held'", (hold_id,))
        return cur.rowcount == 1

    def holds(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute("SELECT * FROM holds ORDER BY rowid")]

    def book(self, session_id: str, hold_id: str) -> dict[str, str]:
        """Turns a hold into the meeting, after checking the counterpart's calendar again (it
        may have changed since the proposal): raises `SlotTaken` when it did."""
        session = self.session(session_id)
        hold = self.db.execute("SELECT * FROM holds WHERE id = ?", (hold_id,)).fetchone()
        if session is None or hold is None:
            raise KeyError(session_id)
        start, end = datetime.fromisoformat(hold["start"]), datetime.fromisoformat(hold["end"])
        if not self.is_free(session["counterpart"], start, end):
            raise SlotTaken(hold["start"])
        self.db.execute("UPDATE holds SET status = 'booked' WHERE id = ?", (hold_id,))
        self.db.execute(
            "UPDATE sessions SET status = 'confirmed', confirmed = ? WHERE id = ?",
            (json.dumps({"start": hold["start"], "end": hold["end"]}), session_id),
        )
        for user in (session["owner"], session["counterpart"]):
            self.add_busy(user, start, end, f"meeting {session_id}")
        return {"start": hold["start"], "end": hold["end"]}

    # Notifications (the seed's actionable notifications)

    def notify(self, user: str, kind: str, payload: dict[str, Any]) -> None:
        self.db.execute(
            "INSERT INTO notifications (user, kind, payload) VALUES (?, ?, ?)",
            (user, kind, json.dumps(payload, sort_keys=True)),
        )

    def notifications(self) -> list[dict[str, Any]]:
        return [
            {**dict(r), "payload": json.loads(r["payload"])}
            for r in self.db.execute("SELECT * FROM notifications ORDER BY id")
        ]


def seed(network: Network, today: datetime) -> None:
    """The demo's people: Dana (the user) knows Aviad, two Dans and Noa (no longer
    connected); Aviad is busy from 12:30 to 13:00 Israel time tomorrow."""
    for uid, name, email in [
        ("u_dana", "Dana Levi", "dana@example.com"),
        ("u_aviad", "Aviad Cohen", "aviad@example.com"),
        ("u_dan_a", "Dan Amir", "dan.amir@example.com"),
        ("u_dan_b", "Dan Bar", "dan.bar@example.com"),
        ("u_noa", "Noa Peretz", "noa@example.com"),
    ]:
        network.add_user(uid, name, email)
    for other in ("u_aviad", "u_dan_a", "u_dan_b"):
        network.connect("u_dana", other)
    network.connect("u_dana", "u_noa", status="inactive")
    tomorrow = (today + timedelta(days=1)).date()
    israel = ZoneInfo("Asia/Jerusalem")
    noon = datetime(tomorrow.year, tomorrow.month, tomorrow.day, 12, 30, tzinfo=israel)
    network.add_busy("u_aviad", noon, noon + timedelta(minutes=30), "dentist")
