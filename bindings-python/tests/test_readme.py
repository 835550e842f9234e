"""The README's example runs and prints what the README says it prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_the_readme_example_prints_what_it_shows() -> None:
    text = README.read_text()
    match = re.search(r"## Use\n\n```python\n(.*?)```", text, re.S)
    assert match, "the README has a ## Use section with a python block"
    code = match.group(1)
    shown = [line[2:] for line in code.splitlines() if line.startswith("# ") and " done " in line]
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == shown
