"""Streaming: provider server-sent events parsed incrementally into tooljig's stream events,
and stream events written as the Vercel AI SDK UI message stream (what ``useChat`` reads).

    >>> from tooljig.stream import StreamParser
    >>> parser = StreamParser("openai_chat")
    >>> parser.push(b'data: {"choices": [{"index": 0, "delta": {"content": "Hi"}}]}\\n\\n')
    [{'type': 'text_delta', 'delta': 'Hi'}]
    >>> events, turn = parser.finish()
    >>> turn["content"]
    'Hi'

Events are dicts tagged by ``type``: ``text_delta``, ``reasoning_delta``,
``tool_input_start``, ``tool_input_delta`` (with ``partial``: the arguments parsed so far),
``tool_input_available``, ``tool_input_incomplete`` (the stream was cut inside the call's
arguments: it never runs), and, from an agent run, ``start``, ``step_start``,
``tool_output_available``, ``tool_output_error``, ``tool_approval_request``,
``tool_output_pending``, ``step_finish``, ``finish``, ``error``.
"""

from __future__ import annotations

from tooljig._native import (
    UI_MESSAGE_STREAM_HEADERS,
    StreamParser,
    UiMessageStream,
    parse_stream,
    to_ui_message_stream,
)

__all__ = [
    "UI_MESSAGE_STREAM_HEADERS",
    "StreamParser",
    "UiMessageStream",
    "parse_stream",
    "to_ui_message_stream",
]
