#!/usr/bin/env python3
"""A recording fake of OpenAI's Responses API, for research and for checking the client scripts.

Test-only and stdlib-only: it is NOT the gateway and no cargo test runs it. It exists to find out,
offline, what real clients (Codex CLI, the OpenAI Agents SDK, the openai Python and npm packages)
send and which answers they accept, and to prove the client scripts in this folder end to end
before they are pointed at the real gateway. docs/notes/responses-clients.md has the findings.

Usage:
  fake_responses_server.py [--port N] [--port-file F] --log FILE.jsonl [options]

  --port N            port on 127.0.0.1 (0, the default: any free port; see --port-file)
  --port-file F       write the chosen port there once listening
  --log F             append one JSON line per request: method, path, query, headers (credentials
                      replaced by "<redacted>"), JSON body (or the raw text), and the reply status
  --call NAME=JSON    the arguments to send when calling the client's function tool NAME
                      (otherwise made from the tool's JSON schema; exec_command/shell get the
                      command written in backticks in the user's last message)
  --omit EVENT        leave this SSE event type out of every stream (repeatable), to see what a
                      client does without it
  --no-usage          send `usage: null` in responses (to see whether a client needs usage)
  --reasoning TEXT    start every output with a reasoning item whose summary is TEXT (streamed as
                      response.reasoning_summary_* events; encrypted_content is an opaque
                      base64 string, as OpenAI sends it when include asks for it)
  --ci-item JSON      merge this object into every code_interpreter_call item (a null value removes
                      the field), to see which of its fields a client needs
  --fail HOW          fail every POST /v1/responses: "http:CODE" answers that status with an
                      OpenAI error body; "event" streams response.created then response.failed
                      (without stream: a 200 response object with status "failed");
                      "incomplete" does the same with response.incomplete,
                      incomplete_details.reason "max_output_tokens"
  --idle-exit SECS    exit after this long without a request (default 120): it stops by itself
  --model-list-json F answer GET /v1/models with this file's JSON instead of the default list

What it answers (the "script"), from the request alone, so one server serves every scenario:
  POST /v1/responses
    * the new input holds function_call_output items -> one message: "The tool returned: <output>"
      (outputs joined with " | "; text of list-shaped outputs concatenated)
    * otherwise, in one response:
        - a code_interpreter_call item (status completed, code "print(6 * 7)", logs "42\n") when
          the request has a hosted {"type": "code_interpreter"} tool;
        - a function_call of the client's function tool when it has one (tool_choice "none"
          prevents it; a tool named in tool_choice or in the user's text is preferred, then
          exec_command, then shell, then the first function tool; a function inside a
          {"type": "namespace"} tool counts too and is called with its `namespace`);
        - without a function call, a closing message: "The code printed 42." after the code
          interpreter, "I got file <file_id>." for an input_file part, else
          "Hello from the fake Responses server."
    Streams (stream: true) send OpenAI's event sequence with sequence_number; stored responses
    (store not false) can be fetched, listed (input_items) and deleted; previous_response_id
    must name a stored response (else 404 as OpenAI does).
  GET /v1/responses/{id}, DELETE /v1/responses/{id}, GET /v1/responses/{id}/input_items,
  POST /v1/responses/{id}/cancel, POST /v1/files (multipart), GET /v1/files/{id},
  POST /v1/conversations, GET /v1/models: minimal but valid objects. Anything else: 404 JSON.
"""

import argparse
import base64
import email.parser
import email.policy
import gzip
import json
import os
import re
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET_HEADERS = {"authorization", "api-key", "x-api-key", "cookie", "openai-api-key"}

ARGS = None
LOG_LOCK = threading.Lock()
STATE_LOCK = threading.Lock()
RESPONSES = {}  # id -> {"response": dict, "input": [items with ids], "history": [items]}
FILES = {}  # id -> file object
LAST_REQUEST = [time.monotonic()]


def new_id(prefix):
    return f"{prefix}_{secrets.token_hex(12)}"


# ---- input normalisation -------------------------------------------------------------------


def normalize_input(value):
    """The request's `input` as a list of typed items, the way OpenAI stores them."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [{"role": "user", "content": value}]
    items = []
    for raw in value:
        item = dict(raw)
        if "type" not in item and "role" in item:
            item["type"] = "message"
        if item.get("type") == "message":
            content = item.get("content")
            part_type = "output_text" if item.get("role") == "assistant" else "input_text"
            if isinstance(content, str):
                item["content"] = [{"type": part_type, "text": content}]
            item.setdefault("status", "completed")
        items.append(item)
    return items


def with_ids(items):
    out = []
    for item in items:
        item = dict(item)
        if "id" not in item:
            prefix = {"message": "msg", "function_call_output": "fco", "function_call": "fc"}
            item["id"] = new_id(prefix.get(item.get("type"), "item"))
        out.append(item)
    return out


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return "" if content is None else json.dumps(content)


def last_user_text(history):
    for item in reversed(history):
        if item.get("type") == "message" and item.get("role") == "user":
            return text_of(item.get("content"))
    return ""


def input_files(items):
    found = []
    for item in items:
        if item.get("type") == "message" and isinstance(item.get("content"), list):
            found += [p for p in item["content"] if p.get("type") == "input_file"]
    return found


# ---- choosing what to answer ---------------------------------------------------------------


def function_tools(tools):
    """(namespace or None, tool) for every function tool, namespaced ones included."""
    found = []
    for tool in tools or []:
        if tool.get("type") == "function":
            found.append((None, tool))
        elif tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                if inner.get("type") == "function":
                    found.append((tool.get("name"), inner))
    return found


def example_value(schema, name):
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    if "enum" in schema and schema["enum"]:
        return schema["enum"][0]
    if kind == "integer":
        return 2
    if kind == "number":
        return 2.5
    if kind == "boolean":
        return True
    if kind == "array":
        return [example_value(schema.get("items") or {}, name)]
    if kind == "object":
        props = schema.get("properties") or {}
        required = schema.get("required") or list(props)
        return {k: example_value(props[k], k) for k in required if k in props}
    return "Paris" if name in ("city", "location") else f"example {name}"


def call_arguments(name, tool, user_text):
    if name in ARGS.call:
        return ARGS.call[name]
    command = re.search(r"`([^`]+)`", user_text)
    command = command.group(1) if command else "cat note.txt"
    if name == "exec_command":
        return json.dumps({"cmd": command})
    if name == "shell":
        return json.dumps({"command": ["bash", "-lc", command]})
    return json.dumps(example_value(tool.get("parameters") or {"type": "object"}, name))


def choose_function(request, user_text):
    candidates = function_tools(request.get("tools"))
    choice = request.get("tool_choice")
    if not candidates or choice == "none":
        return None
    if isinstance(choice, dict) and choice.get("name"):
        named = [c for c in candidates if c[1].get("name") == choice["name"]]
        if named:
            return named[0]
    for wanted in [c[1].get("name") for c in candidates if c[1].get("name", "") in user_text] + [
        "exec_command",
        "shell",
    ]:
        named = [c for c in candidates if c[1].get("name") == wanted]
        if named:
            return named[0]
    return candidates[0]


def message_item(text):
    return {
        "id": new_id("msg"),
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def reasoning_item(request):
    item = {
        "id": new_id("rs"),
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": ARGS.reasoning}],
    }
    if "reasoning.encrypted_content" in (request.get("include") or []):
        item["encrypted_content"] = base64.b64encode(b"fake-encrypted:" + ARGS.reasoning.encode()).decode()
    return item


def plan_output(request, history, new_items):
    items = plan_items(request, history, new_items)
    return ([reasoning_item(request)] if ARGS.reasoning else []) + items


def plan_items(request, history, new_items):
    outputs = [i for i in new_items if i.get("type") == "function_call_output"]
    if outputs:
        said = " | ".join(text_of(o.get("output")) for o in outputs)
        return [message_item(f"The tool returned: {said}")]
    user_text = last_user_text(history)
    items = []
    hosted = [t for t in request.get("tools") or [] if t.get("type") == "code_interpreter"]
    if hosted:
        container = hosted[0].get("container")
        items.append(
            {
                "id": new_id("ci"),
                "type": "code_interpreter_call",
                "status": "completed",
                "code": "print(6 * 7)",
                "container_id": container if isinstance(container, str) else new_id("cntr"),
                "outputs": [{"type": "logs", "logs": "42\n"}],
            }
        )
    for key, value in ARGS.ci_item.items():
        for item in items:
            if value is None:
                item.pop(key, None)
            else:
                item[key] = value
    chosen = choose_function(request, user_text)
    if chosen:
        namespace, tool = chosen
        call = {
            "id": new_id("fc"),
            "type": "function_call",
            "status": "completed",
            "call_id": new_id("call"),
            "name": tool.get("name"),
            "arguments": call_arguments(tool.get("name"), tool, user_text),
        }
        if namespace:
            call["namespace"] = namespace
        items.append(call)
        return items
    files = input_files(new_items)
    if hosted:
        text = "The code printed 42."
    elif files:
        text = f"I got file {files[0].get('file_id') or files[0].get('filename')}."
    else:
        text = "Hello from the fake Responses server."
    items.append(message_item(text))
    return items


def usage_of(history, output):
    if ARGS.no_usage:
        return None
    words_in = sum(len(json.dumps(i).split()) for i in history)
    words_out = sum(len(json.dumps(i).split()) for i in output)
    return {
        "input_tokens": words_in,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": words_out,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": words_in + words_out,
    }


def response_object(request, rid, status, output, usage):
    return {
        "id": rid,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "background": bool(request.get("background", False)),
        "completed_at": int(time.time()) if status == "completed" else None,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "max_tool_calls": request.get("max_tool_calls"),
        "model": request.get("model", "fake-model"),
        "output": output,
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "previous_response_id": request.get("previous_response_id"),
        "prompt_cache_key": request.get("prompt_cache_key"),
        "reasoning": {"effort": None, "summary": None},
        "safety_identifier": None,
        "service_tier": "default",
        "store": request.get("store", True),
        "temperature": request.get("temperature", 1.0),
        "text": request.get("text") or {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": request.get("tool_choice", "auto"),
        "tools": request.get("tools") or [],
        "top_logprobs": 0,
        "top_p": request.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": usage,
        "user": request.get("user"),
        "metadata": request.get("metadata") or {},
    }


# ---- the SSE event sequence ----------------------------------------------------------------


def stream_events(request, response):
    """OpenAI's event sequence for a finished response, as (type, payload) pairs."""
    started = dict(response, status="in_progress", output=[], usage=None, completed_at=None)
    yield {"type": "response.created", "response": started}
    yield {"type": "response.in_progress", "response": started}
    for index, item in enumerate(response["output"]):
        iid = item.get("id")  # --ci-item may have removed it
        base = {"item_id": iid, "output_index": index}
        kind = item["type"]
        if kind == "message":
            yield {
                "type": "response.output_item.added",
                "output_index": index,
                "item": dict(item, status="in_progress", content=[]),
            }
            for ci, part in enumerate(item["content"]):
                empty = dict(part, text="")
                yield dict(base, type="response.content_part.added", content_index=ci, part=empty)
                text = part["text"]
                for start in range(0, len(text), 8):
                    yield dict(
                        base,
                        type="response.output_text.delta",
                        content_index=ci,
                        delta=text[start : start + 8],
                        logprobs=[],
                    )
                yield dict(
                    base, type="response.output_text.done", content_index=ci, text=text, logprobs=[]
                )
                yield dict(base, type="response.content_part.done", content_index=ci, part=part)
        elif kind == "function_call":
            yield {
                "type": "response.output_item.added",
                "output_index": index,
                "item": dict(item, status="in_progress", arguments=""),
            }
            args = item["arguments"]
            for start in range(0, len(args), 10):
                yield dict(base, type="response.function_call_arguments.delta", delta=args[start : start + 10])
            yield dict(base, type="response.function_call_arguments.done", arguments=args, name=item["name"])
        elif kind == "reasoning":
            yield {
                "type": "response.output_item.added",
                "output_index": index,
                "item": dict(item, summary=[]),
            }
            for si, part in enumerate(item["summary"]):
                sbase = dict(base, summary_index=si)
                yield dict(sbase, type="response.reasoning_summary_part.added", part=dict(part, text=""))
                yield dict(sbase, type="response.reasoning_summary_text.delta", delta=part["text"])
                yield dict(sbase, type="response.reasoning_summary_text.done", text=part["text"])
                yield dict(sbase, type="response.reasoning_summary_part.done", part=part)
        elif kind == "code_interpreter_call":
            yield {
                "type": "response.output_item.added",
                "output_index": index,
                "item": dict(item, status="in_progress", code="", outputs=None),
            }
            yield dict(base, type="response.code_interpreter_call.in_progress")
            code = item.get("code") or ""
            yield dict(base, type="response.code_interpreter_call_code.delta", delta=code)
            yield dict(base, type="response.code_interpreter_call_code.done", code=code)
            yield dict(base, type="response.code_interpreter_call.interpreting")
            yield dict(base, type="response.code_interpreter_call.completed")
        else:
            yield {"type": "response.output_item.added", "output_index": index, "item": item}
        yield {"type": "response.output_item.done", "output_index": index, "item": item}
    yield {"type": "response.completed", "response": response}


# ---- HTTP ----------------------------------------------------------------------------------


def parse_multipart(content_type, body):
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body
    )
    fields, files = {}, {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        filename = part.get_filename()
        payload = part.get_payload(decode=True) or b""
        if filename is not None:
            files[name] = (filename, payload)
        else:
            fields[name] = payload.decode("utf-8", "replace")
    return fields, files


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-responses/1"

    def log_message(self, *args):  # the JSON log is the record; keep stderr quiet
        pass

    # -- plumbing

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = self.read_chunked()
        encoding = (self.headers.get("Content-Encoding") or "").lower()
        if encoding == "gzip":
            raw = gzip.decompress(raw)
        elif encoding == "zstd":
            try:
                import zstandard  # not stdlib: only when installed

                raw = zstandard.ZstdDecompressor().decompress(raw, max_output_size=64 << 20)
            except ImportError:
                pass
        return raw

    def read_chunked(self):
        data = b""
        while True:
            size = int(self.rfile.readline().strip().split(b";")[0], 16)
            if size == 0:
                self.rfile.readline()
                return data
            data += self.rfile.read(size)
            self.rfile.readline()

    def record(self, body, status, note=None):
        headers = {
            k: ("<redacted>" if k.lower() in SECRET_HEADERS else v) for k, v in self.headers.items()
        }
        ctype = self.headers.get("Content-Type", "")
        entry = {
            "time": time.time(),
            "method": self.command,
            "path": urllib.parse.urlsplit(self.path).path,
            "query": urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query),
            "headers": headers,
            "status": status,
        }
        if body:
            if "json" in ctype or body[:1] in (b"{", b"["):
                try:
                    entry["body"] = json.loads(body)
                except ValueError:
                    entry["body_text"] = body.decode("utf-8", "replace")
            elif ctype.startswith("multipart/"):
                entry["body_multipart_bytes"] = len(body)
            else:
                entry["body_base64"] = base64.b64encode(body[:4096]).decode()
        if note:
            entry["note"] = note
        with LOG_LOCK, open(ARGS.log, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def send_json(self, status, obj, body=b"", note=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", new_id("req"))
        self.end_headers()
        self.wfile.write(data)
        self.record(body, status, note)

    def not_found(self, body, what):
        error = {"message": what, "type": "invalid_request_error", "param": None, "code": None}
        self.send_json(404, {"error": error}, body)

    def send_stream(self, request, response, body):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("x-request-id", new_id("req"))
        self.end_headers()
        sent = []
        seq = 0
        for event in stream_events(request, response):
            if event["type"] in ARGS.omit:
                continue
            event = dict(event, sequence_number=seq)
            seq += 1
            sent.append(event["type"])
            chunk = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.record(body, 200, {"sse": sent, "output": response["output"]})

    # -- routes

    def do_GET(self):
        self.route(b"")

    def do_DELETE(self):
        self.route(self.read_body())

    def do_POST(self):
        self.route(self.read_body())

    def route(self, body):
        LAST_REQUEST[0] = time.monotonic()
        path = urllib.parse.urlsplit(self.path).path
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        path = path[len("/v1") :] if path.startswith("/v1/") else path
        parts = [p for p in path.split("/") if p]
        method = self.command
        if method == "POST" and parts == ["responses"]:
            return self.create_response(body)
        if parts[:1] == ["responses"] and len(parts) >= 2:
            with STATE_LOCK:
                stored = RESPONSES.get(parts[1])
            if stored is None:
                return self.not_found(body, f"Response with id '{parts[1]}' not found.")
            if method == "GET" and len(parts) == 2:
                return self.send_json(200, stored["response"], body)
            if method == "DELETE" and len(parts) == 2:
                with STATE_LOCK:
                    RESPONSES.pop(parts[1], None)
                return self.send_json(200, {"id": parts[1], "object": "response", "deleted": True}, body)
            if method == "GET" and parts[2:] == ["input_items"]:
                return self.send_json(200, self.item_page(stored["input"], query), body)
            if method == "POST" and parts[2:] == ["cancel"]:
                return self.send_json(200, stored["response"], body)
        if method == "POST" and parts == ["files"]:
            return self.create_file(body)
        if method == "GET" and parts[:1] == ["files"] and len(parts) == 2:
            if parts[1] in FILES:
                return self.send_json(200, FILES[parts[1]]["object"], body)
            return self.not_found(body, f"No such File object: {parts[1]}")
        if method == "POST" and parts == ["conversations"]:
            conv = {"id": new_id("conv"), "object": "conversation", "created_at": int(time.time()), "metadata": {}}
            return self.send_json(200, conv, body)
        if method == "GET" and parts == ["models"]:
            if ARGS.model_list_json:
                with open(ARGS.model_list_json, encoding="utf-8") as f:
                    return self.send_json(200, json.load(f), body)
            model = {"id": "fake-model", "object": "model", "created": 0, "owned_by": "fake"}
            return self.send_json(200, {"object": "list", "data": [model]}, body)
        return self.not_found(body, f"Unknown request URL: {method} {self.path}")

    def item_page(self, items, query):
        order = (query.get("order") or ["desc"])[0]
        ordered = list(reversed(items)) if order == "desc" else list(items)
        after = (query.get("after") or [None])[0]
        if after:
            ids = [i["id"] for i in ordered]
            ordered = ordered[ids.index(after) + 1 :] if after in ids else []
        limit = int((query.get("limit") or ["20"])[0])
        page = ordered[:limit]
        return {
            "object": "list",
            "data": page,
            "first_id": page[0]["id"] if page else None,
            "last_id": page[-1]["id"] if page else None,
            "has_more": len(ordered) > limit,
        }

    def create_response(self, body):
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            error = {"message": "We could not parse the JSON body of your request.", "type": "invalid_request_error"}
            return self.send_json(400, {"error": error}, body)
        history = []
        prev = request.get("previous_response_id")
        if prev:
            with STATE_LOCK:
                stored = RESPONSES.get(prev)
            if stored is None:
                return self.not_found(body, f"Previous response with id '{prev}' not found.")
            history = stored["history"] + stored["response"]["output"]
        new_items = with_ids(normalize_input(request.get("input")))
        history = history + new_items
        output = plan_output(request, history, new_items)
        rid = new_id("resp")
        if ARGS.fail:
            return self.fail(request, rid, body)
        response = response_object(request, rid, "completed", output, usage_of(history, output))
        if request.get("store", True) is not False:
            with STATE_LOCK:
                RESPONSES[rid] = {"response": response, "input": new_items, "history": history}
        if request.get("stream"):
            return self.send_stream(request, response, body)
        return self.send_json(200, response, body, {"output": output})

    def fail(self, request, rid, body):
        error = {"message": "The fake server was told to fail.", "type": "server_error", "code": "server_error"}
        if ARGS.fail.startswith("http:"):
            return self.send_json(int(ARGS.fail[5:]), {"error": dict(error, param=None)}, body)
        if ARGS.fail == "incomplete":
            failed = response_object(request, rid, "incomplete", [], None)
            failed["incomplete_details"] = {"reason": "max_output_tokens"}
        else:
            failed = response_object(request, rid, "failed", [], None)
            failed["error"] = {"code": "server_error", "message": error["message"]}
        if not request.get("stream"):
            return self.send_json(200, failed, body)
        started = dict(failed, status="in_progress", error=None)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        terminal = "response.incomplete" if ARGS.fail == "incomplete" else "response.failed"
        for seq, event in enumerate(
            [{"type": "response.created", "response": started}, {"type": terminal, "response": failed}]
        ):
            chunk = f"event: {event['type']}\ndata: {json.dumps(dict(event, sequence_number=seq))}\n\n".encode()
            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")
        self.record(body, 200, {"sse": ["response.created", terminal]})

    def create_file(self, body):
        fields, files = parse_multipart(self.headers.get("Content-Type", ""), body)
        if "file" not in files:
            error = {"message": "Missing required parameter: 'file'.", "type": "invalid_request_error"}
            return self.send_json(400, {"error": error}, body)
        filename, data = files["file"]
        fid = "file-" + secrets.token_hex(12)  # OpenAI spells file ids with a hyphen
        obj = {
            "id": fid,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "expires_at": None,
            "filename": filename,
            "purpose": fields.get("purpose", "user_data"),
            "status": "processed",
            "status_details": None,
        }
        FILES[fid] = {"object": obj, "data": data}
        self.send_json(200, obj, body, {"fields": fields, "filename": filename})


def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--port-file")
    p.add_argument("--log", required=True)
    p.add_argument("--call", action="append", default=[])
    p.add_argument("--omit", action="append", default=[])
    p.add_argument("--no-usage", action="store_true")
    p.add_argument("--fail")
    p.add_argument("--reasoning")
    p.add_argument("--ci-item", type=json.loads, default={})
    p.add_argument("--idle-exit", type=float, default=120.0)
    p.add_argument("--model-list-json")
    ARGS = p.parse_args()
    ARGS.call = dict(c.split("=", 1) for c in ARGS.call)
    ARGS.omit = set(ARGS.omit)
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    if ARGS.port_file:
        with open(ARGS.port_file + ".tmp", "w", encoding="utf-8") as f:
            f.write(str(port))
        os.replace(ARGS.port_file + ".tmp", ARGS.port_file)
    print(f"fake responses server on http://127.0.0.1:{port}/v1", flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    while time.monotonic() - LAST_REQUEST[0] < ARGS.idle_exit:
        time.sleep(0.5)
    server.shutdown()


if __name__ == "__main__":
    sys.exit(main())
