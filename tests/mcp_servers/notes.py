"""A small MCP server for the tests: run as a script it speaks stdio; `server` also serves streamable HTTP."""

from __future__ import annotations

import os

from mcp.server import MCPServer

server = MCPServer("notes")
_notes: list[str] = []


@server.tool()
def add_note(text: str) -> str:
    """Store a note and say how many there are."""
    _notes.append(text)
    return f"stored note {len(_notes)} ({text}) in server process {os.getpid()}"


@server.tool()
def environment() -> str:
    """Report the environment variables the server was given."""
    return f"greeting={os.environ.get('NOTES_GREETING', '-')} secret={os.environ.get('NOTES_SECRET', '-')}"


@server.tool()
def delete_everything() -> str:
    """A tool the admin does not allow."""
    _notes.clear()
    return "deleted everything"


if __name__ == "__main__":
    server.run()
