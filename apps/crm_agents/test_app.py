"""Seed 004 end to end, against the real Redis (pending approvals, runs) and PostgreSQL (the
audit log): risk-based approval, several decisions at once (an edit among them), the agent
woken by decisions made in another worker, the failed multi-step action compensated with the
email honestly `not_reversible`, and all of it in the audit log. Each test has its own key
prefix and schema, removed afterwards."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

import app as crm_app
import tooljig
from agents import build_engine


def _servers_up() -> bool:
    redis = shutil.which("redis-cli") and subprocess.run(["redis-cli", "-u", crm_app.REDIS, "PING"], capture_output=True, text=True).stdout.strip() == "PONG"
    pg = shutil.which("psql") and subprocess.run(["psql", crm_app.POSTGRES, "-qAtc", "SELECT 1"], capture_output=True).returncode == 0
    return bool(redis and pg)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[crm_app.Crmapp]:
    if not _servers_up():
        if os.environ.get("CI") == "true":
            pytest.fail("Redis and PostgreSQL must be reachable under CI=true")
        pytest.skip("Redis or PostgreSQL is unreachable")
    a = crm_app.Crmapp(tmp_path)
    yield a
    a.inbox.stop()
    keys = subprocess.run(["redis-cli", "-u", crm_app.REDIS, "--scan", "--pattern", f"{a.tag}:*"], capture_output=True, text=True).stdout.split()
    if keys:
        subprocess.run(["redis-cli", "-u", crm_app.REDIS, "DEL", *keys], capture_output=True)
    subprocess.run(["psql", crm_app.POSTGRES, "-qAtc", f'DROP SCHEMA IF EXISTS "{a.tag}" CASCADE'], capture_output=True)


def test_the_demo_follows_the_seed(app: crm_app.Crmapp) -> None:
    lines: list[str] = []
    turns = asyncio.run(crm_app.demo(app, log=lines.append))
    assert turns["qualify"].outcome.status == "suspended"
    assert [p["tool"] for p in turns["qualify"].outcome.pending if p["status"] == "pending_approval"] == ["update_lead_status", "send_email"]
    assert "create_follow_up_task: unavailable" in turns["qualified"].outcome.answer
    assert "approval_rejected" in turns["rejected"].outcome.answer
    assert turns["lookup"].outcome.status == "finished", "a low-risk read needs nobody"
    # The CRM: the status change was undone, the email (edited by the manager) stays sent.
    assert app.crm.lead("lead_dana")["status"] == "contacted"  # type: ignore[index]
    assert [(e["to"], e["subject"]) for e in app.crm.emails()] == [("dana@acme.test", "Welcome to Acme's programme, Dana")]
    assert app.crm.tasks() == []
    assert app.crm.lead("lead_bob")["status"] == "new"  # type: ignore[index]
    assert any("rolled back: [('send_email', 'not_reversible'), ('update_lead_status', 'compensated')]" in l or "rolled back: [('update_lead_status', 'compensated'), ('send_email', 'not_reversible')]" in l for l in lines), lines


def test_the_audit_log_in_postgres_keeps_the_decisions_and_the_rollback(app: crm_app.Crmapp) -> None:
    asyncio.run(crm_app.demo(app, log=lambda _: None))
    # Read back by another engine on the same schema: it is PostgreSQL's, not this process's.
    reader = tooljig.Engine(audit=app.audit_url)
    records = sorted(reader.audit_query(principal="rita"), key=lambda r: r["seq"])
    outcomes = [(r["tool"], r["outcome"]) for r in records]
    assert ("update_lead_status", "rolled_back") in outcomes
    assert ("send_email", "not_reversible") in outcomes
    assert ("update_lead_status", "error") in outcomes, "the rejected disqualification"
    sent = next(r for r in records if r["tool"] == "send_email" and r["outcome"] == "ok")
    assert sent["approval"]["decided_by"] == "maria"
    assert sent["arguments"]["subject"] == "Welcome to Acme's programme, Dana", "the manager's edit ran"
    assert reader.verify_audit()["broken"] is None


def test_pending_approvals_live_in_redis_and_the_agent_is_woken_from_another_worker(app: crm_app.Crmapp) -> None:
    async def scenario() -> float:
        turn = await app.agent.ask("Qualify eve@acme.test: ready to buy")
        assert turn.run_id is not None
        # Another worker (as the inbox's process would be) on the same Redis and PostgreSQL.
        other = build_engine(app.crm, state=app.state_url, audit=app.audit_url)
        pending = await other.pending("acme")
        assert sorted(p["tool"] for p in pending) == ["send_email", "update_lead_status"]
        # The inbox page shows them to the signed-in manager.
        page = urllib.request.urlopen(urllib.request.Request(app.inbox.url, headers={"authorization": f"Bearer {app.token}"}))
        html = page.read().decode()
        assert "update_lead_status" in html and "send_email" in html
        # A rep may not decide: only a manager.
        with pytest.raises(tooljig.ToolError, match="roles"):
            await other.approve(pending[0]["id"], arguments_hash=pending[0]["arguments_hash"], approver=crm_app.RITA)
        waiting = asyncio.create_task(app.agent.wait_and_resume(turn.run_id, timeout_ms=20_000))
        await asyncio.sleep(0.2)
        await crm_app.decide_all(other, {})
        decided_at = time.monotonic()
        resumed = await waiting
        assert resumed.outcome.status == "finished"
        return time.monotonic() - decided_at

    woken_after = asyncio.run(scenario())
    assert woken_after < 1.5, f"woken {woken_after:.2f} s after the decisions, not at a poll"
    assert app.crm.lead("lead_eve")["status"] == "qualified"  # type: ignore[index]
    assert [t["lead_id"] for t in app.crm.tasks()] == ["lead_eve"]
