"""Tool definitions written for other systems, imported as tooljig specs (docs/tools.md).

>>> import tooljig
>>> [spec] = tooljig.import_tools({"type": "function", "function": {"name": "get.weather",
...     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}})
>>> spec["name"], spec["original_name"]
('get_weather', 'get.weather')
>>> engine = tooljig.Engine()
>>> engine.register_spec(spec, lambda args: {"city": args.get("city")})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from tooljig import _native


def import_tools(
    definitions: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    *,
    format: Literal["openai", "bfcl"] = "openai",
    category: str | None = None,
    close_objects: bool = True,
) -> list[dict[str, Any]]:
    """Imports OpenAI function specs (Chat Completions, Responses or bare; one or a list) or
    BFCL function docs (one, a list, or an entry with ``function``; ``category`` such as
    ``"simple_java"`` decides how parameters reach the model). Returns tooljig specs for
    :meth:`Engine.register_spec`: names made provider-safe and unique, the original kept as
    ``original_name`` so calls by it still resolve. Raises :class:`InvalidInputError` naming
    the place of a definition it cannot read."""
    options: dict[str, Any] = {"format": format, "close_objects": close_objects}
    if category is not None:
        options["category"] = category
    specs: list[dict[str, Any]] = _native.import_tools(definitions, options)
    return specs
