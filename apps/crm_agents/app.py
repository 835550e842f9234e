"""The CRM agents of seed 004 on tooljig: the lead qualifier, its approval inbox, Redis for
pending approvals and PostgreSQL for the audit log (the real servers).

    python apps/crm_agents/app.py            # the demo (needs Redis and PostgreSQL)
    python apps/crm_agents/app.py --serve    # the same, then keeps the inbox open
    python apps/crm_agents/app.py --await-manager   # asks, then waits for the manager in the inbox

Servers: TOOLJIG_REDIS_URL (default redis://127.0.0.1:6379) and TOOLJIG_POSTGRES_URL
(default postgres://127.0.0.1:5432/test); each start uses a key prefix and a schema of its
own. The manager signs in to the inbox with the token printed at start.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import tooljig  # noqa: E402

from agents import LeadQualifier, Turn, build_engine  # noqa: E402
from crm import Crm  # noqa: E402

REDIS = os.environ.get("TOOLJIG_REDIS_URL", "redis://127.0.0.1:6379")
POSTGRES = os.environ.get("TOOLJIG_POSTGRES_URL", "postgres://127.0.0.1:5432/test")
RITA = {"principal": "rita", "tenant": "acme", "roles": ["rep"]}
MARIA = {"principal": "maria", "tenant": "acme", "roles": ["manager"]}


@dataclass
class Crmapp:
    """One start of the app: its CRM, its engine on the shared servers, its inbox."""

    home: Path
    tag: str = field(default_factory=lambda: f"crm_{uuid.uuid4().hex[:10]}")

    def __post_init__(self) -> None:
        self.crm = Crm(self.home / "crm.db")
        self.crm.seed()
        self.state_url = f"{REDIS}?prefix={self.tag}:"
        self.audit_url = f"{POSTGRES}?schema={self.tag}"
        self.engine = build_engine(self.crm, state=self.state_url, audit=self.audit_url)
        self.token = uuid.uuid4().hex
        self.inbox = self.engine.serve_inbox(tokens={self.token: MARIA})
        self.agent = LeadQualifier(self.engine, RITA)


async def decide_all(engine: tooljig.Engine, decisions: dict[str, Any]) -> list[dict[str, Any]]:
    """The manager decides several pending requests at once: `decisions` maps a tool to
    "approve", "reject" or new arguments (an edit)."""
    done = []
    for request in await engine.pending("acme"):
        choice = decisions.get(request["tool"], "approve")
        if choice == "approve":
            done.append(await engine.approve(request["id"], arguments_hash=request["arguments_hash"], approver=MARIA))
        elif choice == "reject":
            done.append(await engine.reject(request["id"], arguments_hash=request["arguments_hash"], approver=MARIA, message="not this quarter"))
        else:
            done.append(await engine.edit(request["id"], {**request["arguments"], **choice}, arguments_hash=request["arguments_hash"], approver=MARIA))
    return done


async def demo(app: Crmapp, log: Any = print) -> dict[str, Turn]:
    turns: dict[str, Turn] = {}
    log(f"inbox: {app.inbox.url} (token {app.token})")

    turns["qualify"] = t = await app.agent.ask("Qualify dana@acme.test: she confirmed budget. Send her the intro email.")
    log(f"rita: qualify Dana → {t.outcome.status}, {len(await app.engine.pending('acme'))} waiting for a manager")
    # The manager decides both at once, editing the email's subject; meanwhile the task
    # service goes down, so the follow-up task (the action's last step) will fail.
    await decide_all(app.engine, {"send_email": {"subject": "Welcome to Acme's programme, Dana"}})
    app.crm.task_service_up = False
    assert t.run_id is not None
    run_id = t.run_id
    turns["qualified"] = t = await app.agent.wait_and_resume(run_id)
    log(f"agent (woken by the decisions): {t.outcome.answer}")
    record = await app.engine.run_record(run_id)
    undone = [(e["tool"], e["outcome"]) for e in (record or {}).get("rollback", [])]
    log(f"  the action failed and was rolled back: {undone}")
    app.crm.task_service_up = True

    turns["disqualify"] = t = await app.agent.ask("Disqualify bob@globex.test: no budget")
    await decide_all(app.engine, {"update_lead_status": "reject"})
    assert t.run_id is not None
    turns["rejected"] = t = await app.agent.wait_and_resume(t.run_id)
    log(f"rita: disqualify Bob → rejected: {t.outcome.answer}")

    turns["lookup"] = t = await app.agent.ask("Find leads from Acme")
    log(f"rita: find leads → {t.outcome.status}: {t.outcome.answer}")

    log("\naudit (PostgreSQL):")
    for r in sorted(app.engine.audit_query(principal="rita"), key=lambda r: r["seq"]):
        log(f"  {r['tool']:<22} {r['outcome']:<16} {r.get('code') or ''}")
    log(f"chain: {app.engine.verify_audit()}")
    return turns


async def await_manager(app: Crmapp) -> None:
    """The agent asks to qualify Dana and waits for the manager, who decides in the inbox
    page (in a browser): one JSON line when the requests wait, one when the agent went on."""
    turn = await app.agent.ask("Qualify dana@acme.test: she confirmed budget. Send her the intro email.")
    pending = await app.engine.pending("acme")
    print(json.dumps({"inbox": app.inbox.url, "token": app.token, "tag": app.tag, "pending": [p["tool"] for p in pending]}), flush=True)
    assert turn.run_id is not None
    resumed = await app.agent.wait_and_resume(turn.run_id, timeout_ms=120_000)
    lead = app.crm.lead("lead_dana") or {}
    print(json.dumps({"status": resumed.outcome.status, "answer": resumed.outcome.answer, "lead_status": lead.get("status"), "emails": [e["subject"] for e in app.crm.emails()]}), flush=True)


async def main() -> None:
    home = Path(tempfile.mkdtemp(prefix="crm-"))
    app = Crmapp(home)
    try:
        if "--await-manager" in sys.argv:
            await await_manager(app)
            return
        await demo(app)
        if "--serve" in sys.argv:
            print(f"\nthe inbox stays open at {app.inbox.url}; Ctrl-C to stop")
            await asyncio.Event().wait()
    finally:
        app.inbox.stop()


if __name__ == "__main__":
    asyncio.run(main())
