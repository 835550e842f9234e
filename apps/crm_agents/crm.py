"""The CRM's own data and services (seed 004's tRPC procedures): leads, their status history,
emails, follow-up tasks, in one SQLite file. Nothing here knows about agents or tooljig."""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS leads (id TEXT PRIMARY KEY, name TEXT, email TEXT, company TEXT,
  status TEXT NOT NULL, score INTEGER);
CREATE TABLE IF NOT EXISTS emails (id TEXT PRIMARY KEY, lead_id TEXT, "to" TEXT, subject TEXT, body TEXT);
CREATE TABLE IF NOT EXISTS tasks (id TEXT PRIMARY KEY, lead_id TEXT, title TEXT, due_days INTEGER);
"""


class TaskServiceDown(Exception):
    """The task service is unreachable."""


class Crm:
    def __init__(self, path: str | Path) -> None:
        self.db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.executescript(SCHEMA)
        self.task_service_up = True

    def seed(self) -> None:
        for lead in [
            ("lead_dana", "Dana Levi", "dana@acme.test", "Acme", "contacted", 72),
            ("lead_bob", "Bob Stone", "bob@globex.test", "Globex", "new", 31),
            ("lead_eve", "Eve Adams", "eve@acme.test", "Acme", "new", 55),
        ]:
            self.db.execute("INSERT OR REPLACE INTO leads VALUES (?, ?, ?, ?, ?, ?)", lead)

    def search(self, query: str, limit: int) -> list[dict[str, Any]]:
        like = f"%{query.lower()}%"
        rows = self.db.execute(
            "SELECT * FROM leads WHERE lower(name) LIKE ? OR lower(email) LIKE ? OR lower(company) LIKE ? "
            "ORDER BY score DESC LIMIT ?",
            (like, like, like, limit),
        )
        return [dict(r) for r in rows]

    def lead(self, lead_id: str) -> dict[str, Any] | None:
        row = self.db.execute("SELECT * FROM leads WHERE id = ?", (lead_id,)).fetchone()
        return dict(row) if row else None

    def set_status(self, lead_id: str, status: str) -> str:
        """Sets a lead's status; answers the previous one (what a rollback restores)."""
        lead = self.lead(lead_id)
        if lead is None:
            raise KeyError(lead_id)
        self.db.execute("UPDATE leads SET status = ? WHERE id = ?", (status, lead_id))
        return str(lead["status"])

    def send_email(self, lead_id: str | None, to: str, subject: str, body: str) -> str:
        email_id = f"em_{uuid.uuid4().hex[:8]}"
        self.db.execute("INSERT INTO emails VALUES (?, ?, ?, ?, ?)", (email_id, lead_id, to, subject, body))
        return email_id

    def emails(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute("SELECT * FROM emails ORDER BY rowid")]

    def create_task(self, lead_id: str, title: str, due_days: int) -> str:
        if not self.task_service_up:
            raise TaskServiceDown("the task service is unreachable")
        task_id = f"task_{uuid.uuid4().hex[:8]}"
        self.db.execute("INSERT INTO tasks VALUES (?, ?, ?, ?)", (task_id, lead_id, title, due_days))
        return task_id

    def delete_task(self, task_id: str) -> bool:
        return self.db.execute("DELETE FROM tasks WHERE id = ?", (task_id,)).rowcount == 1

    def tasks(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute("SELECT * FROM tasks ORDER BY rowid")]
