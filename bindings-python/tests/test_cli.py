"""The ``tooljig`` command line shipped with the package (``python -m tooljig``, the
``tooljig`` console script): the same commands as the Rust binary, on a store a Python app
wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tooljig


def tooljig_cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TOOLJIG_STORE": f"sqlite://{tmp / 'store.db'}", "TOOLJIG_AUDIT": f"sqlite://{tmp / 'audit.db'}"}
    return subprocess.run([sys.executable, "-m", "tooljig", *args], capture_output=True, text=True, env=env, timeout=60)


async def test_an_operator_approves_what_a_python_app_asked(tmp_path: Path) -> None:
    engine = tooljig.Engine(state_store=f"sqlite://{tmp_path / 'store.db'}", audit=f"sqlite://{tmp_path / 'audit.db'}")
    sent: list[str] = []

    @engine.tool(risk="high", approval={"required": "always"})
    def send_email(to: str) -> str:
        """Sends an email."""
        sent.append(to)
        return f"sent to {to}"

    out = await engine.run([{"id": "a", "tool": "send_email", "arguments": {"to": "ada@example.com"}}], caller={"principal": "alice"})
    assert out[0].status == "pending_approval"

    pending = tooljig_cli(tmp_path, "pending", "--json")
    assert pending.returncode == 0, pending.stderr
    [request] = json.loads(pending.stdout)
    refused = tooljig_cli(tmp_path, "approve", request["id"], "--as", "mallory")
    assert refused.returncode == 1 and refused.stderr.startswith("tooljig: error: ") and "not_an_approver" in refused.stderr
    approved = tooljig_cli(tmp_path, "approve", request["id"], "--as", "alice", "--hash", request["arguments_hash"], "--json")
    assert approved.returncode == 0, approved.stderr
    assert json.loads(approved.stdout)["status"] == "approved"

    resumed = await engine.resume(out.run_id)
    assert resumed[0].envelope == {"ok": True, "data": "sent to ada@example.com"}
    assert sent == ["ada@example.com"]
    verify = tooljig_cli(tmp_path, "audit", "verify")
    assert verify.returncode == 0 and verify.stdout.startswith("intact:"), verify.stderr
    assert tooljig_cli(tmp_path, "nonsense").returncode == 2


async def test_the_inbox_started_from_python_decides_as_the_operator(tmp_path: Path) -> None:
    import asyncio
    import re
    import urllib.error
    import urllib.parse
    import urllib.request

    engine = tooljig.Engine(state_store=f"sqlite://{tmp_path / 'store.db'}")

    @engine.tool(risk="high", approval={"required": "always"})
    def wire(amount: int) -> str:
        """Sends money."""
        return f"sent {amount}"

    out = await engine.run([{"id": "w", "tool": "wire", "arguments": {"amount": 100}}], caller={"principal": "alice"})
    with pytest.raises(tooljig.InvalidInputError):
        engine.serve_inbox(tokens={})
    server = engine.serve_inbox(tokens={"alice-token": {"principal": "alice"}})
    try:

        def fetch(path: str, data: dict[str, str] | None = None, token: str = "alice-token") -> tuple[int, str]:
            body = urllib.parse.urlencode(data).encode() if data is not None else None
            request = urllib.request.Request(server.url.rstrip("/") + path, body, {"authorization": f"Bearer {token}"})
            try:
                with urllib.request.urlopen(request) as response:
                    return response.status, response.read().decode()
            except urllib.error.HTTPError as e:
                return e.code, e.read().decode()

        assert (await asyncio.to_thread(fetch, "/", None, "nobody"))[0] == 401
        status, page = await asyncio.to_thread(fetch, "/")
        assert status == 200 and "wire" in page
        csrf = re.search(r'name=csrf value="([^"]+)"', page)
        hash_ = re.search(r'name=hash value="([^"]+)"', page)
        approval = re.search(r'name=id value="([^"]+)"', page)
        assert csrf and hash_ and approval
        form = {"id": approval[1], "hash": hash_[1], "csrf": csrf[1], "decision": "approve"}
        status, _ = await asyncio.to_thread(fetch, "/decide", form)
        assert status == 200  # the redirect back to the inbox, followed
        resumed = await engine.resume(out.run_id)
        assert resumed[0].envelope == {"ok": True, "data": "sent 100"}
    finally:
        server.stop()


async def test_the_inbox_asks_the_apps_async_auth_hook(tmp_path: Path) -> None:
    import asyncio
    import urllib.error
    import urllib.request

    engine = tooljig.Engine(state_store=f"sqlite://{tmp_path / 'store.db'}")
    seen: list[str] = []

    async def auth(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request["path"])
        who = request["headers"].get("x-operator")
        if who is None or who == "mallory":
            raise PermissionError("not an operator")
        return {"principal": who}

    with pytest.raises(tooljig.InvalidInputError):
        engine.serve_inbox(auth="nope")  # type: ignore[arg-type]
    server = engine.serve_inbox(auth=auth)
    try:

        def fetch(who: str) -> tuple[int, str]:
            request = urllib.request.Request(server.url, headers={"x-operator": who})
            try:
                with urllib.request.urlopen(request) as response:
                    return response.status, response.read().decode()
            except urllib.error.HTTPError as e:
                return e.code, e.read().decode()

        status, page = await asyncio.to_thread(fetch, "grace")
        assert status == 200 and "Signed in as <b>grace</b>" in page
        status, page = await asyncio.to_thread(fetch, "mallory")
        assert status == 401 and "not an operator" in page
        assert seen == ["/", "/"]
    finally:
        server.stop()


async def test_a_run_is_resumed_and_rolled_back_from_the_inbox_by_a_python_worker(tmp_path: Path) -> None:
    import asyncio
    import re
    import urllib.error
    import urllib.parse
    import urllib.request

    engine = tooljig.Engine(state_store=f"sqlite://{tmp_path / 'store.db'}")
    moved: list[int] = []

    @engine.tool(risk="high", approval={"required": "always"})
    async def transfer(amount: int) -> str:
        """Moves money."""
        moved.append(amount)
        return f"t-{amount}"

    async def reverse(undo: dict[str, Any]) -> str:
        return f"reversed {undo['result']}"

    engine.compensate_with("transfer", reverse)
    out = await engine.run([{"id": "t", "tool": "transfer", "arguments": {"amount": 7}}], caller={"principal": "ada"})
    [pending] = await engine.pending_approvals()
    await engine.approve(pending["id"], arguments_hash=pending["arguments_hash"], approver={"principal": "ada"})
    server = engine.serve_inbox(tokens={"ada-token": {"principal": "ada"}})
    worker = asyncio.create_task(engine.serve_operator_requests(worker="py-worker"))
    try:

        def fetch(path: str, data: dict[str, str] | None = None) -> tuple[int, str]:
            body = urllib.parse.urlencode(data).encode() if data is not None else None
            request = urllib.request.Request(server.url.rstrip("/") + path, body, {"authorization": "Bearer ada-token"})
            try:
                with urllib.request.urlopen(request) as response:
                    return response.status, response.read().decode()
            except urllib.error.HTTPError as e:
                return e.code, e.read().decode()

        status, page = await asyncio.to_thread(fetch, f"/runs/{out.run_id}")
        csrf = re.search(r'name=csrf value="([^"]+)"', page)
        assert status == 200 and csrf and 'id="operate"' in page, page
        operate = f"/runs/{out.run_id}/operate"
        status, done = await asyncio.to_thread(fetch, operate, {"csrf": csrf[1], "action": "resume"})
        assert status == 200 and "resumed by worker <b>py-worker</b>" in done, done
        assert moved == [7]
        status, done = await asyncio.to_thread(fetch, operate, {"csrf": csrf[1], "action": "rollback"})
        assert status == 200 and "<td>compensated" in done, done
        status, _ = await asyncio.to_thread(fetch, operate, {"csrf": "forged", "action": "rollback"})
        assert status == 403
    finally:
        worker.cancel()
        with pytest.raises(asyncio.CancelledError):
            await worker
        server.stop()


async def test_the_command_line_resumes_and_rolls_back_through_a_python_worker(tmp_path: Path) -> None:
    import asyncio

    engine = tooljig.Engine(state_store=f"sqlite://{tmp_path / 'store.db'}")
    moved: list[int] = []
    undone: list[Any] = []

    @engine.tool(risk="high", approval={"required": "always"})
    async def transfer(amount: int) -> dict[str, str]:
        """Moves money (async: it runs on this loop when a worker resumes the run)."""
        moved.append(amount)
        return {"transfer": f"t-{amount}"}

    async def reverse(undo: dict[str, Any]) -> dict[str, bool]:
        undone.append(undo["result"])
        return {"reversed": True}

    engine.compensate_with("transfer", reverse)
    out = await engine.run([{"id": "t", "tool": "transfer", "arguments": {"amount": 40}}], caller={"principal": "ada"})
    [pending] = await engine.pending_approvals()
    await engine.approve(pending["id"], arguments_hash=pending["arguments_hash"], approver={"principal": "ada"})

    async def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return await asyncio.to_thread(tooljig_cli, tmp_path, *args)

    # Nobody serves operator requests yet: the command gives up, and the request is withdrawn.
    alone = await cli("resume", out.run_id, "--wait-ms", "300")
    assert alone.returncode == 1 and "no app worker took request" in alone.stderr, alone.stderr
    asked = await engine.ask_operator("resume", out.run_id, asked_by="olga")
    assert asked["state"] == "queued"
    assert (await engine.wait_operator_request(asked["id"], timeout_ms=200))["state"] == "queued"
    assert await engine.operator_request(asked["id"]) is None
    assert moved == []
    with pytest.raises(tooljig.ToolError) as unknown:
        await engine.ask_operator("resume", "no-such-run")
    assert unknown.value.code == "not_found"

    worker = asyncio.create_task(engine.serve_operator_requests(worker="py-worker"))
    try:
        resumed = await cli("resume", out.run_id, "--as", "olga", "--json")
        assert resumed.returncode == 0, resumed.stderr
        answer = json.loads(resumed.stdout)
        assert answer["state"] == "answered" and answer["worker"] == "py-worker", answer
        assert answer["result"]["results"][0]["envelope"] == {"ok": True, "data": {"transfer": "t-40"}}
        assert moved == [40]
        rolled = await cli("rollback", out.run_id)
        assert rolled.returncode == 0, rolled.stderr
        assert "rolled back by worker py-worker" in rolled.stdout and "compensated" in rolled.stdout
        assert undone == [{"transfer": "t-40"}]
    finally:
        worker.cancel()
        with pytest.raises(asyncio.CancelledError):
            await worker
