"""Drives the gateway's Responses API with the OpenAI Agents SDK (`openai-agents`), unmodified.

Usage: agents_sdk.py BASE_URL MODEL  (the key comes from TOOLBRIDGE_TEST_KEY)

One Agent with a local @function_tool `get_weather(city)` (returns "sunny, 24 C in <city>") and
the hosted CodeInterpreterTool (container auto), on OpenAIResponsesModel over an AsyncOpenAI
client pointed at the gateway, set as the default client; tracing is off, so nothing goes to
OpenAI. It runs the same prompt twice: Runner.run, then Runner.run_streamed.

What the upstream behind the gateway must do, for each of the two runs (two HTTP requests each):
  request 1 (input: the prompt "What is the weather in Paris? Also compute 6 * 7 with Python.")
    -> the hosted code interpreter runs (python printing 42) and the model calls the client
       function get_weather {"city": "Paris"}: the response's output holds a completed
       code_interpreter_call item and a function_call item (the run pauses for the client);
  request 2 (no previous_response_id: the SDK sends the whole history again — the user message,
    the code_interpreter_call item, the function_call and its function_call_output
    "sunny, 24 C in Paris")
    -> text, e.g. "It is sunny, 24 C in Paris, and 6 * 7 = 42."

Prints one JSON object: the versions, and per run the final_output, the run items (type, the raw
item's type, the function name and arguments, the code and its outputs), the response ids, the
local tool's calls and, for the streamed run, the stream's event types, the raw Responses event
types and the run-item event names, in order. Exits 1 on any exception (traceback on stderr).
"""

import asyncio
import json
import os
import sys

import openai
from agents import (
    Agent,
    CodeInterpreterTool,
    OpenAIResponsesModel,
    Runner,
    __version__ as agents_version,
    function_tool,
    set_default_openai_api,
    set_default_openai_client,
    set_tracing_disabled,
)

PROMPT = "What is the weather in Paris? Also compute 6 * 7 with Python."
TOOL_CALLS = []


@function_tool
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: The city's name.
    """
    TOOL_CALLS.append({"city": city})
    return f"sunny, 24 C in {city}"


def plain(value):
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if hasattr(value, "model_dump"):
        return value.model_dump(exclude_none=True)
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return repr(value)


def get(raw, name):
    return raw.get(name) if isinstance(raw, dict) else getattr(raw, name, None)


def run_items(items):
    out = []
    for item in items:
        raw = getattr(item, "raw_item", None)
        entry = {"type": item.type, "raw_type": get(raw, "type")}
        if entry["raw_type"] == "function_call":
            entry.update(name=get(raw, "name"), arguments=get(raw, "arguments"), call_id=get(raw, "call_id"))
        elif entry["raw_type"] == "code_interpreter_call":
            entry.update(
                id=get(raw, "id"),
                status=get(raw, "status"),
                code=get(raw, "code"),
                container_id=get(raw, "container_id"),
                outputs=plain(get(raw, "outputs")),
            )
        elif item.type == "tool_call_output_item":
            entry.update(output=plain(item.output), call_id=get(raw, "call_id"))
        elif item.type == "message_output_item":
            entry["text"] = "".join(
                get(c, "text") or "" for c in get(raw, "content") or [] if get(c, "type") == "output_text"
            )
        out.append(entry)
    return out


def summary(result):
    return {
        "final_output": result.final_output,
        "items": run_items(result.new_items),
        "response_ids": [r.response_id for r in result.raw_responses],
        "tool_calls": list(TOOL_CALLS),
    }


async def main():
    base_url, model = sys.argv[1], sys.argv[2]
    client = openai.AsyncOpenAI(
        base_url=base_url,
        api_key=os.environ.get("TOOLBRIDGE_TEST_KEY", "unused"),
        max_retries=0,
        timeout=60,
    )
    set_default_openai_client(client, use_for_tracing=False)
    set_default_openai_api("responses")
    set_tracing_disabled(True)
    agent = Agent(
        name="Assistant",
        instructions="Answer briefly. Use the tools.",
        model=OpenAIResponsesModel(model=model, openai_client=client),
        tools=[
            get_weather,
            CodeInterpreterTool(tool_config={"type": "code_interpreter", "container": {"type": "auto"}}),
        ],
    )
    out = {"agents_version": agents_version, "openai_version": openai.__version__}

    result = await Runner.run(agent, PROMPT)
    out["run"] = summary(result)

    TOOL_CALLS.clear()
    streamed = Runner.run_streamed(agent, PROMPT)
    event_types, raw_types, item_names = [], [], []
    async for event in streamed.stream_events():
        event_types.append(event.type)
        if event.type == "raw_response_event":
            raw_types.append(event.data.type)
        elif event.type == "run_item_stream_event":
            item_names.append(event.name)
    out["streamed"] = summary(streamed)
    out["streamed"].update(
        event_types=sorted(set(event_types)), raw_event_types=raw_types, run_item_events=item_names
    )
    await client.close()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    asyncio.run(main())
