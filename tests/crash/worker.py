"""The Python worker of the crash scenario (README.md): ``worker.py start DIR`` or
``worker.py resume DIR RUN_ID``."""

import asyncio
import json
import os
import sys
from pathlib import Path

import tooljig

SCENARIO = json.loads((Path(__file__).parent / "scenario.json").read_text())


def app(directory: Path) -> tooljig.Engine:
    # The round's backend: a PostgreSQL URL in backend.url, else SQLite files in the directory.
    url = (directory / "backend.url").read_text().strip() if (directory / "backend.url").exists() else None
    engine = tooljig.Engine(
        state_store=url or tooljig.SqliteStore(str(directory / "state.db")),
        audit=url or tooljig.SqliteAudit(str(directory / "audit.db")),
        run_lease_ms=SCENARIO["lease_ms"],
    )
    effects = directory / "effects.txt"
    for t in SCENARIO["tools"]:

        async def effect(args: dict, ctx: tooljig.ToolContext) -> dict:
            # The effect made durable in one write, then a pause a kill may cut.
            fd = os.open(effects, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, f"{ctx.call_id} {ctx.idempotency_key}\n".encode())
                os.fsync(fd)
            finally:
                os.close(fd)
            await asyncio.sleep(args.get("pause_ms", 0) / 1000)
            return {"did": ctx.call_id}

        engine.register(t["name"], "An effect.", {"type": "object"}, effect, effect_class=t["effect_class"])
    return engine


def main() -> None:
    role, directory = sys.argv[1], Path(sys.argv[2])
    engine = app(directory)
    print("ready", flush=True)
    if role == "start":
        out = engine.run_sync(SCENARIO["calls"], caller={"principal": SCENARIO["principal"]})
    else:
        out = engine.resume_sync(sys.argv[3])
    finals = [{"call": r.call_id, "envelope": r.envelope} for r in out.results]
    # Written aside and renamed: a kill mid-write never leaves a half file that reads as finished.
    (directory / "final.json.tmp").write_text(json.dumps(finals))
    (directory / "final.json.tmp").replace(directory / "final.json")


if __name__ == "__main__":
    main()
