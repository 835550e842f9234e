"""The error codes are the core's, in the same order."""

from tooljig import ErrorCode, _native


def test_error_code_matches_the_core() -> None:
    assert [c.value for c in ErrorCode] == list(_native.ERROR_CODES)
    assert ErrorCode.TIMEOUT == "timeout" and str(ErrorCode.CANCELLED) == "cancelled"
