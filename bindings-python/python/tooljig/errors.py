"""The exceptions of tooljig, one hierarchy under :class:`TooljigError`.

::

    TooljigError
    ├── RegistrationError          a tool was refused at registration (never at call time)
    │   ├── InvalidToolNameError     the name breaks the providers' rule (1-64 of [A-Za-z0-9_-])
    │   ├── DuplicateToolError       the name (or an alias) is already registered
    │   ├── InvalidSchemaError       an input or output schema does not compile
    │   ├── InvalidPolicyError       the policy is inconsistent or has an unknown field
    │   └── UnsupportedTypeError     a type hint has no JSON Schema (also a TypeError)
    ├── InvalidInputError          calls, caller or options given to a run are malformed
    ├── ShutdownError              the interpreter is exiting; no new batch starts
    ├── ToolError                  raised (or returned) by a handler to choose an error code
    ├── InvalidArguments           raised by a handler's own validation: arguments are wrong
    ├── Needs                      raised (or returned) by a handler: fields are missing
    └── Accepted                   returned (or raised) by a handler: the work goes on as a job

Handlers raise :class:`ToolError` and :class:`Needs`; everything else a handler raises becomes
an ``internal_error`` envelope with a sanitized message, and its traceback goes to
``CallResult.detail``. Refusals and failures of calls are envelopes, never exceptions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tooljig.codes import ErrorCode

__all__ = [
    "Accepted",
    "DuplicateToolError",
    "InvalidArguments",
    "InvalidInputError",
    "InvalidPolicyError",
    "InvalidSchemaError",
    "InvalidToolNameError",
    "Needs",
    "RegistrationError",
    "ShutdownError",
    "ToolError",
    "TooljigError",
    "UnsupportedTypeError",
]


class TooljigError(Exception):
    """Base class of every exception tooljig raises."""


class RegistrationError(TooljigError, ValueError):
    """A tool was refused at registration; the message says why."""


class InvalidToolNameError(RegistrationError):
    """The tool name breaks the providers' rule: 1 to 64 of letters, digits, ``_`` and ``-``."""


class DuplicateToolError(RegistrationError):
    """A tool with that name (or alias) is already registered."""


class InvalidSchemaError(RegistrationError):
    """The input or output schema does not compile."""


class InvalidPolicyError(RegistrationError):
    """The policy is inconsistent (zero attempts, ...) or has a field the core does not know."""


class UnsupportedTypeError(RegistrationError, TypeError):
    """A parameter's type hint cannot be described by a JSON Schema (or is not allowed)."""


class InvalidInputError(TooljigError, ValueError):
    """The calls, caller or options given to a run are malformed (not a model's mistake:
    models' mistakes are envelopes)."""


class ShutdownError(TooljigError, RuntimeError):
    """The interpreter is exiting and tooljig has shut down; no new batch starts."""


class ToolError(TooljigError):
    """Raised (or returned) by a handler to fail the call with a chosen code.

    The model sees ``{"ok": false, "error": {"code", "message", "retryable", **details}}``;
    ``retryable`` defaults to the code's own default (``timeout``, ``rate_limited`` and
    ``external_api_error`` are retryable). Details must be JSON-serializable::

        raise ToolError("not_found", "no meeting with that id", meeting_id=mid)
        raise ToolError(ErrorCode.RATE_LIMITED, "slow down", retry_after_ms=1200)
    """

    code: ErrorCode
    message: str
    retryable: bool | None
    details: dict[str, Any]

    def __init__(
        self,
        code: ErrorCode | str,
        message: str,
        retryable: bool | None = None,
        **details: Any,
    ) -> None:
        try:
            self.code = ErrorCode(code)
        except ValueError:
            known = ", ".join(c.value for c in ErrorCode)
            raise ValueError(f"unknown error code {code!r}; expected one of: {known}") from None
        self.message = message
        self.retryable = retryable
        self.details = details
        super().__init__(f"{self.code.value}: {message}")


class InvalidArguments(TooljigError):
    """Raised by a handler whose own validation (pydantic validators, checks JSON Schema
    cannot express) refuses arguments that passed the tool's schema.

    Each violation is a ``(path, message)`` pair, ``path`` the keys and indexes leading to
    the offending value (empty for the whole). The model sees the same ``invalid_arguments``
    error a schema violation gives, worded by the core::

        raise InvalidArguments((("end",), "must be after start"))
    """

    violations: tuple[tuple[tuple[str | int, ...], str], ...]

    def __init__(self, *violations: tuple[Sequence[str | int], str]) -> None:
        if not violations:
            raise ValueError("InvalidArguments() names at least one violation")
        self.violations = tuple((tuple(path), str(message)) for path, message in violations)
        super().__init__(
            "; ".join(
                f"at /{'/'.join(map(str, path))}: {message}" if path else message
                for path, message in self.violations
            )
        )


class Needs(TooljigError):
    """Raised (or returned) by a handler when required information is missing.

    The model sees ``{"ok": false, "needs": {"field": true, ...}}`` and should ask the user::

        if not duration:
            raise Needs("duration_minutes")
    """

    fields: tuple[str, ...]

    def __init__(self, *fields: str) -> None:
        if not fields:
            raise ValueError("Needs() names at least one field")
        for field in fields:
            if not isinstance(field, str):
                raise TypeError(f"Needs() takes field names, not {type(field).__name__}")
        self.fields = fields
        super().__init__("missing: " + ", ".join(fields))


class Accepted(TooljigError):
    """Returned (or raised) by a handler that started the work as a background job: the call
    ends ``pending_job`` until the app reports how the job ended, from any process sharing the
    engine's state store (:meth:`Engine.complete_job`), and the run is resumed::

        @engine.tool(job_expiry_ms=3_600_000)
        async def render(video_id: str) -> dict:
            task = await queue.enqueue("render", video_id)
            return Accepted(task.id)

    ``job`` is the app's own reference for the job (a queue's task id), unique among pending
    jobs; the app reports under it.
    """

    job: str

    def __init__(self, job: str) -> None:
        if not isinstance(job, str) or not job:
            raise TypeError("Accepted() takes the job's reference, a non-empty string")
        self.job = job
        super().__init__(f"accepted as job {job}")
