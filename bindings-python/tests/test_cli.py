"""The ``tooljig`` command line shipped with the package (``python -m tooljig``, the
``tooljig`` console script): the same commands as the Rust binary, on a store a Python app
wrote."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import tooljig


def tooljig_cli(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TOOLJIG_STORE": f"sqlite://{tmp / 'store.db'}", "TOOLJIG_AUDIT": f"sqlite://{tmp / 'audit.db'}"}
    return subprocess.run([sys.executable, "-m", "tooljig", *args], capture_output=True, text=True, env=env, timeout=60)


async def test_an_operator_approves_what_a_python_app_asked(tmp_path: Path) -> None:
    engine = tooljig.Engine(state_store=f"sqlite://{tmp_path / 'store.db'}", audit=f"sqlite://{tmp_path / 'audit.db'}")
    sent: list[str] = []

    @engine.tool(risk="high", approval={"required": "always"})
    def send_email(to: str) -> str:
        """Sends an email."""
        sent.append(to)
        return f"sent to {to}"

    out = await engine.run([{"id": "a", "tool": "send_email", "arguments": {"to": "ada@example.com"}}], caller={"principal": "alice"})
    assert out[0].status == "pending_approval"

    pending = tooljig_cli(tmp_path, "pending", "--json")
    assert pending.returncode == 0, pending.stderr
    [request] = json.loads(pending.stdout)
    refused = tooljig_cli(tmp_path, "approve", request["id"], "--as", "mallory")
    assert refused.returncode == 1 and refused.stderr.startswith("tooljig: error: ") and "not_an_approver" in refused.stderr
    approved = tooljig_cli(tmp_path, "approve", request["id"], "--as", "alice", "--hash", request["arguments_hash"], "--json")
    assert approved.returncode == 0, approved.stderr
    assert json.loads(approved.stdout)["status"] == "approved"

    resumed = await engine.resume(out.run_id)
    assert resumed[0].envelope == {"ok": True, "data": "sent to ada@example.com"}
    assert sent == ["ada@example.com"]
    verify = tooljig_cli(tmp_path, "audit", "verify")
    assert verify.returncode == 0 and verify.stdout.startswith("intact:"), verify.stderr
    assert tooljig_cli(tmp_path, "nonsense").returncode == 2
