//! OpenAI Chat Completions wire format.

use serde_json::{json, Map, Value};

use crate::plan::{pieces, Plan, RequestCtx};

fn completion_id(ctx: &RequestCtx) -> String {
    format!("chatcmpl-testkit{:06}", ctx.seq)
}

fn call_id(ctx: &RequestCtx, index: usize) -> String {
    format!("call_testkit{:06}_{index}", ctx.seq)
}

fn usage(plan: &Plan) -> Value {
    let (prompt, completion) = plan.usage;
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt.saturating_add(completion),
    })
}

fn chunk(ctx: &RequestCtx, choices: Value) -> Map<String, Value> {
    let mut obj = Map::new();
    obj.insert("id".into(), Value::String(completion_id(ctx)));
    obj.insert(
        "object".into(),
        Value::String("chat.completion.chunk".into()),
    );
    obj.insert("created".into(), Value::from(ctx.created));
    obj.insert("model".into(), Value::String(ctx.model.clone()));
    obj.insert("choices".into(), choices);
    obj
}

fn delta_chunk(ctx: &RequestCtx, delta: Value, finish: Option<&str>) -> String {
    let mut obj = chunk(
        ctx,
        json!([{ "index": 0, "delta": delta, "finish_reason": finish }]),
    );
    if ctx.include_usage {
        obj.insert("usage".into(), Value::Null);
    }
    data_line(&Value::Object(obj))
}

fn data_line(value: &Value) -> String {
    format!("data: {value}\n\n")
}

/// The SSE events of a streamed answer, and the terminal `data: [DONE]`.
///
/// As OpenAI does, the first chunk carries `"role": "assistant"` together with the
/// first piece of output (`"content": null` too when that is a tool call), so
/// every chunk before the final one carries output; an empty answer gets a
/// role-only chunk `{"role":"assistant","content":""}`.
pub(crate) fn stream_frames(plan: &Plan, ctx: &RequestCtx) -> (Vec<String>, String) {
    let mut deltas: Vec<Map<String, Value>> = Vec::new();
    let mut delta = |key: &str, value: Value| {
        let mut map = Map::new();
        map.insert(key.to_owned(), value);
        deltas.push(map);
    };
    for piece in pieces(&plan.reasoning, plan.chunk_size) {
        delta("reasoning_content", json!(piece));
    }
    for piece in pieces(&plan.text, plan.chunk_size) {
        delta("content", json!(piece));
    }
    for (index, (name, arguments)) in plan.tool_calls.iter().enumerate() {
        delta(
            "tool_calls",
            json!([{
                "index": index,
                "id": call_id(ctx, index),
                "type": "function",
                "function": { "name": name, "arguments": "" },
            }]),
        );
        for piece in pieces(arguments, plan.chunk_size) {
            delta(
                "tool_calls",
                json!([{ "index": index, "function": { "arguments": piece } }]),
            );
        }
    }
    let mut first = Map::new();
    first.insert("role".into(), Value::String("assistant".into()));
    match deltas.first_mut() {
        Some(existing) => {
            if existing.contains_key("tool_calls") {
                first.insert("content".into(), Value::Null);
            }
            first.append(existing);
            *existing = first;
        }
        None => {
            first.insert("content".into(), Value::String(String::new()));
            deltas.push(first);
        }
    }
    let mut frames: Vec<String> = deltas
        .into_iter()
        .map(|d| delta_chunk(ctx, Value::Object(d), None))
        .collect();
    frames.push(delta_chunk(ctx, json!({}), Some(&plan.finish)));
    if ctx.include_usage {
        let mut obj = chunk(ctx, json!([]));
        obj.insert("usage".into(), usage(plan));
        frames.push(data_line(&Value::Object(obj)));
    }
    (frames, "data: [DONE]\n\n".to_owned())
}

/// The body of a non-streamed answer.
pub(crate) fn body(plan: &Plan, ctx: &RequestCtx) -> Value {
    let mut message = Map::new();
    message.insert("role".into(), Value::String("assistant".into()));
    message.insert(
        "content".into(),
        if plan.text.is_empty() {
            Value::Null
        } else {
            Value::String(plan.text.clone())
        },
    );
    if !plan.reasoning.is_empty() {
        message.insert(
            "reasoning_content".into(),
            Value::String(plan.reasoning.clone()),
        );
    }
    if !plan.tool_calls.is_empty() {
        let calls: Vec<Value> = plan
            .tool_calls
            .iter()
            .enumerate()
            .map(|(index, (name, arguments))| {
                json!({
                    "id": call_id(ctx, index),
                    "type": "function",
                    "function": { "name": name, "arguments": arguments },
                })
            })
            .collect();
        message.insert("tool_calls".into(), Value::Array(calls));
    }
    json!({
        "id": completion_id(ctx),
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [{
            "index": 0,
            "message": Value::Object(message),
            "finish_reason": plan.finish,
        }],
        "usage": usage(plan),
    })
}
