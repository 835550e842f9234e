"""An MCP server written with the official Python SDK, for tests/test_mcp.py: tooljig's
client starts it over stdio and runs its tools."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("py-math")


@server.tool()
def multiply(a: int, b: int) -> int:
    """Multiplies two integers."""
    return a * b


@server.tool()
def shout(text: str) -> str:
    """Says the text louder."""
    return text.upper()


if __name__ == "__main__":
    server.run("stdio")
