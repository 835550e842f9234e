"""tooljig: run the tool calls language models propose, safely, in parallel, with Rust
orchestrating and handlers written in Python.

>>> import tooljig
>>> engine = tooljig.Engine()
>>> @engine.tool
... def greet(name: str) -> str:
...     '''Greets someone.
...
...     Args:
...         name: Who to greet.
...     '''
...     return f"hello {name}"
>>> engine.run_sync([{"tool": "greet", "arguments": {"name": "Ada"}}])[0].envelope
{'ok': True, 'data': 'hello Ada'}
"""

from __future__ import annotations

import atexit

from tooljig import _native
from tooljig._native import BatchResult, CallResult, Caller, Event, ToolContext
from tooljig.audit import JsonlAudit, MemoryAudit, PostgresAudit, SqliteAudit
from tooljig.calls import Call
from tooljig.codes import ErrorCode
from tooljig.durable import MemoryStore, PostgresStore, RedisStore, SqliteStore
from tooljig.engine import Engine, EventStream
from tooljig.imports import import_tools
from tooljig.mcp import McpClient, McpServer
from tooljig.otel import TraceExport, export_traces
from tooljig.errors import (
    Accepted,
    DuplicateToolError,
    InvalidArguments,
    InvalidInputError,
    InvalidPolicyError,
    InvalidSchemaError,
    InvalidToolNameError,
    Needs,
    RegistrationError,
    ShutdownError,
    ToolError,
    TooljigError,
    UnsupportedTypeError,
)
from tooljig.policy import Retry
from tooljig.agent import Agent, AgentState, HttpModel, ModelClient, ModelError, RunOutcome, ScriptedModel
from tooljig.providers import Provider, ProviderError
from tooljig.stream import StreamParser, UiMessageStream

__version__: str = _native.__version__

__all__ = [
    "McpClient",
    "McpServer",
    "Agent",
    "AgentState",
    "HttpModel",
    "ModelClient",
    "ModelError",
    "Provider",
    "ProviderError",
    "RunOutcome",
    "ScriptedModel",
    "StreamParser",
    "UiMessageStream",
    "BatchResult",
    "Call",
    "CallResult",
    "Caller",
    "DuplicateToolError",
    "Engine",
    "ErrorCode",
    "Event",
    "EventStream",
    "InvalidArguments",
    "InvalidInputError",
    "InvalidPolicyError",
    "InvalidSchemaError",
    "InvalidToolNameError",
    "JsonlAudit",
    "MemoryAudit",
    "MemoryStore",
    "Needs",
    "Accepted",
    "RegistrationError",
    "Retry",
    "ShutdownError",
    "SqliteAudit",
    "PostgresAudit",
    "PostgresStore",
    "RedisStore",
    "SqliteStore",
    "ToolContext",
    "ToolError",
    "TraceExport",
    "TooljigError",
    "UnsupportedTypeError",
    "__version__",
    "export_traces",
    "import_tools",
]

# Runs before the interpreter finalizes: cancels running batches and waits until no worker
# thread is inside Python (Python 3.11 aborts if one returns to Python during finalization).
atexit.register(_native.shutdown)
