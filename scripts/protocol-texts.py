#!/usr/bin/env python3
"""Prints every model-facing text of crates/protocol/src/texts/ as Markdown, for the appendix of
docs/src/protocol.md from its "### The core protocol" heading to the end (the docs test checks
that every constant is named there once). Run from the repository root:

    python3 scripts/protocol-texts.py --write
"""
import re
import sys

# The files of the texts module, in the order the appendix shows them, with their headings.
SOURCES = [
    ("reference.rs", "The core protocol"),
    ("mode.rs", "Modes"),
    ("dialects.rs", "Dialects"),
    ("agent.rs", "The agent and skills"),
    ("errors.rs", "Parse errors and retries"),
    ("tools.rs", "Built-in tools"),
    ("python.rs", "python_execute"),
    ("terminal.rs", "run_in_terminal"),
    ("mcp.rs", "MCP tool results"),
    ("router.rs", "The embedded model's router (never part of a conversation)"),
]
PAGE = "docs/src/protocol.md"
START = "### The core protocol"


def literal(src, i):
    """The Rust string literal starting at src[i]; returns (value, end)."""
    m = re.compile(r'r(#*)"').match(src, i)
    if m:
        close = '"' + m.group(1)
        end = src.index(close, m.end())
        return src[m.end():end], end + len(close)
    assert src[i] == '"', src[i:i + 40]
    out, j = [], i + 1
    while src[j] != '"':
        c = src[j]
        if c == "\\":
            n = src[j + 1]
            if n == "\n":
                j += 2
                while src[j] in " \t\n":
                    j += 1
                continue
            if n == "u":
                k = src.index("}", j)
                out.append(chr(int(src[j + 3:k], 16)))
                j = k + 1
                continue
            out.append({"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "0": "\0"}[n])
            j += 2
            continue
        out.append(c)
        j += 1
    return "".join(out), j + 1


def render(path, title, out):
    src = open(path, encoding="utf-8").read()
    lines = src.split("\n")
    offsets, pos = [], 0
    for line in lines:
        offsets.append(pos)
        pos += len(line) + 1
    out.append(f"### {title}\n")
    for n, line in enumerate(lines):
        m = re.match(r"pub const ([A-Z0-9_]+): &str =", line)
        if not m:
            continue
        name = m.group(1)
        k = n - 1
        doc = []
        while k >= 0 and (lines[k].startswith("///") or lines[k].startswith("#[")):
            if lines[k].startswith("///"):
                doc.insert(0, lines[k][3:].strip())
            k -= 1
        about = " ".join(doc)
        about = re.sub(r"\s*\(seeds? \d+[^)]*\)", "", about)
        about = re.sub(r"\(seed \d+ ([^)]*)\)", r"(\1)", about)
        about = re.sub(r"^Ours: ", "", about)
        about = about.replace("seed 002's", "the protocol's")
        about = re.sub(r", as the seed writes it", "", about)
        assert "seed" not in about.lower(), (name, about)
        start = offsets[n] + m.end()
        while src[start] in " \n":
            start += 1
        value, _ = literal(src, start)
        fence = "````" if "```" in value else "```"
        out.append(f"`{name}` — {about}\n")
        out.append(f"{fence}text\n{value}\n{fence}\n")


def main():
    out = []
    for file, title in SOURCES:
        render(f"crates/protocol/src/texts/{file}", title, out)
    text = "\n".join(out)
    if "--write" in sys.argv:
        page = open(PAGE, encoding="utf-8").read()
        cut = page.index(START)
        open(PAGE, "w", encoding="utf-8").write(page[:cut] + text)
    else:
        print(text)


if __name__ == "__main__":
    sys.exit(main())
