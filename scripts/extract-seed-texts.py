#!/usr/bin/env python3
"""Extract the model-facing texts of the seed documents into golden files.

Usage: scripts/extract-seed-texts.py [SEEDS_DIR] [OUT_DIR]

Each golden file holds one text exactly as the seed has it (no trailing newline added). The Rust
texts module must reproduce these byte for byte; tests/golden_texts.rs checks it. The script fails
loudly when a text cannot be found, so a changed seed cannot silently change a golden file.
"""
import pathlib
import sys

seeds = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/seeds")
out = pathlib.Path(sys.argv[2] if len(sys.argv) > 2 else "crates/protocol/tests/golden/seed")
s000 = next(seeds.glob("000_*.txt")).read_text(encoding="utf-8")
s002 = next(seeds.glob("002_*.txt")).read_text(encoding="utf-8")


def between(text, start, end, include_start=True, include_end=False):
    i = text.index(start)
    j = text.index(end, i + len(start))
    a = i if include_start else i + len(start)
    b = j + len(end) if include_end else j
    return text[a:b]


def line_starting(text, prefix):
    i = text.index(prefix)
    return text[i:text.index("\n", i)]


texts = {}
texts["preamble_header"] = between(s000, "## Available tools\n", "### <TOOL_NAME>")
texts["preamble_tool_template"] = between(s000, "### <TOOL_NAME>\n", "\n\nThe provider stop sequence")
texts["stop_sequence"] = "</tool_call>"
assert "The provider stop sequence is exactly:\n\n</tool_call>\n" in s000
texts["tool_result_template"] = between(s000, '<tool_result name="<TOOL_NAME>">', "\n\nExecution errors", )
texts["tool_error_template"] = between(s000, '<tool_error name="<TOOL_NAME>">', "\n\nThe main system trust")
texts["retry_template"] = between(s000, "<tool_error>\nYour <tool_call>", "</tool_error>", include_end=True)
texts["finalize_budget"] = line_starting(s000, "The tool execution budget is exhausted.")
texts["finalize_no_progress"] = line_starting(s000, "Further tool calls would not add new evidence.")
texts["tool_output_budget_exhausted"] = line_starting(s000, "Tool execution budget exhausted.")
texts["tool_output_duplicate_skipped"] = line_starting(s000, "This tool request was skipped")
errs = line_starting(s000, "Sanitized public execution errors are fixed as ")
texts["error_canceled"] = "The operation was canceled."
texts["error_timed_out"] = "The tool timed out. Please try again."
texts["error_failed"] = "Tool execution failed. Please try again."
for k in ("error_canceled", "error_timed_out", "error_failed"):
    assert texts[k] in errs, k
texts["truncation_note_template"] = '\n\n... (output truncated, total {len(result)} chars)'
assert 'truncated += f"' + texts["truncation_note_template"].replace("\n", "\\n") + '"' in s002
texts["terminal_timeout"] = "Command timeout after 120s"
assert 'return "Command timeout after 120s"' in s002

# Built-in tools: description line, then "Input schema: {...}".
def builtin(desc_start):
    desc = line_starting(s000, desc_start)
    i = s000.index(desc) + len(desc) + 1
    schema_line = s000[i:s000.index("\n", i)]
    assert schema_line.startswith("Input schema: "), desc_start
    return desc, schema_line[len("Input schema: "):]

for name, start in [
    ("web_search", "Search the public web"),
    ("web_fetch", "Fetch the main text content"),
    ("fetch_image", "Download an image from a public"),
    ("python_execute", "Run Python in a persistent sandbox"),
    ("image_generate", "Generate a new image or faithfully"),
    ("use_skill", "Load the full instructions for one of the skills"),
    ("save_memory", "Save a durable fact about the user"),
]:
    d, sch = builtin(start)
    texts[f"builtin_{name}_description"] = d
    texts[f"builtin_{name}_schema"] = sch

texts["docgen_index_entry"] = line_starting(s000, "document-generation: MUST load this")
texts["docgen_body"] = between(
    s000, "## Document-generation recipes", "\n\nAn administrator skill with the same reserved name")

out.mkdir(parents=True, exist_ok=True)
for k, v in texts.items():
    (out / f"{k}.txt").write_text(v, encoding="utf-8")
    src = s002 if k in ("terminal_timeout",) else s000
    if k not in ("truncation_note_template",):
        assert v in src or k == "stop_sequence", k
print(f"wrote {len(texts)} golden texts to {out}")
