"""Drives the gateway with the official `openai` Python package, unmodified.

Usage: python_client.py BASE_URL MODEL  (the key comes from TOOLBRIDGE_TEST_KEY)

Six requests, in this order (the Rust test queues the upstream's answers to match):
  1. create(), no stream             -> a call to get_weather {"city": "Paris"}
  2. create(), no stream, 2nd turn   -> the final answer
  3. create(stream=True) + usage     -> the call, assembled from delta.tool_calls
  4. chat.completions.stream helper  -> the call, parsed by the helper
  5. stream helper, 2nd turn         -> the final answer
  6. create(stream=True), 2nd turn   -> the final answer
  7. models.retrieve(MODEL), then an unknown id (404); no upstream request
Exits non-zero (with the reason) on the first thing that is not as OpenAI would send it.
"""

import json
import os
import sys

import openai

FINAL = "It is sunny and 24 C in Paris."

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather for a city.",
            "strict": True,
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "additionalProperties": False,
            },
        },
    }
]

QUESTION = [{"role": "user", "content": "What is the weather in Paris?"}]


def check(cond, what):
    if not cond:
        print(f"python client: FAILED: {what}", file=sys.stderr)
        sys.exit(1)


def check_call(call, what):
    check(call.type == "function", f"{what}: type {call.type!r}")
    check(call.id.startswith("call_"), f"{what}: id {call.id!r}")
    check(call.function.name == "get_weather", f"{what}: name {call.function.name!r}")
    args = json.loads(call.function.arguments)
    check(args == {"city": "Paris"}, f"{what}: arguments {call.function.arguments!r}")


def second_turn(call_id):
    return QUESTION + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call_id, "content": "sunny, 24 C"},
    ]


def main():
    base_url, model = sys.argv[1], sys.argv[2]
    client = openai.OpenAI(
        base_url=base_url,
        api_key=os.environ.get("TOOLBRIDGE_TEST_KEY", "unused"),
        max_retries=0,
        timeout=20,
    )

    # 1. Non-streaming: the call with the client's own types.
    r = client.chat.completions.create(model=model, messages=QUESTION, tools=TOOLS)
    choice = r.choices[0]
    check(choice.finish_reason == "tool_calls", f"1: finish_reason {choice.finish_reason!r}")
    check(len(choice.message.tool_calls or []) == 1, "1: one tool call")
    check_call(choice.message.tool_calls[0], "1")
    check(r.usage is not None and r.usage.total_tokens > 0, "1: usage")
    call_id = choice.message.tool_calls[0].id

    # 2. The tool result in the history: the final answer.
    r = client.chat.completions.create(model=model, messages=second_turn(call_id), tools=TOOLS)
    check(r.choices[0].message.content == FINAL, f"2: content {r.choices[0].message.content!r}")
    check(r.choices[0].finish_reason == "stop", f"2: finish_reason {r.choices[0].finish_reason!r}")

    # 3. Streaming, assembling delta.tool_calls by hand as clients do.
    stream = client.chat.completions.create(
        model=model,
        messages=QUESTION,
        tools=TOOLS,
        stream=True,
        stream_options={"include_usage": True},
    )
    calls, finish, usage = {}, None, None
    for chunk in stream:
        if chunk.usage is not None:
            usage = chunk.usage
        for ch in chunk.choices:
            for d in ch.delta.tool_calls or []:
                slot = calls.setdefault(d.index, {"id": None, "name": None, "arguments": ""})
                if d.id:
                    slot["id"] = d.id
                if d.function and d.function.name:
                    slot["name"] = d.function.name
                if d.function and d.function.arguments:
                    slot["arguments"] += d.function.arguments
            if ch.finish_reason:
                finish = ch.finish_reason
    check(finish == "tool_calls", f"3: finish_reason {finish!r}")
    check(list(calls) == [0], f"3: call indexes {list(calls)}")
    check(calls[0]["id"].startswith("call_") and calls[0]["name"] == "get_weather", f"3: {calls}")
    check(json.loads(calls[0]["arguments"]) == {"city": "Paris"}, f"3: {calls}")
    check(usage is not None and usage.total_tokens > 0, "3: usage chunk")

    # 4. The stream helper: its events and its final, parsed completion.
    done_events = []
    with client.chat.completions.stream(model=model, messages=QUESTION, tools=TOOLS) as s:
        for event in s:
            if event.type == "tool_calls.function.arguments.done":
                done_events.append(event)
        final = s.get_final_completion()
    check(len(done_events) == 1, f"4: {len(done_events)} arguments.done events")
    check(done_events[0].name == "get_weather", "4: event name")
    check(done_events[0].parsed_arguments == {"city": "Paris"}, f"4: {done_events[0].parsed_arguments}")
    fc = final.choices[0]
    check(fc.finish_reason == "tool_calls", f"4: finish_reason {fc.finish_reason!r}")
    check_call(fc.message.tool_calls[0], "4")
    check(fc.message.tool_calls[0].function.parsed_arguments == {"city": "Paris"}, "4: parsed_arguments")

    # 5. The stream helper on the second turn.
    with client.chat.completions.stream(model=model, messages=second_turn(call_id), tools=TOOLS) as s:
        text = "".join(e.delta for e in s if e.type == "content.delta")
        final = s.get_final_completion()
    check(text == FINAL, f"5: streamed text {text!r}")
    check(final.choices[0].message.content == FINAL, "5: final content")
    check(final.choices[0].finish_reason == "stop", f"5: finish_reason {final.choices[0].finish_reason!r}")

    # 6. Plain streaming on the second turn.
    stream = client.chat.completions.create(
        model=model, messages=second_turn(call_id), tools=TOOLS, stream=True
    )
    text, finish = "", None
    for chunk in stream:
        for ch in chunk.choices:
            text += ch.delta.content or ""
            finish = ch.finish_reason or finish
    check(text == FINAL and finish == "stop", f"6: {text!r} {finish!r}")

    # 7. models.retrieve (no upstream request), and its 404 for an unknown id.
    m = client.models.retrieve(model)
    check(m.id == model and m.object == "model", f"7: {m!r}")
    try:
        client.models.retrieve("no-such-model")
        check(False, "7: an unknown model was found")
    except openai.NotFoundError as e:
        check(e.status_code == 404, f"7: status {e.status_code}")

    print(f"python client (openai {openai.__version__}): ok")


if __name__ == "__main__":
    main()
