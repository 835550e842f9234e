"""MCP both ways (docs/mcp.md): serve an engine's tools to any MCP client, and run any MCP
server's tools under the engine's guardrails.

:class:`tooljig.Engine` has these methods. The behaviour is the core's; handlers and the auth
hook run on the event loop that started the server.

>>> import asyncio, tooljig
>>> engine = tooljig.Engine()
>>> @engine.tool()
... def add(a: int, b: int) -> int:
...     '''Adds two numbers.'''
...     return a + b
>>> async def main():
...     server = engine.serve_mcp(caller={"principal": "me"})
...     other = tooljig.Engine()
...     client = await other.connect_mcp(server.url, prefix="remote_")
...     out = await other.run([{"tool": "remote_add", "arguments": {"a": 1, "b": 2}}])
...     await client.close()
...     await server.stop()
...     return client.tools, out[0].envelope
>>> asyncio.run(main())
(['remote_add'], {'ok': True, 'data': {'ok': True, 'data': 3}})
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tooljig import _native
from tooljig.durable import CallerLike, _auth_hook, _caller


class McpServer:
    """A running Streamable HTTP server (:meth:`McpEndpoints.serve_mcp`)."""

    def __init__(self, native: _native.McpServer) -> None:
        self._native = native

    @property
    def url(self) -> str:
        """The endpoint's URL, e.g. ``http://127.0.0.1:38211/mcp``."""
        url: str = self._native.url
        return url

    async def stop(self) -> None:
        """Stops accepting, ends every session, and returns once the server stopped."""
        await self._native.stop()

    async def wait(self) -> None:
        """Returns once the server stopped (serve until then)."""
        await self._native.stopped()


class McpClient:
    """A connection to an MCP server whose tools an engine runs (:meth:`McpEndpoints.connect_mcp`)."""

    def __init__(self, native: _native.McpClient, tools: list[str]) -> None:
        self._native = native
        #: The names its tools were registered under.
        self.tools = tools

    async def reconnect(self) -> None:
        """Connects again, after the server died or restarted; the tools keep their names."""
        await self._native.reconnect()

    async def close(self) -> None:
        """Closes the connection (a started command is stopped); its tools answer
        ``unavailable`` until :meth:`reconnect`."""
        await self._native.close()


def _serve_options(caller: CallerLike, tokens: Mapping[str, CallerLike] | None, rest: Mapping[str, Any]) -> dict[str, Any]:
    options = {k: v for k, v in rest.items() if v is not None}
    if caller is not None:
        options["caller"] = _caller(caller)
    if tokens is not None:
        options["tokens"] = {token: _caller(c) for token, c in tokens.items()}
    return options


class McpEndpoints:
    """The MCP methods of :class:`tooljig.Engine`."""

    _native: _native.Engine

    def serve_mcp(
        self,
        *,
        bind: str = "127.0.0.1:0",
        path: str = "/mcp",
        caller: CallerLike = None,
        tokens: Mapping[str, CallerLike] | None = None,
        auth: Callable[[dict[str, Any]], Any] | None = None,
        name: str | None = None,
        version: str | None = None,
        instructions: str | None = None,
        elicitation: bool = True,
        deadline_ms: int | None = None,
        allowed_hosts: Sequence[str] | None = None,
        allowed_origins: Sequence[str] | None = None,
        max_body_bytes: int | None = None,
    ) -> McpServer:
        """Serves the engine's tools over Streamable HTTP; call it on a running event loop.

        Who calls: ``auth(request)`` gets ``{"method", "path", "headers"}`` (names lowercased)
        and returns the caller (a dict or :class:`Caller`), or raises to refuse with 401; or
        ``tokens`` maps bearer tokens to callers; or, on loopback only, every request runs for
        ``caller``. ``tools/list`` shows what the caller may use; a call the caller must
        approve, or one missing fields, is asked of the user through elicitation when the
        client supports it (``elicitation=False`` turns that off).
        """
        options = _serve_options(
            caller,
            tokens,
            {
                "bind": bind,
                "path": path,
                "name": name,
                "version": version,
                "instructions": instructions,
                "elicitation": elicitation,
                "deadline_ms": deadline_ms,
                "allowed_hosts": list(allowed_hosts) if allowed_hosts is not None else None,
                "allowed_origins": list(allowed_origins) if allowed_origins is not None else None,
                "max_body_bytes": max_body_bytes,
            },
        )
        hook = None
        if auth is not None:
            hook = _auth_hook(auth)
        return McpServer(self._native.serve_mcp_http(options, hook))

    async def serve_mcp_stdio(
        self,
        *,
        caller: CallerLike = None,
        name: str | None = None,
        version: str | None = None,
        instructions: str | None = None,
        elicitation: bool = True,
        deadline_ms: int | None = None,
    ) -> None:
        """Serves the client that started this process over stdin and stdout, until it
        disconnects. Calls run for ``caller``. Nothing else may write to stdout meanwhile."""
        options = _serve_options(
            caller,
            None,
            {
                "name": name,
                "version": version,
                "instructions": instructions,
                "elicitation": elicitation,
                "deadline_ms": deadline_ms,
            },
        )
        await self._native.serve_mcp_stdio(options)

    async def connect_mcp(
        self,
        server: str | Sequence[str] | Mapping[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        prefix: str = "",
        policy: Mapping[str, Any] | None = None,
        tools: Mapping[str, Mapping[str, Any]] | None = None,
        include: Iterable[str] | None = None,
        trusted: bool = False,
        connect_timeout_ms: int | None = None,
    ) -> McpClient:
        """Connects to an MCP server and registers its tools into this engine.

        ``server`` is a Streamable HTTP URL (with ``headers``), or a command (a list: program
        and arguments, with ``env`` and ``cwd``) speaking MCP over stdio. Each tool is
        registered as ``prefix + name`` with ``policy`` (or its own in ``tools``), so every
        guardrail applies; ``trusted=True`` takes the server's annotations as the policy's
        defaults. Calls that cannot reach the server end ``unavailable`` (retryable).
        Connecting gives up after ``connect_timeout_ms`` (10 s). The tools hold the
        connection: the returned client is needed only to reconnect or close it; once neither
        it nor an engine with the tools is left, the connection closes (a command is stopped).
        """
        if isinstance(server, str):
            target: dict[str, Any] = {"url": server, "headers": dict(headers or {})}
        elif isinstance(server, Mapping):
            target = dict(server)
        else:
            target = {"command": list(server), "env": dict(env or {})}
            if cwd is not None:
                target["cwd"] = cwd
        options: dict[str, Any] = {"prefix": prefix, "trusted": trusted}
        if policy is not None:
            options["policy"] = dict(policy)
        if tools is not None:
            options["tools"] = {k: dict(v) for k, v in tools.items()}
        if include is not None:
            options["include"] = list(include)
        if connect_timeout_ms is not None:
            options["connect_timeout_ms"] = connect_timeout_ms
        native, names = self._native.mcp_connect(target, options)
        return McpClient(native, list(await names))
