"""Seed 000 end to end: the demo conversation's transcript, the app's data, tooljig's state
store and its audit log; then the rate limit, the hidden internal steps, and a process that
opens the same directory again (a second worker, or after a restart)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import app
import tooljig
from network import Network, seed


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[tuple[int, str]]]:
    path = tmp_path_factory.mktemp("perin")
    return path, [(r.status, r.text) for _, _, r in app.demo(path)]


@pytest.fixture(scope="module")
def home(run: tuple[Path, list[tuple[int, str]]]) -> Path:
    return run[0]


@pytest.fixture(scope="module")
def transcript(run: tuple[Path, list[tuple[int, str]]]) -> list[tuple[int, str]]:
    return run[1]


def test_the_transcript_follows_the_seed(transcript: list[tuple[int, str]]) -> None:
    statuses = [s for s, _ in transcript]
    assert statuses == [200, 200, 409, 200, 409, 403, 200, 403]
    texts = [t for _, t in transcript]
    assert texts[0] == "How long should the meeting with Aviad be?"
    assert texts[1].startswith("I've sent Aviad Cohen 3 options for a 30-minute meeting on Friday 27 November")
    assert "12:00, 13:00, 13:30" in texts[1], "12:30 is Aviad's dentist"
    assert "just taken, so I released the hold" in texts[2]
    assert texts[3] == "Booked: Friday 27 November, 13:00–13:30. I've let them know."
    assert texts[4].startswith("You already asked me this, so nothing new was sent.")
    assert "no longer connected with Noa" in texts[5]
    assert texts[6] == "Which one do you mean: Dan Amir or Dan Bar?"
    assert "connect it in Settings" in texts[7]


def test_the_apps_data_has_one_session_one_booking_and_two_notifications(home: Path) -> None:
    network = Network(home / "network.db")
    [session] = network.sessions()
    assert session["owner"] == "u_dana" and session["counterpart"] == "u_aviad"
    assert session["status"] == "confirmed"
    assert json.loads(session["confirmed"])["start"].startswith("2026-11-27T13:00")
    holds = [(h["start"][11:16], h["status"]) for h in network.holds()]
    assert holds == [("12:00", "released"), ("13:00", "booked")], "the failed hold was rolled back"
    kinds = [(n["user"], n["kind"]) for n in network.notifications()]
    assert kinds == [("u_aviad", "meeting_proposed"), ("u_aviad", "meeting_confirmed")]
    assert network.notifications()[0]["payload"]["from"] == "u_dana", "the server knows who asked"


def test_the_state_store_keeps_the_idempotency_records(home: Path) -> None:
    db = sqlite3.connect(home / "state.db")
    namespaces = dict(db.execute("SELECT ns, count(*) FROM tooljig_state GROUP BY ns").fetchall())
    assert namespaces.get("idempotency", 0) >= 3, namespaces


def test_the_audit_log_keeps_every_call_in_one_intact_chain(home: Path) -> None:
    engine = tooljig.Engine(audit=f"sqlite://{home / 'audit.db'}")
    assert engine.verify_audit()["broken"] is None
    records = sorted(engine.audit_query(), key=lambda r: r["seq"])
    seen = [(r["tool"], r["outcome"], r.get("code")) for r in records]
    assert ("network_schedule_meeting", "needs", None) in seen
    assert seen.count(("calendar_hold", "ok", None)) == 2
    assert ("calendar_book", "error", "conflict") in seen
    assert ("calendar_hold", "rolled_back", None) in seen, "the released hold, in the audit"
    assert ("network_confirm_meeting", "error", "conflict") in seen
    assert ("network_schedule_meeting", "error", "permission_denied") in seen
    assert ("network_schedule_meeting", "error", "ambiguous") in seen
    assert ("network_schedule_meeting", "error", "scopes_missing") in seen
    assert sum(r["replayed"] for r in records) == 1
    nested = [r for r in records if r["tool"].startswith("calendar_")]
    assert all(r["parent"]["tool"] == "network_confirm_meeting" for r in nested)
    # The model never wrote an id: the connection was resolved on the server.
    scheduled = next(r for r in records if r["tool"] == "network_schedule_meeting" and r["outcome"] == "ok")
    assert {h["parameter"] for h in scheduled["hidden"]} == {"userId", "connectionId"}
    assert scheduled["arguments"]["connectionId"] == "conn_u_dana_u_aviad"


def test_a_sixth_proposal_in_a_minute_is_rate_limited(tmp_path: Path) -> None:
    assistant = app.Assistant(tmp_path)
    seed(assistant.network, app.TODAY)
    replies = [
        assistant.chat("u_dana", f"Set a {m}-minute meeting with Aviad tomorrow", new_conversation=True)
        for m in (15, 20, 25, 30, 45, 50)
    ]
    assert [r.status for r in replies] == [200] * 5 + [429]
    assert "try again in a minute" in replies[-1].text
    assert len(assistant.network.sessions()) == 5


def test_the_two_phases_are_internal_and_a_second_process_sees_the_same_state(tmp_path: Path) -> None:
    first = app.Assistant(tmp_path)
    seed(first.network, app.TODAY)
    caller = {"principal": "u_dana", "scopes": app.ALL_SCOPES}
    offered = [s["name"] for s in first.engine.specs_for(caller)]
    assert offered == ["network_schedule_meeting", "network_confirm_meeting"]
    hidden = first.engine.specs_for(caller)[0]["input_schema"]["properties"]
    assert "connectionId" not in hidden and "userId" not in hidden
    direct = first.engine.run_sync([{"id": "x", "tool": "calendar_hold", "arguments": {"sessionId": "s", "start": "a", "end": "b"}}], caller=caller)
    assert direct.get("x").envelope["error"]["reason"] == "internal"
    assert first.chat("u_dana", "Set a 30-minute meeting with Aviad tomorrow").status == 200
    # Another worker on the same directory: the duplicate is replayed from the shared store.
    second = app.Assistant(tmp_path)
    reply = second.chat("u_dana", "Set a 30-minute meeting with Aviad tomorrow")
    assert reply.status == 409
    assert len(second.network.sessions()) == 1 and len(second.network.notifications()) == 1
