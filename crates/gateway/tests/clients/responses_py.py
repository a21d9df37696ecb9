"""Drives the gateway's Responses API with the official `openai` Python package, unmodified.

Usage: responses_py.py BASE_URL MODEL  (the key comes from TOOLBRIDGE_TEST_KEY)

Prints one JSON object of what it saw (the Rust test asserts on it) and exits 0; exits 1 on any
client exception (the traceback on stderr) or when something it needs to go on is missing.

The requests, in order, and what the upstream behind the gateway must answer (8 model calls;
"text" means any text, which the test then compares):
  1. create, no stream, input "Say hello."                      -> text
  2. responses.stream(...), input "Say hello again."            -> text (streamed)
  3. create(stream=True), input "Say hello a third time."        -> text (raw typed events)
  4. create with the function tool get_weather,
     input "What is the weather in Paris?"                      -> a call get_weather {"city": "Paris"}
  5. create with previous_response_id = 4's id and a
     function_call_output "sunny, 24 C" for its call_id          -> text
     (then, no model call: retrieve(1), input_items.list(1), delete(1), retrieve(1) -> 404)
  6. files.create(data.csv, purpose user_data), then create with
     the hosted code_interpreter tool and a message holding an
     input_file part (that file_id) and "Sum the numbers column of the attached file." -> the
     code interpreter runs code that reads the file, then text
  7. create with the hosted code_interpreter tool (container auto),
     include code_interpreter_call.outputs, input
     "Set x = 6 * 7 with Python and print it."                   -> python run (prints 42), text
  8. create with previous_response_id = 7's id, the same tool,
     input "Now print x + 1 with Python."                        -> python run in the same
                                                                    container (prints 43), text
"""

import json
import os
import sys

import openai

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather for a city.",
    "strict": True,
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
}
CODE_TOOL = {"type": "code_interpreter", "container": {"type": "auto"}}
CSV = b"name,numbers\na,1\nb,2\nc,39\n"


def need(cond, what):
    if not cond:
        print(f"responses_py: FAILED: {what}", file=sys.stderr)
        sys.exit(1)


def items_of(response):
    """Each output item as plain data with the fields a test asserts on."""
    out = []
    for item in response.output:
        entry = {"type": item.type, "id": getattr(item, "id", None), "status": getattr(item, "status", None)}
        if item.type == "message":
            entry["text"] = "".join(c.text for c in item.content if c.type == "output_text")
        elif item.type == "function_call":
            entry.update(name=item.name, arguments=item.arguments, call_id=item.call_id)
        elif item.type == "code_interpreter_call":
            entry.update(
                code=item.code,
                container_id=item.container_id,
                outputs=[o.to_dict() for o in item.outputs or []],
            )
        out.append(entry)
    return out


def summary(response):
    return {
        "id": response.id,
        "object": response.object,
        "status": response.status,
        "model": response.model,
        "text": response.output_text,
        "output": items_of(response),
        "previous_response_id": response.previous_response_id,
        "usage": response.usage.to_dict() if response.usage else None,
    }


def main():
    base_url, model = sys.argv[1], sys.argv[2]
    client = openai.OpenAI(
        base_url=base_url,
        api_key=os.environ.get("TOOLBRIDGE_TEST_KEY", "unused"),
        max_retries=0,
        timeout=60,
    )
    result = {"openai_version": openai.__version__}

    # 1. Non-streaming text.
    first = client.responses.create(model=model, input="Say hello.")
    result["create"] = summary(first)

    # 2. The stream helper: its typed accumulator must accept every event, and
    #    get_final_response() needs response.completed.
    types, classes, seqs, deltas = [], [], [], ""
    with client.responses.stream(model=model, input="Say hello again.") as stream:
        for event in stream:
            types.append(event.type)
            classes.append(type(event).__name__)
            seqs.append(event.sequence_number)
            if event.type == "response.output_text.delta":
                deltas += event.delta
        final = stream.get_final_response()
    result["stream"] = {
        "event_types": types,
        "event_classes": classes,
        "sequence_numbers": seqs,
        "delta_text": deltas,
        "final": summary(final),
    }

    # 3. create(stream=True): the raw events, each parsed into the SDK's own event class.
    types, classes = [], []
    for event in client.responses.create(model=model, input="Say hello a third time.", stream=True):
        types.append(event.type)
        classes.append(type(event).__name__)
        if event.type == "response.completed":
            completed = event.response
    result["stream_raw"] = {"event_types": types, "event_classes": classes, "final": summary(completed)}

    # 4-5. A function tool round trip through previous_response_id.
    asked = client.responses.create(model=model, input="What is the weather in Paris?", tools=[WEATHER_TOOL])
    calls = [i for i in asked.output if i.type == "function_call"]
    need(len(calls) == 1, f"4: one function_call item, got {[i.type for i in asked.output]}")
    answered = client.responses.create(
        model=model,
        previous_response_id=asked.id,
        input=[{"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny, 24 C"}],
        tools=[WEATHER_TOOL],
    )
    result["function"] = {"call": summary(asked), "answer": summary(answered)}

    # Stored objects of request 1: retrieve, input_items, delete, then a 404.
    got = client.responses.retrieve(first.id)
    listed = client.responses.input_items.list(first.id)
    client.responses.delete(first.id)
    try:
        client.responses.retrieve(first.id)
        after_delete = "found"
    except openai.NotFoundError as e:
        after_delete = f"NotFoundError {e.status_code}"
    result["stored"] = {
        "retrieved": summary(got),
        "input_items": [
            {
                "type": i.type,
                "id": getattr(i, "id", None),
                "role": getattr(i, "role", None),
                "text": "".join(getattr(c, "text", "") for c in getattr(i, "content", None) or []),
            }
            for i in listed.data
        ],
        "input_items_has_more": listed.has_more,
        "after_delete": after_delete,
    }

    # 6. An upload, then a request that hands it to the code interpreter by file_id.
    uploaded = client.files.create(file=("data.csv", CSV, "text/csv"), purpose="user_data")
    with_file = client.responses.create(
        model=model,
        tools=[CODE_TOOL],
        include=["code_interpreter_call.outputs"],
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_file", "file_id": uploaded.id},
                    {"type": "input_text", "text": "Sum the numbers column of the attached file."},
                ],
            }
        ],
    )
    result["file"] = {
        "upload": {
            "id": uploaded.id,
            "object": uploaded.object,
            "filename": uploaded.filename,
            "bytes": uploaded.bytes,
            "purpose": uploaded.purpose,
            "status": uploaded.status,
        },
        "response": summary(with_file),
    }

    # 7-8. The hosted code interpreter, then a follow-up that needs the earlier variable.
    code = client.responses.create(
        model=model,
        tools=[CODE_TOOL],
        include=["code_interpreter_call.outputs"],
        input="Set x = 6 * 7 with Python and print it.",
    )
    need(any(i.type == "code_interpreter_call" for i in code.output), "7: a code_interpreter_call item")
    follow = client.responses.create(
        model=model,
        tools=[CODE_TOOL],
        include=["code_interpreter_call.outputs"],
        previous_response_id=code.id,
        input="Now print x + 1 with Python.",
    )
    result["code_interpreter"] = {"first": summary(code), "followup": summary(follow)}

    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
