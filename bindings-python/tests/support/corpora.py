"""The shared test corpora: ``$TOOLJIG_CORPORA``, or else ``<repo>/../shared/corpora``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def corpus(sub: str) -> Path:
    """A corpus directory; skipped when missing, a failure under CI=true."""
    root = os.environ.get("TOOLJIG_CORPORA")
    base = Path(root) if root else Path(__file__).resolve().parents[3].parent / "shared" / "corpora"
    path = base / sub
    if not path.is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"corpus {path} is missing (CI=true)")
        pytest.skip(f"corpus {path} is missing")
    return path
