"""The closed set of error codes an envelope can carry, identical in Rust, Python and Node.

See ``docs/error-codes.md`` for each code's meaning and its mapping to the codes apps commonly use and to
MCP's ``isError``. ``tests/test_codes.py`` checks this enum against the core's list.
"""

from __future__ import annotations

from enum import Enum


class ErrorCode(str, Enum):
    """Why a call did not produce data. A ``str``: ``ErrorCode.TIMEOUT == "timeout"``."""

    UNKNOWN_TOOL = "unknown_tool"
    INVALID_REQUEST = "invalid_request"
    MALFORMED_ARGUMENTS = "malformed_arguments"
    INCOMPLETE_ARGUMENTS = "incomplete_arguments"
    ARGUMENTS_TOO_LARGE = "arguments_too_large"
    INVALID_ARGUMENTS = "invalid_arguments"
    PERMISSION_DENIED = "permission_denied"
    SCOPES_MISSING = "scopes_missing"
    RATE_LIMITED = "rate_limited"
    CONFLICT = "conflict"
    APPROVAL_REJECTED = "approval_rejected"
    APPROVAL_EXPIRED = "approval_expired"
    NOT_FOUND = "not_found"
    AMBIGUOUS = "ambiguous"
    DEPENDENCY_FAILED = "dependency_failed"
    DEPENDENCY_CYCLE = "dependency_cycle"
    UNKNOWN_DEPENDENCY = "unknown_dependency"
    TOO_MANY_CALLS = "too_many_calls"
    TIMEOUT = "timeout"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    CANCELLED = "cancelled"
    EXTERNAL_API_ERROR = "external_api_error"
    INTERNAL_ERROR = "internal_error"
    OUTCOME_UNKNOWN = "outcome_unknown"
    UNAVAILABLE = "unavailable"
    OUTPUT_TOO_LARGE = "output_too_large"
    INVALID_OUTPUT = "invalid_output"
    PENDING_APPROVAL = "pending_approval"
    PENDING_EXTERNAL = "pending_external"
    PENDING_JOB = "pending_job"

    def __str__(self) -> str:
        return self.value
