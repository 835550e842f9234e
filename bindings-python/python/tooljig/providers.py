"""Provider formats: tooljig's tools, calls and results in each model API's own JSON.

A conversation is kept provider-neutral (message dicts with ``role`` ``system`` / ``user`` /
``assistant`` / ``tool``) and converted at the edge, so the same app talks to OpenAI Chat
Completions, OpenAI Responses, Anthropic Messages or Gemini::

    >>> from tooljig.providers import Provider
    >>> anthropic = Provider("anthropic")
    >>> turn = anthropic.parse_response({"content": [
    ...     {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}],
    ...     "stop_reason": "tool_use"})
    >>> turn["tool_calls"][0]["id"], turn["finish_reason"]
    ('toolu_1', 'tool_calls')

Everything is JSON passthrough of the core's types: specs as ``Engine.specs()`` exports them,
turns as ``{"content", "tool_calls", "finish_reason", "usage", ...}``, results as
:class:`tooljig.CallResult` objects or their dicts. A body not in the provider's format raises
:class:`ProviderError`; malformed arguments raise :class:`tooljig.InvalidInputError`.
"""

from __future__ import annotations

from tooljig._native import (
    JsonProtocol,
    Provider,
    drop_strict_nulls,
    format_results,
    into_batch,
    to_strict,
)
from tooljig.errors import TooljigError

__all__ = [
    "PROVIDERS",
    "JsonProtocol",
    "Provider",
    "ProviderError",
    "drop_strict_nulls",
    "format_results",
    "into_batch",
    "to_strict",
]

#: The names :class:`Provider`, :class:`tooljig.StreamParser` and ``HttpModel`` accept.
PROVIDERS: tuple[str, ...] = ("openai_chat", "openai_responses", "anthropic", "gemini")


class ProviderError(TooljigError):
    """A response body, message list or stream that is not in the provider's format (or a
    JSON-protocol answer that no repair makes a plan of)."""
