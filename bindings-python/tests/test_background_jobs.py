"""Long-running tools from Python: a handler returns (or raises) ``Accepted(job)``, the call is
``pending_job`` until the app reports how the job ended (here from another OS process on the
same SQLite store), then the run resumes; status queries, refusals and the expiry."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import tooljig
from conftest import run_python

VIDEO = {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}


def render_engine(runs: list[str], **options: Any) -> tooljig.Engine:
    """`render` accepts a job named by its id (raising for odd ids, returning otherwise);
    `publish` echoes what it gets."""
    engine = tooljig.Engine(**options)

    async def render(args: dict[str, Any]) -> Any:
        runs.append(args["id"])
        if args["id"].startswith("raise"):
            raise tooljig.Accepted(f"render-{args['id']}")
        return tooljig.Accepted(f"render-{args['id']}")

    engine.register(
        "render",
        "Renders a video in the background.",
        {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        render,
        output_schema=VIDEO,
    )
    engine.register("publish", "Publishes.", None, lambda args: args)
    return engine


def calls(video: str) -> list[dict[str, Any]]:
    return [
        {"id": "r", "tool": "render", "arguments": {"id": video}},
        {"id": "p", "tool": "publish", "arguments": {"url": {"$from": "r", "pointer": "/url"}}},
    ]


def test_a_job_reported_by_another_process_resumes_the_run(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    runs: list[str] = []
    engine = render_engine(runs, state_store=tooljig.SqliteStore(db))
    out = engine.run_sync(calls("v1"))
    r = out.get("r")
    assert r.status == "pending_job" and r.error_code == "pending_job"
    assert r.envelope["error"]["job"] == "render-v1"
    assert out.get("p").status == "waiting"
    assert engine.pending_external_sync(out.run_id) == [], "nobody is asked to run a job"
    status = engine.job_status_sync("render-v1")
    assert status is not None and status["state"] == "pending"
    assert (status["run_id"], status["call_id"], status["tool"]) == (out.run_id, "r", "render")

    # The worker that ran the job: another process, its own engine on the same file.
    worker = run_python(
        f"""
        import json, tooljig
        engine = tooljig.Engine(state_store=tooljig.SqliteStore({str(db)!r}))
        engine.register("render", "", None, lambda a: None,
                        output_schema={json.dumps(VIDEO)})
        try:
            engine.complete_job_sync("render-v1", {{"url": 3}})
        except tooljig.ToolError as e:
            print("refused", e.code.value, e.details["reason"])
        done = engine.complete_job_sync("render-v1", {{"url": "https://v/1.mp4"}})
        print(json.dumps(done))
        """
    )
    assert worker.returncode == 0, worker.stderr
    lines = worker.stdout.strip().splitlines()
    assert lines[0] == "refused invalid_output invalid_result"
    done = json.loads(lines[1])
    assert done["state"] == "completed" and done["run_id"] == out.run_id

    resumed = engine.resume_sync(out.run_id)
    assert resumed.get("r").envelope == {"ok": True, "data": {"url": "https://v/1.mp4"}}
    assert resumed.get("p").envelope == {"ok": True, "data": {"url": "https://v/1.mp4"}}
    assert runs == ["v1"], "the handler ran once"
    with pytest.raises(tooljig.ToolError) as twice:
        engine.complete_job_sync("render-v1", {"url": "x"})
    assert twice.value.details["reason"] == "duplicate"


async def test_a_raised_accepted_and_a_failed_job() -> None:
    runs: list[str] = []
    engine = render_engine(runs)
    out = await engine.run(calls("raise-1"))
    assert out.get("r").status == "pending_job"
    failed = await engine.complete_job("render-raise-1", error=tooljig.ToolError("external_api_error", "encoder crashed"))
    assert failed["state"] == "failed"
    resumed = await engine.resume(out.run_id)
    assert resumed.get("r").error_code == "external_api_error"
    assert resumed.get("p").status == "done" and not resumed.get("p").ok
    with pytest.raises(tooljig.ToolError) as unknown:
        await engine.complete_job("render-nope", {"url": "u"})
    assert unknown.value.code.value == "not_found" and unknown.value.details["reason"] == "unknown_job"
    assert await engine.job_status("render-nope") is None
    with pytest.raises(TypeError):
        await engine.complete_job("render-raise-1")
    with pytest.raises(TypeError):
        tooljig.Accepted("")


async def test_a_job_not_reported_before_its_expiry_times_out() -> None:
    engine = tooljig.Engine()
    engine.register("render", "", None, lambda a: tooljig.Accepted("slow"), job_expiry_ms=100)
    out = await engine.run([{"id": "r", "tool": "render", "arguments": {}}])
    assert out.get("r").status == "pending_job"
    await asyncio.sleep(0.15)
    status = await engine.job_status("slow")
    assert status is not None and status["state"] == "expired"
    with pytest.raises(tooljig.ToolError) as late:
        await engine.complete_job("slow", {})
    assert late.value.details["reason"] == "late"
    resumed = await engine.resume(out.run_id)
    assert resumed.get("r").error_code == "timeout"
