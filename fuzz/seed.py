#!/usr/bin/env python3
"""Seeds fuzz/corpus/<target>-<dialect>/ from the parser corpus (crates/protocol/tests/corpus/*.json).

Each seed is the case's text behind the five header bytes the targets read: byte 0 the
configuration (a few variants per case), bytes 1..5 the split seed. Usage: python3 fuzz/seed.py
"""
import hashlib
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent
CORPUS = ROOT.parent / "crates" / "protocol" / "tests" / "corpus"

for path in sorted(CORPUS.glob("*.json")):
    for case in json.loads(path.read_text()):
        dialect = case.get("dialect", "hermes")
        target = "parser_chunking" if dialect == "hermes" else "dialect_chunking"
        out = ROOT / "corpus" / f"{target}-{dialect}"
        out.mkdir(parents=True, exist_ok=True)
        text = case["text"].encode()
        # Four byte-0 configurations; for dialect_chunking: tools any / declared, reasoning-open,
        # a small section limit (parser_chunking reads the bits its own way, see its header).
        for config in (0x00, 0x10, 0x20, 0x40):
            data = bytes([config]) + bytes([7, 1, 0, 0]) + text
            name = hashlib.sha1(data).hexdigest()
            (out / name).write_bytes(data)
