"""The agent loop through the binding: Python models (async and sync) over Python tools,
multi-round with parallel calls, needs → question → answer, the step limit's final answer,
streamed events, fallbacks, saved state, and the HTTP client against a local server."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tooljig
from tooljig.agent import (
    Agent,
    AgentState,
    Emit,
    FallbackChain,
    HttpModel,
    ModelClient,
    ModelError,
    ScriptedModel,
)
from tooljig.stream import UiMessageStream
from support.corpora import corpus


def travel_engine(log: list[str]) -> tooljig.Engine:
    engine = tooljig.Engine()

    @engine.tool
    async def get_weather(city: str) -> dict[str, Any]:
        """Weather for a city."""
        log.append(f"weather:{city}")
        await asyncio.sleep(0.01)
        return {"city": city, "temp_c": {"Oslo": 4, "Rome": 19}.get(city, 10)}

    @engine.tool
    def schedule_meeting(person: str, duration_min: int | None = None) -> dict[str, Any]:
        """Schedules a meeting."""
        if duration_min is None:
            raise tooljig.Needs("duration_min")
        log.append(f"meeting:{person}:{duration_min}")
        return {"scheduled": True, "person": person, "duration_min": duration_min}

    return engine


def last_tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    tools = [m for m in request["messages"] if m["role"] == "tool"]
    return tools[-1]["results"] if tools else []


def test_multi_round_with_parallel_calls_and_an_async_python_model() -> None:
    log: list[str] = []
    requests: list[dict[str, Any]] = []

    async def model(request: dict[str, Any], emit: Emit) -> Any:
        requests.append(request)
        await asyncio.sleep(0)
        round_ = sum(1 for m in request["messages"] if m["role"] == "assistant")
        if round_ == 0:
            return {
                "tool_calls": [
                    {"id": "c1", "name": "get_weather", "arguments": '{"city": "Oslo"}'},
                    {"id": "c2", "name": "get_weather", "arguments": {"city": "Rome"}},
                ]
            }
        if round_ == 1:
            temps = {
                r["envelope"]["data"]["city"]: r["envelope"]["data"]["temp_c"]
                for r in last_tool_results(request)
            }
            warmer = max(temps, key=lambda c: temps[c])
            return {
                "tool_calls": [
                    {
                        "id": "c3",
                        "name": "schedule_meeting",
                        "arguments": {"person": warmer, "duration_min": 30},
                    }
                ]
            }
        return f"Met in the warmer city: {last_tool_results(request)[0]['envelope']['data']['person']}."

    agent = Agent(travel_engine(log), ModelClient(model), options={"system": "Be brief."})
    state = AgentState("Which city is warmer? Meet there.")
    out = agent.run_sync(state)
    assert (out.status, out.reason) == ("finished", "answered")
    assert out.answer == "Met in the warmer city: Rome."
    assert sorted(log[:2]) == ["weather:Oslo", "weather:Rome"]
    assert log[2] == "meeting:Rome:30"
    assert out.counters["tool_calls"] == 3 and out.counters["tool_successes"] == 3
    assert requests[0]["tools"] and requests[0]["messages"][0] == {
        "role": "system",
        "content": "Be brief.",
    }
    # The state was updated in place: the whole conversation, results in call order.
    roles = [m["role"] for m in state.messages]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "assistant"]
    assert [r["call_id"] for r in state.messages[2]["results"]] == ["c1", "c2"]
    assert state.answer == out.answer


def test_needs_becomes_a_question_and_the_answer_continues_the_run() -> None:
    log: list[str] = []

    def model(request: dict[str, Any], emit: Emit) -> Any:
        # A sync model (an SDK that blocks): it runs on a worker thread.
        users = [m["content"] for m in request["messages"] if m["role"] == "user"]
        results = last_tool_results(request)
        if (
            results
            and results[-1]["envelope"].get("ok")
            and request["messages"][-1]["role"] == "tool"
        ):
            return "Scheduled 45 minutes with Dana."
        if len(users) == 1:
            return {
                "tool_calls": [
                    {"id": "m1", "name": "schedule_meeting", "arguments": {"person": "Dana"}}
                ]
            }
        return {
            "tool_calls": [
                {
                    "id": "m2",
                    "name": "schedule_meeting",
                    "arguments": {"person": "Dana", "duration_min": 45},
                }
            ]
        }

    agent = Agent(travel_engine(log), ModelClient(model, name="planner"))
    state = AgentState("Set a meeting with Dana")
    out = agent.run_sync(state)
    assert out.status == "needs_input"
    assert out.needs[0]["tool"] == "schedule_meeting" and out.needs[0]["fields"] == ["duration_min"]
    assert out.answer.endswith("?")
    assert log == []
    # The run survives a trip through JSON, as a web app would store it between requests.
    state = AgentState.from_json(state.to_json())
    out = agent.send_sync(state, "45 minutes")
    assert (out.status, out.reason) == ("finished", "answered")
    assert log == ["meeting:Dana:45"]
    assert out.answer == "Scheduled 45 minutes with Dana."
    assert out.counters["needs_loops"] >= 1


def test_a_model_that_never_stops_gets_a_final_answer_at_the_step_limit() -> None:
    log: list[str] = []
    offered: list[bool] = []

    def looper(request: dict[str, Any], emit: Emit) -> Any:
        tools_allowed = bool(request["tools"]) and request["tool_choice"] != "none"
        offered.append(tools_allowed)
        if tools_allowed:
            n = len(offered)
            return {
                "tool_calls": [
                    {"id": f"w{n}", "name": "get_weather", "arguments": {"city": "Oslo"}}
                ]
            }
        return "I checked Oslo's weather several times: 4°C."

    model = ModelClient(looper)
    agent = Agent(travel_engine(log), model, options={"limits": {"max_steps": 3}})
    out = agent.run_sync(AgentState("Weather?"))
    assert (out.status, out.reason) == ("finished", "step_limit")
    assert out.answer == "I checked Oslo's weather several times: 4°C."
    assert offered[-1] is False and offered[:3] == [True, True, True]
    assert len(log) == 3
    assert out.counters["steps"] <= 3
    with pytest.raises(tooljig.InvalidInputError, match="unknown field"):
        Agent(travel_engine(log), model, options={"limits": {"max_stepz": 1}})


def test_events_stream_as_they_happen_and_serve_the_ui_stream() -> None:
    log: list[str] = []
    model = ScriptedModel(
        "m",
        [
            {"tool_calls": [{"id": "c1", "name": "get_weather", "arguments": '{"city": "Oslo"}'}]},
            "It is 4°C in Oslo.",
        ],
        streaming=True,
    )
    agent = Agent(travel_engine(log), model)

    async def main() -> tuple[list[dict[str, Any]], tooljig.RunOutcome]:
        stream = agent.stream(AgentState(), "Weather in Oslo?")
        events = [e async for e in stream]
        return events, stream.outcome

    events, outcome = asyncio.run(main())
    types = [e["type"] for e in events]
    assert types[0] == "start" and types[-1] == "finish"
    assert (
        types.index("tool_input_available")
        < types.index("tool_output_available")
        < types.index("text_delta")
    )
    assert "".join(e["delta"] for e in events if e["type"] == "text_delta") == "It is 4°C in Oslo."
    assert outcome.answer == "It is 4°C in Oslo."
    ui = UiMessageStream("msg")
    body = "".join(ui.encode(e) for e in events) + ui.done()
    assert '"type":"tool-output-available"' in body and body.endswith("data: [DONE]\n\n")


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_a_python_model_can_stream_through_emit(kind: str) -> None:
    async def async_model(request: dict[str, Any], emit: Emit) -> Any:
        assert emit.streaming and request["stream"]
        for piece in ("Hel", "lo"):
            emit({"type": "text_delta", "delta": piece})
        return "Hello"

    def sync_model(request: dict[str, Any], emit: Emit) -> Any:
        # On a worker thread: emitting from there is safe too.
        assert threading.current_thread() is not threading.main_thread()
        for piece in ("Hel", "lo"):
            emit({"type": "text_delta", "delta": piece})
        with pytest.raises(tooljig.InvalidInputError, match="stream event"):
            emit({"type": "nonsense"})
        return "Hello"

    model = ModelClient(async_model if kind == "async" else sync_model)
    agent = Agent(tooljig.Engine(), model, options={"mode": "talk_first"})

    async def main() -> list[dict[str, Any]]:
        return [e async for e in agent.stream(AgentState(), "hi")]

    deltas = [e["delta"] for e in asyncio.run(main()) if e["type"] == "text_delta"]
    assert "".join(deltas) == "Hello"


def test_fallback_moves_on_after_model_errors_and_a_failing_model_still_answers() -> None:
    calls = {"n": 0}

    def flaky(request: dict[str, Any], emit: Emit) -> Any:
        calls["n"] += 1
        raise ModelError("server", "overloaded", status=529)

    backup = ScriptedModel("backup", ["From the backup."])
    chain = FallbackChain(
        [ModelClient(flaky, name="flaky"), backup], threshold=1, cooldown_ms=60_000
    )
    out = Agent(tooljig.Engine(), chain).run_sync(AgentState("hi"))
    assert out.answer == "From the backup."
    assert calls["n"] == 1
    breakers = chain.breakers()
    assert breakers[0]["model"] == "flaky" and breakers[0]["state"] == "open"

    def broken(request: dict[str, Any], emit: Emit) -> Any:
        raise RuntimeError("the SDK blew up")

    out = Agent(tooljig.Engine(), ModelClient(broken)).run_sync(AgentState("hi"))
    assert (out.status, out.reason) == ("finished", "model_failed")
    assert out.counters["model_failures"] >= 1


def test_misuse_is_a_clear_error() -> None:
    agent = Agent(tooljig.Engine(), ScriptedModel("m", ["ok"]))
    with pytest.raises(tooljig.InvalidInputError, match="not suspended"):
        agent.resume_with_results_sync(AgentState("hi"), [])
    with pytest.raises(tooljig.InvalidInputError):
        AgentState.from_json("{broken")
    with pytest.raises(ValueError, match="unknown model error kind"):
        ModelError("teapot", "no")

    async def in_loop() -> None:
        with pytest.raises(RuntimeError, match="cannot be called from a running event loop"):
            agent.run_sync(AgentState("hi"))

    asyncio.run(in_loop())


# --- the HTTP client against a local server replaying a recorded stream ------------------


#: The replay server's URL, the bodies it received, the bodies it will answer with, and the
#: headers it received (names lowercased).
Replay = tuple[str, list[dict[str, Any]], list[bytes], list[dict[str, str]]]


@pytest.fixture
def replay_server() -> Iterator[Replay]:
    """A local Chat Completions endpoint: answers each POST with the next queued body (SSE
    bytes, or a 429 first when queued as b"429")."""
    bodies: list[bytes] = []
    seen: list[dict[str, Any]] = []
    heard: list[dict[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            length = int(self.headers.get("content-length", "0"))
            heard.append({k.lower(): v for k, v in self.headers.items()})
            seen.append(json.loads(self.rfile.read(length)))
            body = bodies.pop(0)
            if body == b"429":
                self.send_response(429)
                self.send_header("retry-after-ms", "10")
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"{}")
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen, bodies, heard
    finally:
        server.shutdown()
        server.server_close()


def test_http_model_replays_a_recorded_stream_after_a_429(
    replay_server: Replay,
) -> None:
    url, seen, bodies, _ = replay_server
    recorded = None
    for path in sorted(corpus("wire/openai-chat-sse").glob("*.bin")):
        data = path.read_bytes()
        try:
            _, turn = tooljig.stream.parse_stream("openai_chat", data)
        except tooljig.ProviderError:
            continue
        if turn["content"] and not turn["tool_calls"]:
            recorded = (data, turn["content"])
            break
    if recorded is None:
        pytest.skip("no recorded text-only Chat Completions stream in this corpus sample")
    data, text = recorded
    bodies.extend([b"429", data])
    model = HttpModel.openai_compatible(
        "gpt-test", base_url=url, api_key="test-key", max_retries=2, initial_backoff_ms=5
    )
    out = Agent(tooljig.Engine(), model).run_sync(AgentState("hello"))
    assert (out.status, out.reason) == ("finished", "answered")
    assert out.answer == text
    assert len(seen) == 2
    assert seen[1]["model"] == "gpt-test" and seen[1]["messages"][-1] == {
        "role": "user",
        "content": "hello",
    }


def chat_sse(text: str) -> bytes:
    """A Chat Completions stream answering ``text``."""
    chunks = [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


def test_http_model_sends_the_extra_headers_with_every_request(replay_server: Replay) -> None:
    url, _, bodies, heard = replay_server
    bodies.extend([b"429", chat_sse("hi")])
    model = HttpModel.openai_compatible(
        "gpt-test",
        base_url=url,
        api_key="test-key",
        max_retries=1,
        initial_backoff_ms=5,
        headers={"X-Gateway-Key": "g-1", "OpenAI-Organization": "org-7"},
    )
    out = Agent(tooljig.Engine(), model).run_sync(AgentState("hello"))
    assert out.answer == "hi"
    # The retry after the 429 carries them too, beside the API key.
    assert len(heard) == 2
    for headers in heard:
        assert headers["x-gateway-key"] == "g-1"
        assert headers["openai-organization"] == "org-7"
        assert headers["authorization"] == "Bearer test-key"


def test_http_model_headers_that_no_request_could_carry_are_refused() -> None:
    with pytest.raises(tooljig.InvalidInputError, match="header name"):
        HttpModel.openai_compatible("m", headers={"bad name": "v"})
    with pytest.raises(tooljig.InvalidInputError, match="header value"):
        HttpModel.anthropic("m", headers={"x-a": "line\nbreak"})
    with pytest.raises(tooljig.InvalidInputError, match="mapping of header names"):
        HttpModel.gemini("m", headers={"x-a": 1})  # type: ignore[dict-item]
    with pytest.raises(tooljig.InvalidInputError, match="mapping of header names"):
        HttpModel.gemini("m", headers=[("x-a", "v")])  # type: ignore[arg-type]


# --- suspension, cancellation, the JSON protocol ------------------------------------------


def test_a_client_side_tool_suspends_the_run_which_resumes_with_its_result() -> None:
    engine = tooljig.Engine()
    engine.register(
        "pick_file",
        "Asks the user to pick a file in the browser.",
        {"type": "object", "properties": {"kind": {"type": "string"}}, "required": ["kind"]},
        None,
    )
    model = ScriptedModel(
        "m",
        [
            {"tool_calls": [{"id": "p1", "name": "pick_file", "arguments": {"kind": "pdf"}}]},
            "You picked report.pdf.",
        ],
    )
    agent = Agent(engine, model)
    state = AgentState("Open a PDF")
    out = agent.run_sync(state)
    assert out.status == "suspended"
    assert out.pending[0]["call_id"] == "p1" and out.pending[0]["tool"] == "pick_file"
    assert out.pending[0]["arguments"] == {"kind": "pdf"}
    # The run is stored, the client runs its tool, and the run resumes in a later request.
    state = AgentState.from_json(state.to_json())
    result = {"call_id": "p1", "tool": "pick_file", "envelope": {"ok": True, "data": "report.pdf"}}
    out = agent.resume_with_results_sync(state, [result])
    assert (out.status, out.reason) == ("finished", "answered")
    assert out.answer == "You picked report.pdf."
    assert model.requests()[1]["messages"][-1]["results"][0]["envelope"] == {
        "ok": True,
        "data": "report.pdf",
    }


MAIL = {"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}
REVIEWER = {"principal": "rita", "tenant": "acme", "roles": ["reviewer"]}
USER = {"principal": "alice", "tenant": "acme"}


def approval_engine(sent: list[str], **options: Any) -> tooljig.Engine:
    """An engine whose `send_email` needs a reviewer's approval: a durable approval in the
    engine's state store (in memory unless `state_store` is given)."""
    engine = tooljig.Engine(approval_rules={"min_risk": "high"}, **options)

    async def send_email(args: dict[str, Any]) -> dict[str, Any]:
        await asyncio.sleep(0)
        sent.append(args["to"])
        return {"sent_to": args["to"]}

    engine.register(
        "send_email",
        "Sends an email.",
        MAIL,
        send_email,
        risk="high",
        approval={"approver_roles": ["reviewer"]},
    )
    return engine


EMAIL_ANA = {"tool_calls": [{"id": "e1", "name": "send_email", "arguments": {"to": "ana@x.io"}}]}


async def test_an_approved_call_runs_once_when_the_agent_resumes() -> None:
    sent: list[str] = []
    engine = approval_engine(sent)
    model = ScriptedModel("m", [EMAIL_ANA, "Sent to Ana."])
    agent = Agent(engine, model)
    state = AgentState("Email Ana")
    out = await agent.run(state, caller=USER)
    assert out.status == "suspended" and out.answer == ""
    [pending] = out.pending
    assert (pending["call_id"], pending["status"]) == ("e1", "pending_approval")
    assert pending["arguments"] == {"to": "ana@x.io"} and sent == []
    # Not decided yet: resuming keeps the run suspended and runs nothing.
    still = await agent.resume(state, caller=USER)
    assert still.status == "suspended" and sent == []
    decided = await engine.decide(
        pending["approval_id"],
        "approve",
        arguments_hash=pending["arguments_hash"],
        approver=REVIEWER,
    )
    assert decided["status"] == "approved"
    out = await agent.resume(state, caller=USER)
    assert (out.status, out.reason, out.answer) == ("finished", "answered", "Sent to Ana.")
    assert sent == ["ana@x.io"]
    assert out.counters["tool_successes"] == 1
    # The model answered from the approved call's real result.
    assert last_tool_results(model.requests()[-1])[0]["envelope"] == {
        "ok": True,
        "data": {"sent_to": "ana@x.io"},
    }
    # The run is over: resuming again is refused and runs nothing twice.
    with pytest.raises(tooljig.InvalidInputError, match="not suspended"):
        await agent.resume(state, caller=USER)
    assert sent == ["ana@x.io"]


def test_a_stored_run_resumes_after_approval_in_another_engine_on_the_same_store(
    tmp_path: Path,
) -> None:
    store = tooljig.SqliteStore(tmp_path / "runs.db")
    sent: list[str] = []
    first = Agent(approval_engine(sent, state_store=store), ScriptedModel("m", [EMAIL_ANA]))
    state = AgentState("Email Ana")
    out = first.run_sync(state, caller=USER)
    assert out.status == "suspended"
    [pending] = out.pending
    stored = state.to_json()
    # A later request, as another process would serve it: its own engine and agent on the
    # same store, the state read back from storage, the decision made there.
    engine = approval_engine(sent, state_store=store)
    engine.decide_sync(
        pending["approval_id"],
        "approve",
        arguments_hash=pending["arguments_hash"],
        approver=REVIEWER,
    )
    second = Agent(engine, ScriptedModel("m", ["Sent to Ana."]))
    state = AgentState.from_json(stored)
    out = second.resume_sync(state, caller=USER)
    assert (out.status, out.reason, out.answer) == ("finished", "answered", "Sent to Ana.")
    assert sent == ["ana@x.io"]
    assert state.status == {"status": "finished", "reason": "answered"}


def test_cancelling_a_run_leaves_the_state_as_it_was() -> None:
    started = asyncio.Event()

    async def slow(request: dict[str, Any], emit: Emit) -> Any:
        started.set()
        await asyncio.sleep(30)
        return "too late"

    agent = Agent(tooljig.Engine(), ModelClient(slow))
    state = AgentState("hi")
    before = state.to_dict()

    async def main() -> None:
        task = asyncio.ensure_future(agent.run(state))
        await asyncio.wait_for(started.wait(), 10)
        assert state.running
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        for _ in range(1000):
            if not state.running:
                break
            await asyncio.sleep(0.01)

    asyncio.run(main())
    assert not state.running
    assert state.to_dict() == before
    # The state is usable again.
    out = Agent(tooljig.Engine(), ScriptedModel("m", ["fine"])).run_sync(state)
    assert out.answer == "fine"


def test_two_runs_of_one_state_at_once_are_refused() -> None:
    gate = threading.Event()

    def blocking(request: dict[str, Any], emit: Emit) -> Any:
        gate.wait(10)
        return "done"

    agent = Agent(tooljig.Engine(), ModelClient(blocking))
    state = AgentState("hi")

    async def main() -> None:
        first = asyncio.ensure_future(agent.run(state))
        await asyncio.sleep(0.05)
        with pytest.raises(tooljig.InvalidInputError, match="already in progress"):
            await agent.run(state)
        gate.set()
        assert (await first).answer == "done"

    asyncio.run(main())


async def test_the_next_run_of_a_state_may_start_as_soon_as_the_last_one_returned() -> None:
    # The state is free before the outcome is handed over, not when the run's task ends
    # (a moment later): back to back, every send is accepted.
    agent = Agent(tooljig.Engine(), ScriptedModel("m", [], then_forever="ok"))
    state = AgentState()
    for i in range(50):
        out = await agent.send(state, f"message {i}")
        assert out.answer == "ok"
    assert len(state.messages) == 100


def test_json_protocol_agent_runs_dependent_calls() -> None:
    log: list[str] = []
    plan = json.dumps(
        {
            "reasoning": "weather first, then meet",
            "calls": [
                {"id": "a", "tool": "get_weather", "params": {"city": "Oslo"}},
                {"id": "b", "tool": "get_weather", "params": {"city": "Rome"}},
                {
                    "id": "c",
                    "tool": "schedule_meeting",
                    "params": {"person": "Rome", "duration_min": 15},
                    "dependsOn": ["a", "b"],
                },
            ],
        }
    )
    model = ScriptedModel("json-planner", [{"content": plan}, "All done."])
    agent = Agent(travel_engine(log), model, options={"protocol": {"json": {"dependencies": True}}})
    out = agent.run_sync(AgentState("Plan it"))
    assert out.answer == "All done."
    assert sorted(log[:2]) == ["weather:Oslo", "weather:Rome"] and log[2] == "meeting:Rome:15"
    first = model.requests()[0]
    assert first["tools"] == [] and first.get("response_schema")
    assert "get_weather" in first["messages"][0]["content"]


def test_http_anthropic_model_runs_a_recorded_tool_use_stream_through_a_python_tool(
    replay_server: Replay,
) -> None:
    url, seen, bodies, _ = replay_server
    wire = corpus("wire/anthropic-messages-sse")
    tool_use, basic = wire / "tool_use_response.txt", wire / "basic_response.txt"
    if not (tool_use.exists() and basic.exists()):
        pytest.skip("the recorded Anthropic streams are not in this corpus sample")
    _, answer = tooljig.stream.parse_stream("anthropic", basic.read_bytes())
    bodies.extend([tool_use.read_bytes(), basic.read_bytes()])
    engine = tooljig.Engine()
    asked: list[str] = []

    @engine.tool
    async def get_weather(location: str) -> dict[str, Any]:
        """Weather for a location."""
        asked.append(location)
        return {"location": location, "temp_c": 18}

    model = HttpModel.anthropic("claude-test", base_url=url, api_key="test-key")

    async def main() -> tuple[list[dict[str, Any]], tooljig.RunOutcome]:
        stream = Agent(engine, model, options={"max_tokens": 256}).stream(
            AgentState(), "Weather in Paris?"
        )
        return [e async for e in stream], stream.outcome

    events, out = asyncio.run(main())
    assert asked == ["Paris"]
    assert (out.status, out.reason) == ("finished", "answered")
    assert out.answer == answer["content"]
    partials = [e["partial"] for e in events if e["type"] == "tool_input_delta" and "partial" in e]
    assert partials[-1] == {"location": "Paris"}
    assert any(
        e["type"] == "tool_output_available" and e["call_id"] == "toolu_01NRLabsLyVHZPKxbKvkfSMn"
        for e in events
    )
    # The second request carries the tool result as Anthropic's tool_result block.
    blocks = seen[1]["messages"][-1]["content"]
    assert (
        blocks[0]["type"] == "tool_result"
        and blocks[0]["tool_use_id"] == "toolu_01NRLabsLyVHZPKxbKvkfSMn"
    )


def test_offer_tools_offers_the_best_matches_and_search_tools() -> None:
    engine = travel_engine([])
    engine.enable_tool_search()
    offered: list[list[str]] = []

    def model(request: dict[str, Any], emit: Emit) -> Any:
        offered.append([t["name"] for t in request["tools"]])
        return "Cold in Oslo."

    agent = Agent(engine, ModelClient(model), options={"offer_tools": 1})
    agent.run_sync(AgentState("What's the weather in Oslo?"))
    assert offered[0] == ["get_weather", "search_tools"]

