"""Rate limits and the result cache shared through Redis, from Python, against the real
server and a Redis Cluster (``redis+cluster://``): two engines (workers) share one budget
and one cache; Redis unreachable fails the limited call closed (``unavailable``). Each test
has its own key prefix, deleted after, or its own cluster, stopped after."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import tooljig

BASE = os.environ.get("TOOLJIG_REDIS_URL", "redis://127.0.0.1:6379")
ANA = {"principal": "ana"}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["redis-cli", "-u", BASE, *args], capture_output=True, text=True, timeout=30)


SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "scripts", "redis-cluster.sh")


def _cluster(tmp: str) -> str:
    """A Redis Cluster of the test's own (three masters, ``scripts/redis-cluster.sh``)."""
    started = subprocess.run(["bash", SCRIPT, "start", tmp], capture_output=True, text=True, timeout=120)
    if started.returncode == 3:
        if os.environ.get("CI") == "true":
            pytest.fail(f"no Redis Cluster under CI=true: {started.stderr.strip()}")
        pytest.skip(f"no Redis Cluster here: {started.stderr.strip()}")
    assert started.returncode == 0, started.stderr
    return started.stdout.strip()


@pytest.fixture(params=["server", "cluster"])
def redis_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A URL whose ``?prefix=`` is this test's own, on the test server (its keys deleted
    afterwards) or on a Redis Cluster of the test's own (stopped afterwards)."""
    prefix = f"tj_py_{uuid.uuid4().hex}:"
    if request.param == "cluster":
        where = str(tmp_path_factory.mktemp("cluster") / "nodes")
        base = _cluster(where)
        yield f"{base}?prefix={prefix}"
        subprocess.run(["bash", SCRIPT, "stop", where], timeout=60)
        return
    reachable = shutil.which("redis-cli") is not None and _cli("PING").stdout.strip() == "PONG"
    if not reachable:
        if os.environ.get("CI") == "true":
            pytest.fail(f"Redis at {BASE} is unreachable under CI=true")
        pytest.skip(f"Redis at {BASE} is unreachable (or redis-cli is missing)")
    yield f"{BASE}?prefix={prefix}"
    keys = _cli("--scan", "--pattern", f"{prefix}*").stdout.split()
    if keys:
        _cli("DEL", *keys)


def worker(url: str, runs: list[str]) -> tooljig.Engine:
    engine = tooljig.Engine(rate_limiter=url, result_cache=url)

    def ping(args: dict[str, Any]) -> str:
        runs.append("ping")
        return "pong"

    def lookup(args: dict[str, Any]) -> dict[str, Any]:
        runs.append("lookup")
        return {"q": args["q"]}

    engine.register("ping", "Pings.", None, ping, rate_limits=[{"max": 3, "per_ms": 60_000}])
    engine.register("lookup", "Looks up.", None, lookup, effect="read", cache={"ttl_ms": 60_000})
    return engine


def test_workers_share_a_budget_and_a_cache(redis_url: str) -> None:
    runs: list[str] = []
    a, b = worker(redis_url, runs), worker(redis_url, runs)
    calls = [{"id": f"p{i}", "tool": "ping", "arguments": {}} for i in range(2)]
    codes = [r.error_code for e in (a, b) for r in e.run_sync(calls, caller=ANA).results]
    assert codes.count(None) == 3 and codes.count("rate_limited") == 1, codes
    a.run_sync([{"id": "l", "tool": "lookup", "arguments": {"q": "x"}}], caller=ANA)
    hit = b.run_sync([{"id": "l", "tool": "lookup", "arguments": {"q": "x"}}], caller=ANA).get("l")
    assert hit.cached and hit.envelope == {"ok": True, "data": {"q": "x"}}
    assert runs.count("lookup") == 1


def test_redis_unreachable_fails_limited_calls_closed() -> None:
    runs: list[str] = []
    engine = worker("redis://127.0.0.1:1", runs)
    out = engine.run_sync([{"id": "p", "tool": "ping", "arguments": {}}], caller=ANA)
    error = out.get("p").envelope["error"]
    assert (error["code"], error["retryable"], error["reason"]) == ("unavailable", True, "limiter_unavailable")
    assert runs == []


def test_a_run_kept_in_redis_is_resumed_by_another_worker(redis_url: str) -> None:
    sent: list[str] = []

    def mail(url: str) -> tooljig.Engine:
        engine = tooljig.Engine(state_store=tooljig.RedisStore(url))
        engine.register("send", "Sends.", None, lambda a: sent.append(a["to"]) or a, approval={"required": "always"})
        return engine

    a, b = mail(redis_url), mail(redis_url)
    out = a.run_sync([{"id": "m", "tool": "send", "arguments": {"to": "bo"}}], caller=ANA)
    approval = out.get("m")["approval"]
    assert [p["id"] for p in b.pending_sync()] == [approval["id"]]
    b.approve_sync(approval["id"], arguments_hash=approval["arguments_hash"], approver=ANA)
    assert b.resume_sync(out.run_id).get("m").envelope == {"ok": True, "data": {"to": "bo"}}
    assert a.resume_sync(out.run_id).get("m").envelope == {"ok": True, "data": {"to": "bo"}}
    assert sent == ["bo"]


async def test_a_worker_waiting_for_decisions_is_woken_by_another(redis_url: str) -> None:
    def mail() -> tooljig.Engine:
        engine = tooljig.Engine(state_store=tooljig.RedisStore(redis_url))
        engine.register("send", "Sends.", None, lambda a: a, approval={"required": "always"})
        return engine

    agent, inbox = mail(), mail()
    out = await agent.run([{"id": "m", "tool": "send", "arguments": {"to": "bo"}}], caller=ANA)
    assert out.run_id is not None
    assert not await agent.wait_for_decisions(out.run_id, timeout_ms=50)
    waiting = asyncio.create_task(agent.wait_for_decisions(out.run_id, timeout_ms=20_000))
    await asyncio.sleep(0.1)
    approval = out.get("m")["approval"]
    await inbox.approve(approval["id"], arguments_hash=approval["arguments_hash"], approver=ANA)
    assert await asyncio.wait_for(waiting, timeout=1.5), "woken by the decision, not at the timeout"
    assert (await agent.resume(out.run_id)).get("m").envelope == {"ok": True, "data": {"to": "bo"}}
