"""examples/python/quickstart.py does what the Rust quick start does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python" / "quickstart.py"


def test_the_quickstart_prints_the_expected_envelopes() -> None:
    r = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    envelopes = {}
    for line in lines[:-1]:
        call_id, _tool, rest = line.split(maxsplit=2)
        envelopes[call_id] = (json.loads(rest[: rest.rindex("  [")]), rest[rest.rindex("  [") :])
    assert envelopes["w1"][0] == {"ok": True, "data": {"city": "Lisbon", "temperature_c": 21.0}}
    assert "repaired=True" in envelopes["w1"][1]
    assert envelopes["w2"][0] == {"ok": True, "data": {"city": "Oslo", "temperature_c": 4.5}}
    assert envelopes["p1"][0] == {
        "ok": True,
        "data": {"city": "Lisbon", "date": "2026-11-28", "idea": "a picnic", "for": "user-1"},
    }
    assert envelopes["p2"][0] == {"ok": False, "needs": {"date": True}}
    assert envelopes["b1"][0] == {
        "ok": False,
        "error": {"code": "external_api_error", "message": "the booking service is down", "retryable": True},
    }
    assert "attempts=2" in envelopes["b1"][1]
    assert lines[-1].startswith("batch took ")
