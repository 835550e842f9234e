"""OpenAPI documents into tools from Python, against a local HTTP server: arguments in path,
query and body, credentials from the caller's attributes (never the model's), the API's
errors as envelopes, and what is skipped or refused."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import tooljig

DOC: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Notes", "version": "1"},
    "servers": [{"url": "https://notes.example/api"}],
    "paths": {
        "/notes/{id}": {
            "get": {
                "operationId": "getNote",
                "summary": "Reads a note",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}},
                    {"name": "fields", "in": "query", "schema": {"type": "string"}},
                ],
            }
        },
        "/notes": {
            "post": {
                "operationId": "addNote",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Note"}}},
                },
            }
        },
        "/avatar": {
            "put": {
                "operationId": "setAvatar",
                "requestBody": {"required": True, "content": {"image/png": {}}},
            }
        },
    },
    "components": {
        "schemas": {
            "Note": {
                "type": "object",
                "required": ["text"],
                "properties": {"text": {"type": "string", "maxLength": 20}},
                "additionalProperties": False,
            }
        }
    },
}


class Echo(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        if self.path.startswith("/api/notes/404"):
            status, answer = 404, {"message": "no such note"}
        else:
            status, answer = 200, {
                "method": self.command,
                "path": self.path,
                "auth": self.headers.get("authorization"),
                "body": body,
            }
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/api"
    server.shutdown()


ANA = {"principal": "ana", "attributes": {"notes_token": "s3cret"}}


async def test_operations_call_the_api_with_the_callers_credentials(api: str) -> None:
    engine = tooljig.Engine()
    report = engine.register_openapi(
        DOC, base_url=api, prefix="notes_", credentials={"attribute": "notes_token"}
    )
    assert report["registered"] == ["notes_getNote", "notes_addNote"]
    assert report["skipped"][0]["operation"] == "PUT /avatar"
    assert "image/png" in report["skipped"][0]["reason"]

    out = await engine.run(
        [
            {"id": "g", "tool": "notes_getNote", "arguments": {"id": 7, "fields": "a,b"}},
            {"id": "a", "tool": "notes_addNote", "arguments": {"body": {"text": "buy milk"}}},
            {"id": "long", "tool": "notes_addNote", "arguments": {"body": {"text": "x" * 21}}},
            {"id": "gone", "tool": "notes_getNote", "arguments": {"id": 404}},
        ],
        caller=ANA,
    )
    got = out.get("g").envelope["data"]
    assert got == {"method": "GET", "path": "/api/notes/7?fields=a%2Cb", "auth": "Bearer s3cret", "body": None}
    assert out.get("a").envelope["data"]["body"] == {"text": "buy milk"}
    assert out.get("long").error_code == "invalid_arguments", "checked before sending"
    gone = out.get("gone").envelope["error"]
    assert gone["code"] == "external_api_error" and gone["status"] == 404 and not gone["retryable"]

    nobody = await engine.run([{"tool": "notes_getNote", "arguments": {"id": 1}}], caller={"principal": "bob"})
    assert nobody[0].envelope["error"]["reason"] == "missing_credentials"


def test_documents_that_cannot_be_carried_are_refused() -> None:
    engine = tooljig.Engine()
    with pytest.raises(tooljig.InvalidInputError, match="OpenAPI 3.0 or 3.1"):
        engine.register_openapi({"swagger": "2.0", "paths": {}})
    with pytest.raises(tooljig.InvalidInputError, match="base_url"):
        engine.register_openapi({**DOC, "servers": [{"url": "/relative"}]})
    with pytest.raises(tooljig.InvalidInputError, match="OpenAPI options"):
        engine.register_openapi(DOC, credentials={"attr": "x"})
    report = engine.register_openapi(DOC, include=["getNote"])
    assert report["registered"] == ["getNote"]
    assert engine.specs()[0]["policy"]["effect"] == "read"
