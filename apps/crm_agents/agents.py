"""The lead-qualifier agent of seed 004 on tooljig: the CRM's procedures as typed tools
(pydantic schemas from the type hints), risk-based approval (low and medium run, high waits
for a manager), pending approvals kept in Redis and the audit log in PostgreSQL, an agent
woken by the manager's decision, and all-or-nothing actions: a multi-step action that fails
is compensated (the status change reverted), and what cannot be undone (the email) is
reported `not_reversible`. Both show in the audit log."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

import tooljig
from tooljig.agent import Agent, AgentState, Emit, ModelClient, RunOutcome

from crm import Crm, TaskServiceDown

Status = Literal["new", "contacted", "qualified", "disqualified", "converted"]
MANAGERS = {"approval": {"approver_roles": ["manager"]}}


def build_engine(crm: Crm, *, state: str, audit: str) -> tooljig.Engine:
    """The engine over the CRM: `state` keeps runs and pending approvals (`redis://...`),
    `audit` the audit log (`postgres://...`)."""
    engine = tooljig.Engine(state_store=state, audit=audit, approval_rules={"min_risk": "high"})

    @engine.tool(risk="low", effect="read")
    def search_leads(query: str, limit: int = 10) -> list[dict[str, Any]]:
        """Search for leads by email, name, or company. Returns lead details including score and status.

        Args:
            query: Search query (email, name, or company).
            limit: Maximum number of results.
        """
        return crm.search(query, limit)

    @engine.tool(risk="high", effect="write", compensation="revert_lead_status", **MANAGERS)
    def update_lead_status(lead_id: str, new_status: Status, reason: str) -> dict[str, Any]:
        """Update the status of a lead (e.g., New → Qualified → Converted). Requires human approval.

        Args:
            lead_id: The lead's id.
            new_status: New status to set.
            reason: Reason for status change.
        """
        try:
            previous = crm.set_status(lead_id, new_status)
        except KeyError:
            raise tooljig.ToolError("not_found", f"no lead {lead_id}") from None
        return {"lead_id": lead_id, "status": new_status, "previous_status": previous}

    @engine.tool(internal=True)
    def revert_lead_status(arguments: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        """Undoes a status change: the lead gets its previous status back."""
        crm.set_status(result["lead_id"], result["previous_status"])
        return {"lead_id": result["lead_id"], "status": result["previous_status"]}

    @engine.tool(risk="high", effect="external", **MANAGERS)
    def send_email(to: str, subject: str, body: str, lead_id: str | None = None) -> dict[str, Any]:
        """Send an email to a lead or contact. Requires human approval before sending.

        Args:
            to: Recipient email address.
            subject: Email subject line.
            body: Email body (HTML supported).
            lead_id: Associated lead id.
        """
        return {"email_id": crm.send_email(lead_id, to, subject, body), "to": to}

    @engine.tool(risk="medium", effect="write", compensation="delete_task", after=["send_email"])
    def create_follow_up_task(lead_id: str, title: str, due_days: int = 3) -> dict[str, Any]:
        """Create a follow-up task for a lead, after the emails of the same step.

        Args:
            lead_id: The lead's id.
            title: What to do.
            due_days: Due in this many days.
        """
        try:
            return {"task_id": crm.create_task(lead_id, title, due_days)}
        except TaskServiceDown as down:
            raise tooljig.ToolError("unavailable", str(down)) from None

    @engine.tool(internal=True)
    def delete_task(arguments: dict[str, Any], result: dict[str, Any]) -> bool:
        """Undoes a task's creation."""
        return crm.delete_task(result["task_id"])

    return engine


def planner(request: dict[str, Any], emit: Emit) -> Any:
    """The scripted lead-qualifier: look the lead up, then qualify it in one step (status,
    intro email, follow-up task), or disqualify it; then report."""
    messages = request["messages"]
    ask = next(m["content"] for m in reversed(messages) if m["role"] == "user")
    last = next(m for m in reversed(messages) if m["role"] != "system")
    email = re.search(r"[\w.]+@[\w.]+", ask)
    if last["role"] == "user":
        query = email.group(0) if email else (re.search(r"from (\w+)", ask) or re.search(r"(\w+)$", ask)).group(1)  # type: ignore[union-attr]
        return {"tool_calls": [{"id": f"find_{len(messages)}", "name": "search_leads", "arguments": {"query": query}}]}
    results = [r for m in messages[messages.index(last):] for r in m.get("results", [])]
    found = [r for r in results if r["name"] == "search_leads"]
    if found and last is messages[-1] and len(results) == len(found) and email:
        leads = found[-1]["envelope"].get("data") or []
        if not leads:
            return f"I found no lead {email.group(0)}."
        lead = leads[0]
        if "disqualify" in ask.lower():
            return {"tool_calls": [call("update_lead_status", lead_id=lead["id"], new_status="disqualified", reason=ask)]}
        return {
            "tool_calls": [
                call("update_lead_status", lead_id=lead["id"], new_status="qualified", reason=ask),
                call("send_email", to=lead["email"], subject=f"Welcome, {lead['name'].split()[0]}", body="Thanks for your time today.", lead_id=lead["id"]),
                call("create_follow_up_task", lead_id=lead["id"], title=f"Follow up with {lead['name']}"),
            ]
        }
    return report(results)


_ids = iter(range(1, 1_000_000))


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": f"c{next(_ids)}", "name": name, "arguments": arguments}


def report(results: list[dict[str, Any]]) -> str:
    """What happened, in the words the rep reads."""
    lines = []
    for r in results:
        env = r["envelope"]
        if env.get("ok"):
            if r["name"] == "search_leads":
                lines.append("Leads: " + ", ".join(f"{l['name']} ({l['status']}, {l['score']})" for l in env["data"]) + ".")
            else:
                lines.append(f"{r['name']}: done.")
        else:
            error = env.get("error", {})
            lines.append(f"{r['name']}: {error.get('code')}: {error.get('message')}")
    return " ".join(lines)


@dataclass
class Turn:
    """What one request of the rep ended with."""

    outcome: RunOutcome
    run_id: str | None


class LeadQualifier:
    """The agent, for one sales rep: a request may suspend on approvals; `wait_and_resume`
    waits for the manager's decisions (woken by them) and goes on."""

    def __init__(self, engine: tooljig.Engine, rep: dict[str, Any]) -> None:
        self.engine = engine
        self.rep = rep
        self.agent = Agent(engine, ModelClient(planner, name="lead-qualifier"), options={"atomic": True, "responder_tools": True})
        self.state: AgentState | None = None

    async def ask(self, text: str) -> Turn:
        self.state = AgentState(text)
        outcome = await self.agent.run(self.state, caller=self.rep)
        return Turn(outcome, await self._run_of(outcome))

    async def wait_and_resume(self, run_id: str, timeout_ms: int = 60_000) -> Turn:
        """Waits for the manager's decisions on the run (woken by them, from whichever
        process serves the inbox), then lets the agent go on."""
        assert self.state is not None
        if not await self.engine.wait_for_decisions(run_id, timeout_ms=timeout_ms):
            raise TimeoutError(f"no decision on run {run_id} within {timeout_ms} ms")
        outcome = await self.agent.resume(self.state, caller=self.rep)
        return Turn(outcome, await self._run_of(outcome))

    async def _run_of(self, outcome: RunOutcome) -> str | None:
        """The run a suspended turn waits in (its approval requests name it)."""
        for p in outcome.pending:
            if p.get("approval_id"):
                record = await self.engine.approval(p["approval_id"])
                if record is not None:
                    return str(record["run_id"])
        return None


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True)
