"""An MCP server for the tests whose one tool waits until a file exists: a run held open until the test lets go."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mcp.server import MCPServer

server = MCPServer("gate")


@server.tool()
async def wait_for_release(path: str, seconds: float = 60.0) -> str:
    """Wait until the file at `path` exists (at most `seconds`), then say so."""
    waited = 0.0
    while not Path(path).exists():
        if waited >= seconds:
            return f"still closed after {seconds:.0f} s"
        await asyncio.sleep(0.05)
        waited += 0.05
    return "released"


if __name__ == "__main__":
    server.run()
