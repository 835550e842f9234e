"""The PostgreSQL state store from Python, against the real server: runs, approvals and
idempotency shared by separate engines (workers); a database that is down refuses calls
with the retryable ``unavailable`` code. Each test has its own schema, dropped after."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import tooljig

BASE = os.environ.get("TOOLJIG_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test")
ANA = {"principal": "ana", "tenant": "acme"}


def _psql(sql: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["psql", BASE, "-qAtc", sql], capture_output=True, text=True, timeout=30)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A URL whose ``?schema=`` is this test's own; the schema is dropped afterwards."""
    reachable = shutil.which("psql") is not None and _psql("SELECT 1").returncode == 0
    if not reachable:
        if os.environ.get("CI") == "true":
            pytest.fail(f"PostgreSQL at {BASE} is unreachable under CI=true")
        pytest.skip(f"PostgreSQL at {BASE} is unreachable (or psql is missing)")
    schema = f"tj_py_{uuid.uuid4().hex}"
    yield f"{BASE}?schema={schema}"
    _psql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def worker(url: str, runs: list[str]) -> tooljig.Engine:
    engine = tooljig.Engine(state_store=tooljig.PostgresStore(url))

    def pay(args: dict[str, Any]) -> dict[str, Any]:
        runs.append("pay")
        return {"paid": args["amount"]}

    def transfer(args: dict[str, Any]) -> dict[str, Any]:
        runs.append("transfer")
        return {"sent": args["to"]}

    engine.register("pay", "Pays.", None, pay, idempotency={"mode": "arguments"})
    engine.register("transfer", "Moves money.", None, transfer, approval={"required": "always"})
    return engine


def test_workers_share_runs_approvals_and_idempotency(postgres_url: str) -> None:
    runs: list[str] = []
    a, b = worker(postgres_url, runs), worker(postgres_url, runs)
    out = a.run_sync([{"id": "t", "tool": "transfer", "arguments": {"to": "bo"}}], caller=ANA)
    approval = out.get("t")["approval"]
    assert [p["id"] for p in b.pending_sync()] == [approval["id"]]
    b.approve_sync(approval["id"], arguments_hash=approval["arguments_hash"], approver=ANA)
    resumed = b.resume_sync(out.run_id)
    assert resumed.get("t").envelope == {"ok": True, "data": {"sent": "bo"}}

    first = a.run_sync([{"id": "p", "tool": "pay", "arguments": {"amount": 5}}], caller=ANA)
    again = b.run_sync([{"id": "p", "tool": "pay", "arguments": {"amount": 5}}], caller=ANA)
    assert again.get("p").replayed and again.get("p").envelope == first.get("p").envelope
    assert runs == ["transfer", "pay"]


def test_a_url_string_chooses_the_backend(postgres_url: str) -> None:
    runs: list[str] = []
    engine = tooljig.Engine(state_store=postgres_url)
    engine.register("pay", "Pays.", None, lambda args: runs.append("pay") or args, idempotency={"mode": "arguments"})
    engine.run_sync([{"id": "p", "tool": "pay", "arguments": {"n": 1}}], caller=ANA)
    assert engine.run_sync([{"id": "p", "tool": "pay", "arguments": {"n": 1}}], caller=ANA).get("p").replayed
    assert runs == ["pay"]
    with pytest.raises(tooljig.InvalidInputError, match="state_store"):
        tooljig.Engine(state_store="postgres://h/db?schema=a;drop")


def test_a_database_that_is_down_refuses_retryably_and_runs_nothing() -> None:
    runs: list[str] = []
    engine = worker("postgres://postgres@127.0.0.1:1/test?schema=down", runs)
    out = engine.run_sync([{"id": "p", "tool": "pay", "arguments": {"amount": 1}}], caller=ANA)
    error = out.get("p").envelope["error"]
    assert (error["code"], error["retryable"], error["reason"]) == ("unavailable", True, "store_unavailable")
    assert error["code"] == tooljig.ErrorCode.UNAVAILABLE
    assert runs == []
    with pytest.raises(tooljig.ToolError) as refused:
        engine.pending_sync()
    assert refused.value.code == "unavailable"


def test_workers_write_one_sealed_audit_chain(postgres_url: str) -> None:
    key = "hex:" + "ab" * 32
    workers = [tooljig.Engine(audit=tooljig.PostgresAudit(postgres_url), seal_key=key) for _ in range(3)]
    for w in workers:
        w.register("echo", "Echoes.", None, lambda args: args)
    for i in range(4):
        for n, w in enumerate(workers):
            w.run_sync([{"id": f"c{i}", "tool": "echo", "arguments": {"i": i}}], caller={"principal": f"p{n}"})
    assert workers[0].verify_audit() == {"records": 12, "broken": None}
    assert [r["seq"] for r in workers[1].audit_query()] == list(range(1, 13))
    assert len(workers[2].audit_query(principal="p1")) == 4
    # Cut the last record off behind tooljig's back: verify names where the log now ends.
    schema = postgres_url.split("schema=")[1]
    _psql(f'DELETE FROM "{schema}".tooljig_audit WHERE seq = 12')
    report = workers[0].verify_audit()
    assert report["broken"]["seq"] == 12 and "cut off" in report["broken"]["reason"]


DUPES = """
import asyncio, json, os, sys, tooljig

url, effects = sys.argv[1], sys.argv[2]
engine = tooljig.Engine(state_store=url)

async def pay(args):
    with open(effects, "a") as f:
        f.write(f"paid {os.getpid()}\\n")
    await asyncio.sleep(0.1)
    return {"paid": args["amount"]}

engine.register("pay", "Pays.", None, pay, idempotency={"mode": "arguments"})

async def main():
    calls = [engine.run([{"id": f"c{i}", "tool": "pay", "arguments": {"amount": 9}}], caller={"principal": "ana"})
             for i in range(50)]
    print(json.dumps([out.results[0].envelope for out in await asyncio.gather(*calls)]))

asyncio.run(main())
"""


def test_duplicates_from_three_python_processes_run_once(postgres_url: str, tmp_path: Any) -> None:
    import sys

    effects = tmp_path / "effects.txt"
    procs = [
        subprocess.Popen([sys.executable, "-c", DUPES, postgres_url, str(effects)], stdout=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    envelopes = []
    for p in procs:
        out, _ = p.communicate(timeout=120)
        assert p.returncode == 0
        envelopes += json.loads(out)
    assert len(envelopes) == 150 and all(e == {"ok": True, "data": {"paid": 9}} for e in envelopes)
    assert len(effects.read_text().splitlines()) == 1, "one execution in all"


async def test_a_run_is_cancelled_from_another_worker(postgres_url: str) -> None:
    import asyncio
    import time

    started: asyncio.Queue[str] = asyncio.Queue()
    a = tooljig.Engine(state_store=postgres_url)
    b = tooljig.Engine(state_store=postgres_url)

    async def hold(args: dict[str, Any], ctx: tooljig.ToolContext) -> str:
        await started.put(ctx.run_id)
        # The default lease beats every 5 s: only the wake-up through PostgreSQL stops it sooner.
        for _ in range(500):
            if ctx.cancelled:
                return "stopped"
            await asyncio.sleep(0.01)
        return "never stopped"

    a.register("hold", "Waits until cancelled.", None, hold)
    a.register("after", "Runs after hold.", None, lambda args: "ran")
    calls = [
        {"id": "h", "tool": "hold", "arguments": {}},
        {"id": "n", "tool": "after", "arguments": {}, "depends_on": ["h"]},
    ]
    running = asyncio.create_task(a.run(calls, caller=ANA))
    run_id = await asyncio.wait_for(started.get(), 10)
    asked = time.monotonic()
    assert await b.cancel_run(run_id, "the user left") is True
    out = await asyncio.wait_for(running, 10)
    assert time.monotonic() - asked < 1.0
    assert [r.envelope["error"]["code"] for r in out.results] == ["cancelled", "cancelled"]
    assert await b.cancel_run(run_id) is False
    with pytest.raises(tooljig.ToolError) as unknown:
        await b.cancel_run("no-such-run")
    assert unknown.value.code == "not_found"


def test_a_store_over_tls_checks_the_server_certificate(postgres_url: str) -> None:
    ssl, cert = (_psql(q).stdout.strip() for q in ("SHOW ssl", "SHOW ssl_cert_file"))
    if ssl != "on" or not os.path.exists(cert) or "127.0.0.1" not in postgres_url:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the PostgreSQL server serves no TLS (ssl = {ssl}, {cert}) under CI=true")
        pytest.skip("the PostgreSQL server serves no TLS here")
    app = f"tj_py_tls_{uuid.uuid4().hex}"
    secure = postgres_url.replace("127.0.0.1", "localhost") + f"&sslmode=verify-full&sslrootcert={cert}&application_name={app}"
    runs: list[str] = []
    out = worker(secure, runs).run_sync([{"id": "p", "tool": "pay", "arguments": {"amount": 5}}], caller=ANA)
    assert out.get("p")["envelope"] == {"ok": True, "data": {"paid": 5}}
    encrypted = _psql(
        "SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) "
        f"WHERE a.application_name = '{app}'"
    )
    assert encrypted.stdout.strip() == "t"
    # The certificate was issued to localhost: by address, verify-full refuses it.
    wrong = worker(postgres_url + f"&sslmode=verify-full&sslrootcert={cert}", runs)
    refused = wrong.run_sync([{"id": "p", "tool": "pay", "arguments": {"amount": 6}}], caller=ANA)
    assert refused.get("p")["envelope"]["error"]["code"] == "unavailable"
    assert runs == ["pay"]
    with pytest.raises(tooljig.InvalidInputError, match="sslmode=sometimes"):
        tooljig.Engine(state_store=tooljig.PostgresStore(postgres_url + "&sslmode=sometimes"))
