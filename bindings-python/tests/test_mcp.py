"""MCP both ways from Python, against the official Python SDK (`mcp`): its client calls
tooljig's server (guardrails, elicitation for approvals, the auth hook), and tooljig's client
runs its server's tools under the engine's policy."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

import tooljig

HERE = Path(__file__).parent


def served_engine(sent: list[str]) -> tooljig.Engine:
    engine = tooljig.Engine()

    @engine.tool(effect="read")
    def add(a: int, b: int) -> dict[str, int]:
        """Adds two integers."""
        return {"sum": a + b}

    @engine.tool(scopes=["admin"])
    def reset() -> str:
        """Resets everything."""
        return "reset"

    @engine.tool(effect="external", risk="high", approval={"required": "always"})
    async def send(to: str) -> dict[str, str]:
        """Sends a message."""
        sent.append(to)
        return {"sent_to": to}

    return engine


async def session_call(url: str, token: str, work: Any, elicit: Any = None) -> Any:
    http = create_mcp_http_client(headers={"authorization": f"Bearer {token}"})
    async with http, streamable_http_client(url, http_client=http) as (read, write, *_):
        async with ClientSession(read, write, elicitation_callback=elicit) as session:
            await session.initialize()
            return await work(session)


async def test_the_python_sdk_client_calls_tooljigs_server_under_its_guardrails() -> None:
    sent: list[str] = []
    engine = served_engine(sent)
    server = engine.serve_mcp(
        tokens={"ada-token": {"principal": "ada"}, "root-token": {"principal": "root", "scopes": ["admin"]}}
    )
    try:

        async def look(session: ClientSession) -> Any:
            tools = await session.list_tools()
            added = await session.call_tool("add", {"a": 2, "b": 3})
            reset = await session.call_tool("reset", {})
            return [t.name for t in tools.tools], added, reset

        names, added, reset = await session_call(server.url, "ada-token", look)
        assert sorted(names) == ["add", "send"], "the admin tool is not offered to ada"
        assert added.is_error is False and added.structured_content == {"sum": 5}
        assert reset.is_error is True and "scopes_missing" in reset.content[0].text

        async def admin(session: ClientSession) -> Any:
            return [t.name for t in (await session.list_tools()).tools]

        assert sorted(await session_call(server.url, "root-token", admin)) == ["add", "reset", "send"]

        async def approve(context: Any, params: Any) -> types.ElicitResult:
            assert "send" in params.message
            return types.ElicitResult(action="accept", content={"approve": True})

        async def decline(context: Any, params: Any) -> types.ElicitResult:
            return types.ElicitResult(action="decline")

        async def send(session: ClientSession) -> Any:
            return await session.call_tool("send", {"to": "grace"})

        approved = await session_call(server.url, "ada-token", send, approve)
        assert approved.is_error is False and approved.structured_content == {"sent_to": "grace"}
        declined = await session_call(server.url, "ada-token", send, decline)
        assert declined.is_error is True and "approval_rejected" in declined.content[0].text
        assert sent == ["grace"], "the declined call never ran"
    finally:
        await server.stop()


async def test_an_auth_hook_in_python_decides_who_calls() -> None:
    engine = tooljig.Engine()

    @engine.tool()
    def whoami(ctx: tooljig.ToolContext) -> dict[str, Any]:
        """Who calls."""
        return {"principal": ctx.caller.principal, "session": ctx.caller.session}

    seen: list[dict[str, Any]] = []

    async def auth(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        user = request["headers"].get("x-user")
        if user is None:
            raise PermissionError("who are you?")
        return {"principal": user}

    server = engine.serve_mcp(auth=auth)
    try:
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).encode()
        request = urllib.request.Request(
            server.url, body, {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        )
        import asyncio

        with pytest.raises(urllib.error.HTTPError) as refused:
            await asyncio.to_thread(urllib.request.urlopen, request)
        assert refused.value.code == 401
        assert "who are you?" in refused.value.read().decode()

        async def call(session: ClientSession) -> Any:
            return await session.call_tool("whoami", {})

        http = create_mcp_http_client(headers={"x-user": "lin"})
        async with http, streamable_http_client(server.url, http_client=http) as (read, write, *_):
            async with ClientSession(read, write) as session:
                await session.initialize()
                out = await call(session)
        assert out.structured_content["principal"] == "lin"
        assert out.structured_content["session"], "the MCP session is the caller's session"
        assert any(r["headers"].get("x-user") == "lin" for r in seen)
    finally:
        await server.stop()


async def test_an_mcp_clients_model_reads_the_tools_view_and_its_code_gets_the_data() -> None:
    engine = tooljig.Engine()
    rows = [{"title": t} for t in "abc"]

    @engine.tool(to_model_output=lambda data: {"count": len(data["rows"])})
    def search() -> dict[str, Any]:
        """Searches."""
        return {"rows": rows}

    @engine.tool(model_output_max_chars=10)
    def long() -> dict[str, str]:
        """Says a lot."""
        return {"text": "x" * 500}

    server = engine.serve_mcp(tokens={"ada-token": {"principal": "ada"}})
    try:

        async def both(session: ClientSession) -> Any:
            return await session.call_tool("search", {}), await session.call_tool("long", {})

        found, said = await session_call(server.url, "ada-token", both)
        assert found.structured_content == {"rows": rows}, "the data, whole"
        assert json.loads(found.content[0].text) == {"ok": True, "data": {"count": 3}}, "the view"
        assert said.structured_content == {"text": "x" * 500}
        assert "truncated by tooljig" in said.content[0].text and len(said.content[0].text) < 200
    finally:
        await server.stop()


async def test_tooljigs_client_runs_a_python_sdk_servers_tools_under_its_policy() -> None:
    engine = tooljig.Engine()
    client = await engine.connect_mcp(
        [sys.executable, str(HERE / "support" / "mcp_py_server.py")],
        prefix="py_",
        tools={"shout": {"scopes": ["loud"]}},
    )
    try:
        assert sorted(client.tools) == ["py_multiply", "py_shout"]
        out = await engine.run(
            [
                {"id": "1", "tool": "py_multiply", "arguments": {"a": 6, "b": 7}},
                {"id": "2", "tool": "py_shout", "arguments": {"text": "hi"}},
                {"id": "3", "tool": "py_multiply", "arguments": {"a": "six", "b": 7}},
            ]
        )
        assert out[0].envelope["ok"] is True
        assert json.dumps(out[0].envelope["data"]).find("42") >= 0
        assert out[1].envelope["error"]["code"] == "scopes_missing", "the app's policy applies"
        assert out[2].envelope["error"]["code"] == "invalid_arguments", "checked before it leaves"
        loud = await engine.run([{"tool": "py_shout", "arguments": {"text": "hi"}}], caller={"scopes": ["loud"]})
        assert "HI" in json.dumps(loud[0].envelope["data"])
    finally:
        await client.close()
    after = await engine.run([{"tool": "py_multiply", "arguments": {"a": 1, "b": 1}}])
    assert after[0].envelope["error"]["code"] == "unavailable"
    assert after[0].envelope["error"]["retryable"] is True


EXAMPLE = HERE.parents[1] / "examples" / "python" / "mcp_server.py"


def test_the_example_serves_and_calls_both_ways() -> None:
    import subprocess

    r = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    ada, bob = r.stdout.splitlines()
    assert ada.startswith("ada-token ['remote_add', 'remote_find_customer']") and '"found_by": "ada"' in ada
    assert bob == "bob-token ['remote_add'] [{\"ok\": true, \"data\": {\"sum\": 5}}]"


def children_running(name: str) -> list[str]:
    """Pids of this process's children whose command line names `name` (Linux: /proc)."""
    me = str(os.getpid())
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if stat.rsplit(")", 1)[-1].split()[1] == me and name.encode() in cmdline:
            found.append(pid)
    return found


@pytest.mark.skipif(sys.platform != "linux", reason="finds the server's process in /proc")
async def test_an_mcp_servers_tools_live_as_long_as_their_engine() -> None:
    # Servers other tests stopped may still be on their way out.
    others = set(children_running("mcp_py_server.py"))
    engine = tooljig.Engine()
    # The client's handle is not kept.
    await engine.connect_mcp([sys.executable, str(HERE / "support" / "mcp_py_server.py")], prefix="py_")
    gc.collect()
    out = await engine.run([{"tool": "py_multiply", "arguments": {"a": 6, "b": 7}}])
    assert out[0].envelope["ok"] is True, out[0].envelope
    started = set(children_running("mcp_py_server.py")) - others
    assert len(started) == 1, "the server was started as a child"
    del engine, out
    gc.collect()
    for _ in range(250):
        if not started & set(children_running("mcp_py_server.py")):
            break
        await asyncio.sleep(0.02)
    assert not started & set(children_running("mcp_py_server.py")), "it is stopped once the engine is gone"


async def test_a_python_engine_served_over_stdio_is_reached_by_tooljigs_client() -> None:
    engine = tooljig.Engine()
    client = await engine.connect_mcp([sys.executable, str(EXAMPLE), "--stdio"], prefix="ex_")
    try:
        out = await engine.run([{"tool": "ex_find_customer", "arguments": {"name": "Acme"}}])
        assert out[0].envelope == {"ok": True, "data": {"name": "Acme", "found_by": "local-user"}}
    finally:
        await client.close()


async def test_a_command_that_is_no_mcp_server_fails_to_connect_clearly() -> None:
    engine = tooljig.Engine()
    with pytest.raises(tooljig.ToolError) as refused:
        await engine.connect_mcp([sys.executable, "-c", "print('hello'); import time; time.sleep(30)"], connect_timeout_ms=500)
    assert refused.value.code == "unavailable"
    assert "did not initialize" in str(refused.value)
