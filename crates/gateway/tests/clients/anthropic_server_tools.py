"""Drives the gateway's server tools on /v1/messages with the official `anthropic` Python
package, unmodified.

Usage: python anthropic_server_tools.py BASE_URL MODEL

Three requests with the code_execution server tool, one conversation (metadata.user_id), in the
order the Rust test queues the upstream's answers: messages.create (server_tool_use and
code_execution_tool_result blocks parsed into the package's types, then the text, usage with
server_tool_use), messages.stream(...) and its get_final_message() (the same, the input
accumulated from input_json_delta), and a second turn whose history is the first answer's
blocks as the package dumps them (the interpreter kept its state). Exits non-zero on the first
thing that is not as Anthropic would send it.
"""

import sys

import anthropic
from anthropic.types import (
    CodeExecutionResultBlock,
    CodeExecutionToolResultBlock,
    ServerToolUseBlock,
    TextBlock,
)

TOOLS = [{"type": "code_execution_20250825", "name": "code_execution"}]
QUESTION = [{"role": "user", "content": "What is 6 * 7?"}]
METADATA = {"user_id": "sdk-conversation"}


def check(cond, what):
    if not cond:
        print(f"anthropic server tools: FAILED: {what}", file=sys.stderr)
        sys.exit(1)


def check_answer(message, how, code, stdout, text):
    check(message.id.startswith("msg_"), f"{how}: id {message.id!r}")
    check(message.stop_reason == "end_turn", f"{how}: stop_reason {message.stop_reason!r}")
    kinds = [b.type for b in message.content]
    check(
        kinds == ["server_tool_use", "code_execution_tool_result", "text"],
        f"{how}: blocks {kinds}",
    )
    use, result, answer = message.content
    check(isinstance(use, ServerToolUseBlock), f"{how}: {use!r}")
    check(use.id.startswith("srvtoolu_"), f"{how}: id {use.id!r}")
    check(use.name == "code_execution", f"{how}: name {use.name!r}")
    check(use.input == {"code": code}, f"{how}: input {use.input!r}")
    check(isinstance(result, CodeExecutionToolResultBlock), f"{how}: {result!r}")
    check(result.tool_use_id == use.id, f"{how}: tool_use_id {result.tool_use_id!r}")
    check(isinstance(result.content, CodeExecutionResultBlock), f"{how}: {result.content!r}")
    check(result.content.stdout == stdout, f"{how}: stdout {result.content.stdout!r}")
    check(result.content.return_code == 0, f"{how}: return_code {result.content.return_code}")
    check(isinstance(answer, TextBlock) and answer.text == text, f"{how}: text {answer!r}")
    usage = message.usage.server_tool_use
    check(usage is not None and usage.web_search_requests == 0, f"{how}: usage {message.usage!r}")


def main():
    base_url, model = sys.argv[1], sys.argv[2]
    client = anthropic.Anthropic(base_url=base_url, api_key="unused", max_retries=0)

    created = client.messages.create(
        model=model, max_tokens=256, tools=TOOLS, messages=QUESTION, metadata=METADATA
    )
    check_answer(created, "create", "x = 6 * 7\nprint(x)", "42", "It is 42.")

    with client.messages.stream(
        model=model, max_tokens=256, tools=TOOLS, messages=QUESTION, metadata=METADATA
    ) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_message()
    check("message_start" in events and "message_stop" in events, f"stream events {events}")
    check_answer(final, "stream", "print(x)", "42", "It is 42.")

    second = QUESTION + [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in created.content]},
        {"role": "user", "content": "And plus one?"},
    ]
    answer = client.messages.create(
        model=model, max_tokens=256, tools=TOOLS, messages=second, metadata=METADATA
    )
    check_answer(answer, "second turn", "print(x + 1)", "43", "Plus one is 43.")

    print(f"anthropic server tools {anthropic.__version__}: ok")


if __name__ == "__main__":
    main()
