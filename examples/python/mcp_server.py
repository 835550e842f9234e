"""An engine's tools over MCP, both ways.

    python examples/python/mcp_server.py            # demo: serve over HTTP, call through a second engine
    python examples/python/mcp_server.py --stdio    # serve the client that started this process
    python examples/python/mcp_server.py --http 127.0.0.1:8931   # serve HTTP (Bearer dev-token) until Ctrl-C
"""

from __future__ import annotations

import asyncio
import json
import sys

import tooljig

engine = tooljig.Engine()


@engine.tool(effect="read")
def add(a: int, b: int) -> dict[str, int]:
    """Adds two integers."""
    return {"sum": a + b}


@engine.tool(scopes=["crm"])
async def find_customer(name: str, ctx: tooljig.ToolContext) -> dict[str, str]:
    """Finds a customer by name (needs the `crm` scope)."""
    return {"name": name, "found_by": ctx.caller.principal or "nobody"}


async def demo() -> None:
    server = engine.serve_mcp(tokens={"ada-token": {"principal": "ada", "scopes": ["crm"]}, "bob-token": {"principal": "bob"}})
    try:
        for token in ("ada-token", "bob-token"):
            other = tooljig.Engine()
            client = await other.connect_mcp(server.url, headers={"authorization": f"Bearer {token}"}, prefix="remote_")
            calls = [{"id": "1", "tool": "remote_add", "arguments": {"a": 2, "b": 3}}]
            if "remote_find_customer" in client.tools:
                calls.append({"id": "2", "tool": "remote_find_customer", "arguments": {"name": "Acme"}})
            out = await other.run(calls)
            print(token, sorted(client.tools), json.dumps([r.envelope for r in out]))
            await client.close()
    finally:
        await server.stop()


async def serve_http(bind: str) -> None:
    server = engine.serve_mcp(bind=bind, tokens={"dev-token": {"principal": "dev", "scopes": ["crm"]}})
    print(f"MCP on {server.url} (Authorization: Bearer dev-token)", file=sys.stderr)
    await server.wait()


if __name__ == "__main__":
    if "--stdio" in sys.argv:
        asyncio.run(engine.serve_mcp_stdio(caller={"principal": "local-user", "scopes": ["crm"]}))
    elif "--http" in sys.argv:
        asyncio.run(serve_http(sys.argv[sys.argv.index("--http") + 1]))
    else:
        asyncio.run(demo())
