"""Where the engine's audit log goes: ``Engine(audit=SqliteAudit(path))``.

One record per call that reached the pipeline, refusals included, each hash-chained to the
previous one; read back with ``engine.audit_query(...)`` and checked with
``engine.verify_audit()``. The sinks are the core's; these classes only name them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

__all__ = ["AuditLog", "JsonlAudit", "MemoryAudit", "PostgresAudit", "SqliteAudit"]


@dataclass(frozen=True)
class MemoryAudit:
    """Keeps the records in memory, for tests and short-lived processes."""

    def _option(self) -> Any:
        return "memory"


@dataclass(frozen=True)
class SqliteAudit:
    """Appends the records to a SQLite database at ``path`` (created when missing); durable
    when ``engine.run`` returns."""

    path: str | os.PathLike[str]

    def _option(self) -> Any:
        return {"sqlite": os.fspath(self.path)}


@dataclass(frozen=True)
class JsonlAudit:
    """Appends the records to a JSON Lines file at ``path``, one record a line."""

    path: str | os.PathLike[str]

    def _option(self) -> Any:
        return {"jsonl": os.fspath(self.path)}


@dataclass(frozen=True)
class PostgresAudit:
    """Appends the records to a PostgreSQL database: one hash chain, however many workers on
    however many machines write it (the database serialises their commits). ``url`` is
    libpq's; ``?schema=NAME`` puts the tables in their own schema (default ``tooljig``)."""

    url: str

    def _option(self) -> Any:
        return {"postgres": self.url}


#: Any of the audit sinks.
AuditLog = MemoryAudit | SqliteAudit | JsonlAudit | PostgresAudit
