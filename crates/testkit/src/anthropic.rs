//! Anthropic Messages API wire format.

use serde_json::{json, Value};

use crate::plan::{pieces, Plan, RequestCtx};

fn message_id(ctx: &RequestCtx) -> String {
    format!("msg_testkit{:06}", ctx.seq)
}

fn tool_use_id(ctx: &RequestCtx, index: usize) -> String {
    format!("toolu_testkit{:06}_{index}", ctx.seq)
}

const SIGNATURE: &str = "sig";

fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// The SSE events of a streamed answer, and the terminal `message_stop` event.
pub(crate) fn stream_frames(plan: &Plan, ctx: &RequestCtx) -> (Vec<String>, String) {
    let (input_tokens, output_tokens) = plan.usage;
    let mut frames = vec![
        event(
            "message_start",
            &json!({
                "type": "message_start",
                "message": {
                    "id": message_id(ctx),
                    "type": "message",
                    "role": "assistant",
                    "model": ctx.model,
                    "content": [],
                    "stop_reason": null,
                    "stop_sequence": null,
                    "usage": { "input_tokens": input_tokens, "output_tokens": 1 },
                },
            }),
        ),
        event("ping", &json!({ "type": "ping" })),
    ];
    let mut index = 0usize;
    let mut block = |frames: &mut Vec<String>, start: Value, deltas: Vec<Value>| {
        frames.push(event(
            "content_block_start",
            &json!({ "type": "content_block_start", "index": index, "content_block": start }),
        ));
        for delta in deltas {
            frames.push(event(
                "content_block_delta",
                &json!({ "type": "content_block_delta", "index": index, "delta": delta }),
            ));
        }
        frames.push(event(
            "content_block_stop",
            &json!({ "type": "content_block_stop", "index": index }),
        ));
        index += 1;
    };
    if !plan.reasoning.is_empty() {
        let mut deltas: Vec<Value> = pieces(&plan.reasoning, plan.chunk_size)
            .into_iter()
            .map(|p| json!({ "type": "thinking_delta", "thinking": p }))
            .collect();
        deltas.push(json!({ "type": "signature_delta", "signature": SIGNATURE }));
        block(
            &mut frames,
            json!({ "type": "thinking", "thinking": "", "signature": "" }),
            deltas,
        );
    }
    if !plan.text.is_empty() {
        let deltas = pieces(&plan.text, plan.chunk_size)
            .into_iter()
            .map(|p| json!({ "type": "text_delta", "text": p }))
            .collect();
        block(&mut frames, json!({ "type": "text", "text": "" }), deltas);
    }
    for (i, (name, arguments)) in plan.tool_calls.iter().enumerate() {
        let deltas = pieces(arguments, plan.chunk_size)
            .into_iter()
            .map(|p| json!({ "type": "input_json_delta", "partial_json": p }))
            .collect();
        block(
            &mut frames,
            json!({ "type": "tool_use", "id": tool_use_id(ctx, i), "name": name, "input": {} }),
            deltas,
        );
    }
    frames.push(event(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {
                "stop_reason": plan.anthropic_stop_reason(),
                "stop_sequence": plan.stop_sequence,
            },
            "usage": { "output_tokens": output_tokens },
        }),
    ));
    let terminal = event("message_stop", &json!({ "type": "message_stop" }));
    (frames, terminal)
}

/// The body of a non-streamed answer.
pub(crate) fn body(plan: &Plan, ctx: &RequestCtx) -> Value {
    let mut content = Vec::new();
    if !plan.reasoning.is_empty() {
        content.push(
            json!({ "type": "thinking", "thinking": plan.reasoning, "signature": SIGNATURE }),
        );
    }
    if !plan.text.is_empty() {
        content.push(json!({ "type": "text", "text": plan.text }));
    }
    for (i, (name, arguments)) in plan.tool_calls.iter().enumerate() {
        // Arguments cut mid-way are not valid JSON: report an empty input then.
        let input = if arguments.trim().is_empty() {
            json!({})
        } else {
            serde_json::from_str::<Value>(arguments).unwrap_or_else(|_| json!({}))
        };
        content.push(json!({
            "type": "tool_use",
            "id": tool_use_id(ctx, i),
            "name": name,
            "input": input,
        }));
    }
    let (input_tokens, output_tokens) = plan.usage;
    json!({
        "id": message_id(ctx),
        "type": "message",
        "role": "assistant",
        "model": ctx.model,
        "content": content,
        "stop_reason": plan.anthropic_stop_reason(),
        "stop_sequence": plan.stop_sequence,
        "usage": { "input_tokens": input_tokens, "output_tokens": output_tokens },
    })
}
