#!/usr/bin/env python3
"""Writes BFCL single-turn cases as chat requests, one JSON object per line:
{"id", "category", "messages", "tools"} with the tools converted exactly as
run_bfcl.py sends them. Input for crates/embedded/examples/bfcl_gate.rs.

    python3 scripts/bfcl/requests.py DATA_DIR simple_python,multiple,irrelevance > requests.jsonl
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run_bfcl import convert_to_tool, find_file, load_jsonl  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    data_dir, categories = sys.argv[1], sys.argv[2].split(",")
    for category in categories:
        path = find_file(data_dir, category)
        if path is None:
            sys.exit(f"no BFCL_v*_{category}.json in {data_dir}")
        for entry in load_jsonl(path):
            print(json.dumps({
                "id": entry["id"],
                "category": category,
                "messages": entry["question"][0],
                "tools": convert_to_tool(entry["function"]),
            }))


if __name__ == "__main__":
    main()
