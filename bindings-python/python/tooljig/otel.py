"""OpenTelemetry: the spans of batches and calls exported over OTLP (docs/operators.md).

>>> import tooljig
>>> export = tooljig.export_traces("http://localhost:4318")        # doctest: +SKIP
>>> await engine.run(calls, traceparent=request.headers["traceparent"])  # doctest: +SKIP
>>> export.flush()                                                  # doctest: +SKIP
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from tooljig import _native
from tooljig._native import TraceExport


def export_traces(
    endpoint: str,
    *,
    protocol: Literal["http/protobuf", "http/json"] = "http/protobuf",
    service_name: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> TraceExport:
    """Starts exporting a span per batch (``tooljig.batch``) and per call (``tooljig.call``:
    tool, outcome, code, attempts, cached, replayed) to the OTLP/HTTP collector at
    ``endpoint`` (``/v1/traces`` is added when missing), from a thread of its own. Once per
    process. A batch run with ``traceparent=`` (W3C Trace Context, e.g. from the incoming
    request) is a child of that trace, in every resume too. Returns the export:
    ``flush()`` sends what is buffered, ``shutdown()`` stops."""
    options: dict[str, Any] = {
        "endpoint": endpoint,
        "protocol": protocol,
        "headers": dict(headers or {}),
    }
    if service_name is not None:
        options["service_name"] = service_name
    return _native.export_traces(options)


__all__ = ["TraceExport", "export_traces"]
