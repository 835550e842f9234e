"""The ``.pyi`` stubs match the compiled module (``mypy.stubtest``), and the package
type-checks against them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_stubtest_finds_no_difference() -> None:
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy.stubtest",
            "tooljig",
            "--allowlist",
            str(Path(__file__).with_name("stubtest-allowlist.txt")),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_package_and_the_quickstart_type_check() -> None:
    targets = [str(ROOT / "python" / "tooljig"), str(ROOT.parent / "examples" / "python" / "quickstart.py")]
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", *targets],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr
