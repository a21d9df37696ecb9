#!/usr/bin/env python3
"""Lists the production Rust functions longer than N lines (default 100), longest first, for
issue 36's "long functions" item. Run from the repository root:

    python3 scripts/long-functions.py            # functions over 100 lines under crates/
    python3 scripts/long-functions.py --min 150  # over 150
    python3 scripts/long-functions.py --max 150  # exits 1 if any function is over 150 lines

A function's length runs from the line of its `fn` keyword to the line of its closing brace
(attributes and doc comments are not counted). Braces are matched on a copy of the source whose
comments and string and character literals are blanked out, so a brace inside them does not count.

Test code is left out: files under tests/, benches/, examples/ and fuzz/, files named tests.rs or
*_tests.rs, items marked #[cfg(test)] (a whole `mod tests { … }` with them, and the file of a
`#[cfg(test)] mod reference;`), and #[test] functions. Nested functions are listed on their own as well as counted in their parent.
"""
import argparse
import os
import re
import sys

# Directories whose code is not production code.
TEST_DIRS = {"tests", "benches", "examples", "fuzz", "target"}

FN = re.compile(r"\bfn\s+([A-Za-z_][A-Za-z0-9_]*)")
# An attribute that makes the next item test-only.
TEST_ATTR = re.compile(r"#\[\s*(?:cfg\s*\(\s*test\s*\)|test|[A-Za-z_:]*::test(?:\s*\([^\]]*\))?)\s*\]")
IDENT_CHAR = re.compile(r"[A-Za-z0-9_]")


def blank(text):
    """The source with comments and the contents of string and character literals replaced by
    spaces (newlines kept), so that offsets and line numbers stay those of the original."""
    out = list(text)
    n = len(text)

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    i = 0
    while i < n:
        c = text[i]
        nxt = text[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            end = text.find("\n", i)
            end = n if end < 0 else end
            wipe(i, end)
            i = end
        elif c == "/" and nxt == "*":
            depth, k = 1, i + 2
            while k < n and depth:
                if text.startswith("/*", k):
                    depth, k = depth + 1, k + 2
                elif text.startswith("*/", k):
                    depth, k = depth - 1, k + 2
                else:
                    k += 1
            wipe(i, k)
            i = k
        elif c in "rb" and (i == 0 or not IDENT_CHAR.match(text[i - 1])):
            m = re.compile(r"(?:br|rb|r)(#*)\"").match(text, i)
            if m:  # a raw string: no escapes, ends at `"` and as many `#`
                close = '"' + m.group(1)
                end = text.find(close, m.end())
                end = n if end < 0 else end + len(close)
                wipe(m.end(), end - len(close))
                i = end
            elif c == "b" and nxt in "\"'":
                i += 1  # a byte string or byte literal: handled as `"` or `'` next
            else:
                i += 1
        elif c == '"':
            k = i + 1
            while k < n and text[k] != '"':
                k += 2 if text[k] == "\\" else 1
            wipe(i + 1, k)
            i = k + 1
        elif c == "'":
            # A character literal ('x', '\n', '\u{1F600}') or a lifetime / label ('a).
            if nxt == "\\":
                end = text.find("'", i + 3)  # past the escaped character ('\'')
                end = n if end < 0 else end
                wipe(i + 1, end)
                i = end + 1
            elif i + 2 < n and text[i + 2] == "'":
                wipe(i + 1, i + 2)
                i += 3
            else:
                i += 1
        elif IDENT_CHAR.match(c):
            m = re.compile(r"[A-Za-z0-9_]+").match(text, i)
            i = m.end()
        else:
            i += 1
    return "".join(out)


def item_end(clean, start):
    """Where the item whose header starts at `start` ends: just after its matching `}`, or just
    after its `;` when it has no body. None when the source ends first."""
    depth = 0  # of () and [], so that `[u8; 4]` in a signature does not end it
    k = start
    n = len(clean)
    while k < n:
        c = clean[k]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif depth == 0 and c == ";":
            return k + 1
        elif depth == 0 and c == "{":
            return match_brace(clean, k)
        k += 1
    return None


def match_brace(clean, open_at):
    depth = 0
    for k in range(open_at, len(clean)):
        c = clean[k]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return k + 1
    return None


def test_ranges(clean):
    """The spans of the items marked as test-only."""
    ranges = []
    for m in TEST_ATTR.finditer(clean):
        end = item_end(clean, m.end())
        if end is not None:
            ranges.append((m.start(), end))
    return ranges


TEST_MOD_DECL = re.compile(r"#\[\s*cfg\s*\(\s*test\s*\)\s*\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;")


def test_module_files(path, clean):
    """The files of the modules the file declares as `#[cfg(test)] mod name;`."""
    base = os.path.dirname(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    if stem not in ("mod", "lib", "main"):
        base = os.path.join(base, stem)  # foo.rs declares foo/name.rs
    files = set()
    for m in TEST_MOD_DECL.finditer(clean):
        files.add(os.path.normpath(os.path.join(base, m.group(1) + ".rs")))
        files.add(os.path.normpath(os.path.join(base, m.group(1), "mod.rs")))
    return files


def functions(path, test_files=None):
    """(line, name, length) of each function with a body in the file, test-only ones left out."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    clean = blank(text)
    if test_files is not None:
        test_files.update(test_module_files(path, clean))
    skip = test_ranges(clean)
    found = []
    for m in FN.finditer(clean):
        if any(a <= m.start() < b for a, b in skip):
            continue
        end = item_end(clean, m.end())
        if end is None or clean[end - 1] != "}":
            continue  # a declaration without a body
        first = clean.count("\n", 0, m.start()) + 1
        last = clean.count("\n", 0, end - 1) + 1
        found.append((first, m.group(1), last - first + 1))
    return found


def production_files(roots):
    for root in roots:
        if os.path.isfile(root):
            yield root
            continue
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in TEST_DIRS and not d.startswith("."))
            for name in sorted(filenames):
                if not name.endswith(".rs") or name == "tests.rs" or name.endswith("_tests.rs"):
                    continue
                yield os.path.join(dirpath, name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", default=["crates"], help="files or directories (default: crates)")
    ap.add_argument("--min", type=int, default=100, help="list functions longer than this (default 100)")
    ap.add_argument("--max", type=int, help="exit 1 if any function is longer than this")
    args = ap.parse_args()

    found = []
    test_files = set()  # of `#[cfg(test)] mod name;`, known once their parent has been read
    for path in production_files(args.paths):
        found.extend((path, row) for row in functions(path, test_files))
    rows = [
        (length, f"{path}:{line}", name)
        for path, (line, name, length) in found
        if os.path.normpath(path) not in test_files
    ]
    rows.sort(key=lambda r: (-r[0], r[1]))
    listed = [r for r in rows if r[0] > args.min]
    for length, where, name in listed:
        print(f"{length:5}  {name:30} {where}")
    over_150 = sum(1 for r in rows if r[0] > 150)
    print(f"{len(listed)} functions over {args.min} lines ({over_150} over 150), of {len(rows)}")
    if args.max is not None and any(r[0] > args.max for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
