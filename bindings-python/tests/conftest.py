"""Shared fixtures: a fresh engine per test, and running a Python script in a subprocess."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import tooljig


@pytest.fixture
def engine() -> tooljig.Engine:
    return tooljig.Engine()


def run_python(code: str, *, timeout: float = 60, **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` with this interpreter in a new process; returns the completed process."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,  # type: ignore[arg-type]
    )
