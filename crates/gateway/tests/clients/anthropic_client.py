"""Drives the gateway's /v1/messages with the official `anthropic` Python package, unmodified.

Usage: python anthropic_client.py BASE_URL MODEL
  TOOLBRIDGE_TEST_KEY: the API key to send (the package sends it as x-api-key)

Five model requests, in the order the Rust test queues the upstream's answers: messages.create
with tools (a tool_use block with parsed input, stop_reason tool_use), messages.stream(...) and
its get_final_message() (the same), a second turn with the tool_result (the final text,
end_turn), the second turn streamed with text_stream; then count_tokens (no model request).
Exits non-zero on the first thing that is not as Anthropic would send it.
"""

import os
import sys

import anthropic

FINAL = "It is sunny and 24 C in Paris."
TOOLS = [
    {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "input_schema": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    }
]
QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


def check(cond, what):
    if not cond:
        print(f"anthropic python client: FAILED: {what}", file=sys.stderr)
        sys.exit(1)


def check_tool_use(message, how):
    check(message.id.startswith("msg_"), f"{how}: message id {message.id!r}")
    check(message.stop_reason == "tool_use", f"{how}: stop_reason {message.stop_reason!r}")
    uses = [b for b in message.content if b.type == "tool_use"]
    check(len(uses) == 1, f"{how}: one tool_use block, got {message.content!r}")
    use = uses[0]
    check(use.id.startswith("toolu_"), f"{how}: tool_use id {use.id!r}")
    check(use.name == "get_weather", f"{how}: name {use.name!r}")
    check(use.input == {"city": "Paris"}, f"{how}: input {use.input!r}")
    check(message.usage.output_tokens >= 0, f"{how}: usage {message.usage!r}")
    return use


def main():
    base_url, model = sys.argv[1], sys.argv[2]
    client = anthropic.Anthropic(
        base_url=base_url, api_key=os.environ["TOOLBRIDGE_TEST_KEY"], max_retries=0
    )

    created = client.messages.create(
        model=model, max_tokens=256, tools=TOOLS, messages=QUESTION
    )
    use = check_tool_use(created, "create")

    with client.messages.stream(
        model=model, max_tokens=256, tools=TOOLS, messages=QUESTION
    ) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_message()
    check("message_start" in events and "content_block_stop" in events, f"stream events {events}")
    check_tool_use(final, "stream")

    second = QUESTION + [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in created.content]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": use.id, "content": "sunny, 24 C"}
            ],
        },
    ]
    answer = client.messages.create(model=model, max_tokens=256, tools=TOOLS, messages=second)
    check(answer.stop_reason == "end_turn", f"second turn: stop_reason {answer.stop_reason!r}")
    text = "".join(b.text for b in answer.content if b.type == "text")
    check(text == FINAL, f"second turn: text {text!r}")

    with client.messages.stream(model=model, max_tokens=256, tools=TOOLS, messages=second) as stream:
        streamed = "".join(stream.text_stream)
        final = stream.get_final_message()
    check(streamed == FINAL, f"second turn streamed: {streamed!r}")
    check(final.stop_reason == "end_turn", f"second turn streamed: {final.stop_reason!r}")

    count = client.messages.count_tokens(model=model, tools=TOOLS, messages=QUESTION)
    check(count.input_tokens > 0, f"count_tokens {count!r}")

    print(f"anthropic python client {anthropic.__version__}: ok")


if __name__ == "__main__":
    main()
