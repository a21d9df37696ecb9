"""An MCP server written with the official Python SDK (`mcp` package), for crates/mcp's tests.

Tools: add, fail (raises: the result has isError), slow (sleeps), image (a 1x1 PNG), crash (the
process exits mid-call), add_tool (registers `multiply` at runtime and sends
notifications/tools/list_changed), pid (the server's process id), read_note, write_note (no annotations), erase_note (annotated
destructiveHint), header (a header of the HTTP request that made the call), environment (the
server's environment variables, as a JSON object), bump (adds one to a counter: a side effect
to count), bumps (the counter). The tools that change
nothing are annotated readOnlyHint. Runs over stdio, or with `http PORT` over streamable HTTP at
http://127.0.0.1:PORT/mcp.
"""

import asyncio
import base64
import json
import os
import sys

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

server = MCPServer("toolbridge-py-test")

# Tools that change nothing say so (MCP tool annotations); the rest require approval.
READ_ONLY = ToolAnnotations(read_only_hint=True)


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


@server.tool(annotations=READ_ONLY)
def fail() -> str:
    """Always fails (a deliberate ToolError: its text reaches the client)."""
    raise ToolError("the fail tool failed on purpose")


@server.tool(annotations=READ_ONLY)
async def slow(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool(annotations=READ_ONLY)
def image() -> Image:
    """A tiny PNG image."""
    return Image(data=PNG, format="png")


@server.tool()
def crash() -> str:
    """Exit the server process mid-call."""
    os._exit(3)


@server.tool(annotations=READ_ONLY)
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


def multiply(a: int, b: int) -> str:
    """Multiply two integers."""
    return str(a * b)


@server.tool()
async def add_tool(ctx: Context) -> str:
    """Register the multiply tool and tell the client the tool list changed."""
    server.add_tool(multiply)
    await ctx.session.send_tool_list_changed()
    return "multiply added"


NOTES: dict[str, str] = {}


@server.tool(annotations=READ_ONLY)
def read_note(key: str) -> str:
    """Read a note (annotated read-only)."""
    return NOTES.get(key, "")


@server.tool()
def write_note(key: str, text: str) -> str:
    """Write a note (no annotations)."""
    NOTES[key] = text
    return "written"


@server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
def erase_note(key: str) -> str:
    """Erase a note (annotated destructive)."""
    NOTES.pop(key, None)
    return "erased"


@server.tool(name="weird.name/1", annotations=READ_ONLY)
def weird() -> str:
    """A tool name with characters outside [A-Za-z0-9_-]."""
    return "weird"


@server.tool(annotations=READ_ONLY)
def header(name: str, ctx: Context) -> str:
    """The value of a header of the HTTP request that made this call ("" over stdio)."""
    return (ctx.headers or {}).get(name.lower(), "")


@server.tool(annotations=READ_ONLY)
def environment() -> str:
    """The server's environment variables, as a JSON object."""
    return json.dumps(dict(os.environ))


BUMPS = [0]


@server.tool()
def bump() -> str:
    """Add one to the counter (a side effect; no annotations)."""
    BUMPS[0] += 1
    return str(BUMPS[0])


@server.tool(annotations=READ_ONLY)
def bumps() -> str:
    """How many times bump ran."""
    return str(BUMPS[0])


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
