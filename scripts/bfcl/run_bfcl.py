#!/usr/bin/env python3
"""Run BFCL (Berkeley Function-Calling Leaderboard) single-turn AST categories
against an OpenAI-compatible endpoint such as `toolbridge serve`.

Standard library only. Supported categories: simple_python, multiple,
irrelevance (plus any other single-turn Python AST category whose file layout
is the same, e.g. parallel, parallel_multiple, live_simple, live_multiple,
live_irrelevance).

The request and the checking follow BFCL's own OpenAI function-calling path:

* tools are built like `bfcl_eval/model_handler/utils.py::convert_to_tool`
  with `GORILLA_TO_OPENAPI` (dict->object, float->number + format float and
  " This is a float type value." appended to the description, tuple->array,
  any->string, ...), and "." in function names is replaced by "_";
* the first turn of `question` is sent as `messages`, no system prompt added;
* a response's `tool_calls` become `[{name: json.loads(arguments)}]` like
  `OpenAICompletionsHandler.decode_ast`; a response without tool calls is a
  decode failure;
* simple/multiple/parallel are judged by a port of
  `bfcl_eval/eval_checker/ast_eval/ast_checker.py` (Python language rules);
* irrelevance is right when the decoded output is empty or not in function
  call format (BFCL `_evaluate_single_relevance_entry`); a stricter figure
  (no `tool_calls` entry at all) is printed alongside.

Example:
    python3 scripts/bfcl/run_bfcl.py --url http://127.0.0.1:PORT/v1 \
        --model small --data-dir /path/to/bfcl_eval/data \
        --categories simple_python,multiple,irrelevance
"""

import argparse
import copy
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request

# ---------------------------------------------------------------------------
# Tool conversion (port of bfcl_eval.model_handler.utils / constants)
# ---------------------------------------------------------------------------

GORILLA_TO_OPENAPI = {
    "integer": "integer",
    "number": "number",
    "float": "number",
    "string": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "dict": "object",
    "object": "object",
    "tuple": "array",
    "any": "string",
    "byte": "integer",
    "short": "integer",
    "long": "integer",
    "double": "number",
    "char": "string",
    "ArrayList": "array",
    "Array": "array",
    "HashMap": "object",
    "Hashtable": "object",
    "Queue": "array",
    "Stack": "array",
    "Any": "string",
    "String": "string",
    "Bigint": "integer",
}


def oai_name(name):
    # OpenAI names must match ^[a-zA-Z0-9_-]{1,64}$; BFCL replaces "." by "_".
    return re.sub(r"\.", "_", name)


def _cast_to_openai_type(properties, mapping):
    for key, value in properties.items():
        if "type" not in value:
            properties[key]["type"] = "string"
        else:
            var_type = value["type"]
            if mapping is GORILLA_TO_OPENAPI and var_type == "float":
                properties[key]["format"] = "float"
                properties[key]["description"] = (
                    properties[key].get("description", "") + " This is a float type value."
                )
            properties[key]["type"] = mapping.get(var_type, "string")

        if properties[key]["type"] in ("array", "object"):
            if "properties" in properties[key]:
                properties[key]["properties"] = _cast_to_openai_type(
                    properties[key]["properties"], mapping
                )
            elif "items" in properties[key]:
                items = properties[key]["items"]
                items["type"] = mapping.get(items.get("type"), "string")
                if items["type"] == "array" and "items" in items:
                    items["items"]["type"] = mapping.get(items["items"].get("type"), "string")
                elif items["type"] == "object" and "properties" in items:
                    items["properties"] = _cast_to_openai_type(items["properties"], mapping)
    return properties


def convert_to_tool(functions):
    functions = copy.deepcopy(functions)
    tools = []
    for item in functions:
        item["name"] = oai_name(item["name"])
        item["parameters"]["type"] = "object"
        item["parameters"]["properties"] = _cast_to_openai_type(
            item["parameters"].get("properties", {}), GORILLA_TO_OPENAPI
        )
        tools.append({"type": "function", "function": item})
    return tools


# ---------------------------------------------------------------------------
# AST checker (port of bfcl_eval/eval_checker/ast_eval/ast_checker.py, Python)
# ---------------------------------------------------------------------------

PYTHON_TYPE_MAPPING = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
PYTHON_NESTED_TYPE_CHECK_LIST = ["array", "tuple"]


def _fail(error, error_type):
    return {"valid": False, "error": [error], "error_type": error_type}


def get_possible_answer_type(possible_answer):
    for answer in possible_answer:
        if answer != "":
            return type(answer)
    return None


def type_checker(param, value, possible_answer, expected_type_description,
                 expected_type_converted, nested_type_converted):
    result = {"valid": True, "error": [], "is_variable": False,
              "error_type": "type_error:simple"}
    is_variable = False
    possible_answer_type = get_possible_answer_type(possible_answer)
    if possible_answer_type is not None and possible_answer_type != expected_type_converted:
        is_variable = True

    if type(value) == expected_type_converted:
        if nested_type_converted is None:
            result["is_variable"] = is_variable
            return result
        for possible_answer_item in possible_answer:
            flag = True
            if type(possible_answer_item) == list:
                for value_item in value:
                    r = type_checker(param, value_item, possible_answer_item,
                                     str(nested_type_converted), nested_type_converted, None)
                    if not r["valid"]:
                        flag = False
                        break
            if flag:
                return {"valid": True, "error": [], "is_variable": is_variable}
        result["valid"] = False
        result["error"] = [f"Nested type checking failed for parameter {param!r}."]
        result["error_type"] = "type_error:nested"

    possible_answer_type = get_possible_answer_type(possible_answer)
    if possible_answer_type is not None and type(value) == possible_answer_type:
        result["is_variable"] = True
        return result

    result["valid"] = False
    result["error"].append(
        f"Incorrect type for parameter {param!r}. Expected type "
        f"{expected_type_description}, got {type(value).__name__}. Parameter value: {value!r}."
    )
    result["error_type"] = "type_error:simple"
    return result


def standardize_string(s):
    return re.sub(r"[ \,\.\/\-\_\*\^]", "", s).lower().replace("'", '"')


def string_checker(param, model_output, possible_answer):
    std = [standardize_string(a) for a in possible_answer if type(a) == str]
    if standardize_string(model_output) not in std:
        return _fail(f"Invalid value for parameter {param!r}: {model_output!r}. "
                     f"Expected one of {possible_answer}.", "value_error:string")
    return {"valid": True, "error": []}


def list_checker(param, model_output, possible_answer):
    out = list(model_output)
    for i in range(len(out)):
        if type(out[i]) == str:
            out[i] = standardize_string(model_output[i])
    std = []
    for i in range(len(possible_answer)):
        std.append([])
        for j in range(len(possible_answer[i])):
            v = possible_answer[i][j]
            std[i].append(standardize_string(v) if type(v) == str else v)
    if out not in std:
        return _fail(f"Invalid value for parameter {param!r}: {model_output!r}. "
                     f"Expected one of {possible_answer}.", "value_error:list/tuple")
    return {"valid": True, "error": []}


def dict_checker(param, model_output, possible_answers):
    result = {"valid": False, "error": [], "error_type": "dict_checker:unclear"}
    for i in range(len(possible_answers)):
        if possible_answers[i] == "":
            continue
        result = {"valid": False, "error": [], "error_type": "dict_checker:unclear"}
        flag = True
        possible_answer = possible_answers[i]
        for key, value in model_output.items():
            if key not in possible_answer:
                result["error"].append(f"Unexpected dict key parameter: {key!r}.")
                result["error_type"] = "value_error:dict_key"
                flag = False
                break
            sv = standardize_string(value) if type(value) == str else value
            spa = [standardize_string(a) if type(a) == str else a for a in possible_answer[key]]
            if sv not in spa:
                result["error"].append(f"Invalid value for parameter {key!r}: {value!r}. "
                                       f"Expected one of {spa}.")
                result["error_type"] = "value_error:dict_value"
                flag = False
                break
        for key, value in possible_answer.items():
            if key not in model_output and "" not in value:
                result["error"].append(f"Missing dict key parameter: {key!r}.")
                result["error_type"] = "value_error:dict_key"
                flag = False
                break
        if flag:
            return {"valid": True, "error": []}
    return result


def list_dict_checker(param, model_output, possible_answers):
    result = {"valid": False, "error": [], "error_type": "list_dict_checker:unclear"}
    for answer_index in range(len(possible_answers)):
        flag = True
        if len(model_output) != len(possible_answers[answer_index]):
            result = _fail("Wrong number of dictionaries in the list.",
                           "value_error:list_dict_count")
            continue
        for dict_index in range(len(model_output)):
            result = dict_checker(param, model_output[dict_index],
                                  [possible_answers[answer_index][dict_index]])
            if not result["valid"]:
                flag = False
                break
        if flag:
            return {"valid": True, "error": []}
    return result


def simple_function_checker(func_description, model_output, possible_answer):
    possible_answer = list(possible_answer.values())[0]
    func_name = oai_name(func_description["name"])
    param_details = func_description["parameters"]["properties"]
    required_params = func_description["parameters"].get("required", [])
    result = {"valid": True, "error": [], "error_type": "simple_function_checker:unclear"}

    if func_name not in model_output:
        return _fail(f"Function name {func_name!r} not found in model output.",
                     "simple_function_checker:wrong_func_name")
    model_params = model_output[func_name]

    for param in required_params:
        if param not in model_params:
            return _fail(f"Missing required parameter: {param!r}.",
                         "simple_function_checker:missing_required")

    for param, value in model_params.items():
        if param not in param_details or param not in possible_answer:
            return _fail(f"Unexpected parameter: {param!r}.",
                         "simple_function_checker:unexpected_param")
        expected_type_description = param_details[param]["type"]
        nested_type_converted = None
        if expected_type_description not in PYTHON_TYPE_MAPPING:
            # BFCL would raise KeyError here; treat as a failed check.
            return _fail(f"Unsupported type {expected_type_description!r} for {param!r}.",
                         "checker:unsupported_type")
        expected_type_converted = PYTHON_TYPE_MAPPING[expected_type_description]
        if expected_type_description in PYTHON_NESTED_TYPE_CHECK_LIST:
            nested_type = param_details[param]["items"]["type"]
            nested_type_converted = PYTHON_TYPE_MAPPING.get(nested_type)

        if expected_type_description == "tuple" and type(value) == tuple:
            value = list(value)
        # Python auto conversion from int to float.
        if expected_type_description == "float" and type(value) == int:
            value = float(value)

        tcr = type_checker(param, value, possible_answer[param], expected_type_description,
                           expected_type_converted, nested_type_converted)
        if not tcr["valid"]:
            return tcr
        if not tcr["is_variable"]:
            if expected_type_converted == dict:
                r = dict_checker(param, value, possible_answer[param])
                if not r["valid"]:
                    return r
                continue
            elif expected_type_converted == list and nested_type_converted == dict:
                r = list_dict_checker(param, value, possible_answer[param])
                if not r["valid"]:
                    return r
                continue
            elif expected_type_converted == str:
                r = string_checker(param, value, possible_answer[param])
                if not r["valid"]:
                    return r
                continue
            elif expected_type_converted == list:
                r = list_checker(param, value, possible_answer[param])
                if not r["valid"]:
                    return r
                continue
        if value not in possible_answer[param]:
            return _fail(f"Invalid value for parameter {param!r}: {value!r}. "
                         f"Expected one of {possible_answer[param]}.", "value_error:others")

    for param in possible_answer:
        if param not in model_params and "" not in possible_answer[param]:
            return _fail(f"Optional parameter {param!r} not provided and not marked as optional.",
                         "simple_function_checker:missing_optional")
    return result


def find_description(func_descriptions, name):
    for fd in func_descriptions:
        if fd["name"] == name:
            return fd
    return None


def parallel_no_order(func_descriptions, model_output, possible_answers):
    if len(model_output) != len(possible_answers):
        return _fail("Wrong number of functions.", "parallel_function_checker_no_order:wrong_count")
    matched = []
    for i in range(len(possible_answers)):
        expected = list(possible_answers[i].keys())[0]
        fd = find_description(func_descriptions, expected)
        result = {"valid": False}
        for index in range(len(model_output)):
            if index in matched:
                continue
            result = simple_function_checker(fd, model_output[index], possible_answers[i])
            if result["valid"]:
                matched.append(index)
                break
        if not result["valid"]:
            return _fail(f"No match for possible answer {i}.",
                         "parallel_function_checker_no_order:cannot_find_match")
    return {"valid": True, "error": []}


def ast_checker(func_description, model_output, possible_answer, category):
    if "parallel" in category:
        return parallel_no_order(func_description, model_output, possible_answer)
    if "multiple" in category:
        if len(model_output) != len(possible_answer):
            return _fail("Wrong number of functions.", "multiple_function_checker:wrong_count")
        expected = list(possible_answer[0].keys())[0]
        fd = find_description(func_description, expected)
        return simple_function_checker(fd, model_output[0], possible_answer[0])
    if len(model_output) != 1:
        return _fail("Wrong number of functions.", "simple_function_checker:wrong_count")
    return simple_function_checker(func_description[0], model_output[0], possible_answer[0])


def is_function_calling_format_output(decoded):
    if type(decoded) != list:
        return False
    for item in decoded:
        if type(item) != dict or len(item) != 1:
            return False
        if type(list(item.values())[0]) != dict:
            return False
    return True


def is_empty_output(decoded):
    if not is_function_calling_format_output(decoded):
        return True
    if len(decoded) == 0:
        return True
    if len(decoded) == 1 and len(decoded[0]) == 0:
        return True
    return False


# ---------------------------------------------------------------------------
# Runner
# ---------------------------------------------------------------------------


def load_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def find_file(data_dir, category, sub=None):
    base = os.path.join(data_dir, sub) if sub else data_dir
    for version in ("v4", "v3", "v2", "v1"):
        p = os.path.join(base, f"BFCL_{version}_{category}.json")
        if os.path.exists(p):
            return p
    return None


def post(url, body, timeout, api_key=None):
    data = json.dumps(body).encode("utf-8")
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    req = urllib.request.Request(url, data=data, headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read().decode("utf-8"))


def percentile(sorted_vals, p):
    # nearest-rank percentile
    if not sorted_vals:
        return float("nan")
    k = max(1, int(-(-p * len(sorted_vals) // 100)))
    return sorted_vals[min(k, len(sorted_vals)) - 1]


def run_category(args, category):
    prompt_path = find_file(args.data_dir, category)
    if prompt_path is None:
        sys.exit(f"no BFCL_v*_{category}.json in {args.data_dir}")
    entries = load_jsonl(prompt_path)
    answers = {}
    is_relevance = "irrelevance" in category or "relevance" in category
    if not is_relevance:
        ans_path = find_file(args.data_dir, category, "possible_answer")
        if ans_path is None:
            sys.exit(f"no possible_answer/BFCL_v*_{category}.json in {args.data_dir}")
        answers = {a["id"]: a["ground_truth"] for a in load_jsonl(ans_path)}
    if args.limit:
        entries = entries[: args.limit]

    url = args.url.rstrip("/") + "/chat/completions"
    out_f = None
    if args.out_dir:
        os.makedirs(args.out_dir, exist_ok=True)
        suffix = f"_{args.tool_choice}" if args.tool_choice else ""
        out_f = open(os.path.join(args.out_dir, f"{category}{suffix}.jsonl"), "w", encoding="utf-8")

    right = strict_right = unparsed = http_errors = 0
    latencies = []
    error_types = {}
    for n, entry in enumerate(entries, 1):
        tools = convert_to_tool(entry["function"])
        offered = {t["function"]["name"] for t in tools}
        body = {"model": args.model, "messages": entry["question"][0], "tools": tools}
        if args.tool_choice:
            body["tool_choice"] = args.tool_choice
        if args.temperature is not None:
            body["temperature"] = args.temperature
        if args.max_tokens is not None:
            body["max_tokens"] = args.max_tokens

        t0 = time.monotonic()
        resp, http_error = None, None
        try:
            resp = post(url, body, args.timeout, args.api_key)
        except urllib.error.HTTPError as e:
            http_error = f"HTTP {e.code}: {e.read().decode('utf-8', 'replace')[:300]}"
        except Exception as e:  # noqa: BLE001
            http_error = f"{type(e).__name__}: {e}"
        latencies.append(time.monotonic() - t0)

        message = {}
        if resp is not None:
            try:
                message = resp["choices"][0]["message"] or {}
            except (KeyError, IndexError, TypeError):
                http_error = "malformed response"
        tool_calls = message.get("tool_calls")

        # Parse/validate count: an arguments string that is not a JSON object,
        # or a name that was not offered.
        bad_call = False
        if isinstance(tool_calls, list):
            for tc in tool_calls:
                fn = (tc or {}).get("function") or {}
                if fn.get("name") not in offered:
                    bad_call = True
                try:
                    a = json.loads(fn.get("arguments"))
                    if not isinstance(a, dict):
                        bad_call = True
                except Exception:  # noqa: BLE001
                    bad_call = True
        if bad_call:
            unparsed += 1

        # Decode like OpenAICompletionsHandler.decode_ast (FC mode).
        decoded, decode_error = None, None
        if http_error:
            decode_error = http_error
            http_errors += 1
        elif isinstance(tool_calls, list):
            try:
                decoded = [{tc["function"]["name"]: json.loads(tc["function"]["arguments"])}
                           for tc in tool_calls]
            except Exception as e:  # noqa: BLE001
                decode_error = f"decode: {e}"
        else:
            content = message.get("content")
            if content == "":
                decoded = []  # iterating "" gives an empty list in BFCL
            else:
                decode_error = "no tool_calls (text answer)"

        if is_relevance:
            has_call = decoded is not None and not is_empty_output(decoded)
            ok = (not has_call) if "irrelevance" in category else has_call
            if "irrelevance" in category:
                strict_ok = not tool_calls and http_error is None
            else:
                strict_ok = ok
            result = {"valid": ok, "error_type": None if ok else "irrelevance_error:decoder_success"
                      if "irrelevance" in category else "relevance_error:decoder_failed"}
            if strict_ok:
                strict_right += 1
        else:
            if decoded is None:
                result = {"valid": False, "error_type": "ast_decoder:decoder_failed",
                          "error": [decode_error]}
            elif not is_function_calling_format_output(decoded):
                result = {"valid": False, "error_type": "ast_decoder:decoder_wrong_output_format"}
            else:
                try:
                    result = ast_checker(entry["function"], decoded, answers[entry["id"]], category)
                except Exception as e:  # noqa: BLE001
                    result = _fail(f"checker exception: {e!r}", "checker:exception")
            ok = result["valid"]
            if ok:
                strict_right += 1
        if ok:
            right += 1
        else:
            et = result.get("error_type") or "unknown"
            error_types[et] = error_types.get(et, 0) + 1

        if out_f:
            out_f.write(json.dumps({
                "id": entry["id"], "valid": ok, "error_type": result.get("error_type"),
                "error": result.get("error"), "latency_s": round(latencies[-1], 3),
                "question": entry["question"][0][-1].get("content"),
                "tool_names": sorted(offered), "message": message,
                "http_error": http_error, "bad_call": bad_call,
                "ground_truth": answers.get(entry["id"]),
            }, ensure_ascii=False) + "\n")
            out_f.flush()
        if args.verbose:
            print(f"  [{category}] {n}/{len(entries)} {entry['id']} "
                  f"{'OK' if ok else 'FAIL ' + str(result.get('error_type'))} "
                  f"{latencies[-1]:.2f}s", file=sys.stderr, flush=True)

    if out_f:
        out_f.close()
    lat = sorted(latencies)
    return {
        "category": category,
        "file": os.path.basename(prompt_path),
        "tool_choice": args.tool_choice or "auto(default)",
        "cases": len(entries),
        "right": right,
        "accuracy": right / len(entries) if entries else float("nan"),
        "strict_right": strict_right,
        "p50_s": percentile(lat, 50),
        "p95_s": percentile(lat, 95),
        "unparsed_calls": unparsed,
        "http_errors": http_errors,
        "error_types": dict(sorted(error_types.items(), key=lambda kv: -kv[1])),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="base URL, e.g. http://127.0.0.1:8080/v1")
    ap.add_argument("--model", required=True, help="model name as configured in the gateway")
    ap.add_argument("--data-dir", required=True,
                    help="BFCL data dir (berkeley-function-call-leaderboard/bfcl_eval/data)")
    ap.add_argument("--categories", default="simple_python,multiple,irrelevance",
                    help="comma-separated BFCL categories")
    ap.add_argument("--tool-choice", choices=["auto", "required", "none"], default=None,
                    help="send this tool_choice (default: not sent, i.e. auto)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N cases per category")
    ap.add_argument("--temperature", type=float, default=None,
                    help="send this temperature (default: not sent; server default)")
    ap.add_argument("--max-tokens", type=int, default=None, help="send max_tokens (default: not sent)")
    ap.add_argument("--timeout", type=float, default=300.0, help="per-request timeout, seconds")
    ap.add_argument("--api-key", default=os.environ.get("BFCL_API_KEY"),
                    help="bearer token (default: $BFCL_API_KEY, none if unset)")
    ap.add_argument("--out-dir", default=None, help="write per-case JSONL results here")
    ap.add_argument("--json", action="store_true", help="also print the summary as JSON")
    ap.add_argument("-v", "--verbose", action="store_true", help="per-case progress on stderr")
    args = ap.parse_args()

    summaries = []
    for category in [c.strip() for c in args.categories.split(",") if c.strip()]:
        s = run_category(args, category)
        summaries.append(s)
        strict = ""
        if "irrelevance" in category:
            strict = f" (strict, no tool_calls at all: {s['strict_right']})"
        print(f"{category} [{s['file']}, tool_choice={s['tool_choice']}]: "
              f"cases={s['cases']} right={s['right']}{strict} accuracy={100 * s['accuracy']:.1f}% "
              f"p50={s['p50_s']:.2f}s p95={s['p95_s']:.2f}s "
              f"unparsed_calls={s['unparsed_calls']} http_errors={s['http_errors']}", flush=True)
        if s["error_types"]:
            print("  failures by BFCL error type: " +
                  ", ".join(f"{k}={v}" for k, v in s["error_types"].items()), flush=True)
    if args.json:
        print(json.dumps(summaries, indent=2))


if __name__ == "__main__":
    main()
