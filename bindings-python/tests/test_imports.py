"""Importers (``tooljig.import_tools``) and ``Engine.register_spec``: OpenAI specs and BFCL
docs become tools; a call by the original name still reaches the tool."""

from __future__ import annotations

import json
from typing import Any

import pytest

import tooljig
from support.corpora import corpus


async def test_openai_specs_import_and_run_by_either_name(engine: tooljig.Engine) -> None:
    specs = tooljig.import_tools(
        [
            {"type": "function", "function": {"name": "get.weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
            {"type": "function", "name": "book_table", "description": "Books.", "parameters": {"type": "object"}},
        ]
    )
    assert [s["name"] for s in specs] == ["get_weather", "book_table"]
    assert specs[0]["original_name"] == "get.weather"
    engine.register_spec(specs[0], lambda args: {"city": args["city"], "temp_c": 21})
    engine.register_spec(specs[1])  # client-side
    out = await engine.run([{"id": "a", "tool": "get.weather", "arguments": {"city": "Oslo"}}, {"id": "b", "tool": "book_table"}])
    assert out[0].envelope == {"ok": True, "data": {"city": "Oslo", "temp_c": 21}}
    assert out[1].status == "pending_external"


def test_bfcl_docs_import_with_their_types_mapped() -> None:
    [spec] = tooljig.import_tools(
        {"name": "math.factorial", "description": "Factorial.", "parameters": {"type": "dict", "properties": {"number": {"type": "integer"}, "opts": {"type": "HashMap"}}, "required": ["number"]}},
        format="bfcl",
    )
    assert spec["input_schema"]["type"] == "object" and spec["input_schema"]["properties"]["opts"]["type"] == "object"
    [java] = tooljig.import_tools({"name": "f", "parameters": {"type": "dict", "properties": {"xs": {"type": "ArrayList"}}}}, format="bfcl", category="simple_java")
    assert java["input_schema"]["properties"]["xs"]["type"] == "string"


def test_what_cannot_be_imported_says_where() -> None:
    with pytest.raises(tooljig.InvalidInputError, match="/1/function/name|/1/name"):
        tooljig.import_tools([{"name": "ok"}, {"type": "function", "function": {"name": 5}}])
    with pytest.raises(tooljig.InvalidInputError, match="unknown format"):
        tooljig.import_tools({}, format="yaml")  # type: ignore[arg-type]


async def test_every_doc_of_a_bfcl_file_imports_and_registers() -> None:
    path = corpus("bfcl") / "BFCL_v4_multiple.json"
    entries: list[dict[str, Any]] = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    for entry in entries[:200]:
        engine = tooljig.Engine()
        for spec in tooljig.import_tools(entry, format="bfcl", category=path.name):
            engine.register_spec(spec)
        assert engine.specs()
