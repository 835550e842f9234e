"""Spans over OTLP from Python: a collector in this process decodes the real protobuf
(``opentelemetry-proto``) that a worker process exports; its batches' spans are children
of the ``traceparent`` it was given, in a resume too, and each call's span carries its
tool, outcome and code. The worker is a subprocess because the export is process-wide."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from conftest import run_python

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


@pytest.fixture
def collector() -> Iterator[tuple[str, list[bytes]]]:
    bodies: list[bytes] = []

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            assert self.headers["content-type"] == "application/x-protobuf"
            bodies.append(self.rfile.read(int(self.headers["content-length"])))
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    server.shutdown()


def test_batches_and_calls_are_spans_under_the_callers_trace(collector: tuple[str, list[bytes]]) -> None:
    endpoint, bodies = collector
    worker = run_python(
        f"""
        import tooljig
        export = tooljig.export_traces({endpoint!r}, service_name="py-worker")
        engine = tooljig.Engine()
        engine.register("echo", "", None, lambda a: a)
        engine.register("pay", "", None, lambda a: {{"paid": True}}, approval={{"required": "always"}})
        tp = "00-{TRACE}-{PARENT}-01"
        engine.run_sync([{{"id": "ok", "tool": "echo", "arguments": {{}}}},
                         {{"id": "nope", "tool": "echo", "arguments": []}}], traceparent=tp)
        out = engine.run_sync([{{"id": "p", "tool": "pay", "arguments": {{}}}}], caller={{"principal": "ana"}},
                              traceparent=tp)
        a = out.get("p")["approval"]
        engine.decide_sync(a["id"], "approve", arguments_hash=a["arguments_hash"], approver={{"principal": "ana"}})
        engine.resume_sync(out.run_id)
        export.flush()
        try:
            tooljig.export_traces({endpoint!r})
        except tooljig.InvalidInputError as e:
            print("second export refused:", "already installed" in str(e))
        """
    )
    assert worker.returncode == 0, worker.stderr
    assert "second export refused: True" in worker.stdout
    spans = []
    for body in bodies:
        request = ExportTraceServiceRequest.FromString(body)
        for rs in request.resource_spans:
            service = {kv.key: kv.value.string_value for kv in rs.resource.attributes}["service.name"]
            assert service == "py-worker"
            spans += [s for ss in rs.scope_spans for s in ss.spans]
    batches = [s for s in spans if s.name == "tooljig.batch"]
    assert len(batches) == 3, [s.name for s in spans]
    assert {(s.trace_id.hex(), s.parent_span_id.hex()) for s in batches} == {(TRACE, PARENT)}

    def attrs(span: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for kv in span.attributes:
            out[kv.key] = getattr(kv.value, kv.value.WhichOneof("value"))
        return out

    calls = [attrs(s) | {"_trace": s.trace_id.hex()} for s in spans if s.name == "tooljig.call"]
    by_id = {}
    for c in calls:
        by_id.setdefault(c["tooljig.call_id"], []).append(c)
    ok = by_id["ok"][0]
    assert (ok["tooljig.tool"], ok["tooljig.outcome"], ok["tooljig.attempts"]) == ("echo", "ok", 1)
    assert by_id["nope"][0]["tooljig.code"] == "invalid_arguments"
    assert sorted(c["tooljig.outcome"] for c in by_id["p"]) == ["ok", "pending_approval"]
    assert {c["_trace"] for c in calls} == {TRACE}
