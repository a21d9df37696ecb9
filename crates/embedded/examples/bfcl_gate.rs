//! The `auto` gate's signals on BFCL-style requests, one JSON line per request, for choosing and
//! calibrating a gate on a public development set (BFCL v4 `simple_python`, `multiple`,
//! `irrelevance`; never the `live_*` categories, kept for the independent check).
//!
//! Input: `scripts/bfcl/requests.py`'s lines (`{"id", "category", "messages", "tools"}`, the tools
//! converted as BFCL's OpenAI path does). For each request, with the prompt exactly as the
//! embedded upstream renders it:
//! - `call`, `greedy`: the log-probability of `<tool_call>` as the answer's start and of the
//!   model's favourite first token (today's gate compares them);
//! - `channel[i]`: the log-probability of the user's message after a system prompt offering only
//!   tool i, and `neutral`: after a system prompt offering none (their difference is how much the
//!   tool explains the message: pointwise mutual information);
//! - `tokens`: the message's length in tokens; `shared[i]`: words the message shares with tool i's
//!   name and description, `shared_params[i]`: with its parameters' names and descriptions too;
//!   `words`: the message's own count of such words.
//!
//! `cargo run --release -p toolbridge-embedded --example bfcl_gate -- MODEL.gguf REQUESTS.jsonl > FEATURES.jsonl`

use std::io::{BufRead, Write};
use std::time::Instant;

use serde_json::{json, Value};
use toolbridge_embedded::auto;
use toolbridge_embedded::engine::shared;
use toolbridge_embedded::{EmbeddedConfig, EmbeddedUpstream, EngineOptions};
use toolbridge_protocol::types::{ChatRequest, Message, ToolSpec};

fn message(m: &Value) -> Option<Message> {
    let text = m["content"].as_str().unwrap_or_default();
    Some(match m["role"].as_str()? {
        "system" => Message::system(text),
        "user" => Message::user(text),
        "assistant" => Message::assistant(text),
        _ => return None,
    })
}

fn tool(t: &Value) -> ToolSpec {
    let f = &t["function"];
    ToolSpec::new(
        f["name"].as_str().unwrap_or_default(),
        f["description"].as_str().unwrap_or_default(),
        f["parameters"].clone(),
    )
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [model, requests] = args.as_slice() else {
        return Err("usage: bfcl_gate MODEL.gguf REQUESTS.jsonl".into());
    };
    let engine = shared(
        model.as_ref(),
        &EngineOptions {
            threads: Some(2),
            q4_0: false,
        },
    )?;
    let upstream = EmbeddedUpstream::new(engine.clone(), EmbeddedConfig::default());
    let out = std::io::stdout();
    let mut out = out.lock();
    let started = Instant::now();
    for (n, line) in std::io::BufReader::new(std::fs::File::open(requests)?)
        .lines()
        .enumerate()
    {
        let case: Value = serde_json::from_str(&line?)?;
        let tools: Vec<ToolSpec> = case["tools"]
            .as_array()
            .map(|ts| ts.iter().map(tool).collect())
            .unwrap_or_default();
        let request = ChatRequest {
            messages: case["messages"]
                .as_array()
                .map(|ms| ms.iter().filter_map(message).collect())
                .unwrap_or_default(),
            tools: tools.clone(),
            ..ChatRequest::default()
        };
        let user = request
            .messages
            .iter()
            .rev()
            .find_map(|m| match m {
                Message::User { content, .. } => Some(content.text().into_owned()),
                _ => None,
            })
            .unwrap_or_default();
        let (prompt, _) = upstream.render(&request);
        let signals = auto::signals(&engine, &prompt, &user, &tools.iter().collect::<Vec<_>>())?;
        writeln!(
            out,
            "{}",
            json!({
                "id": case["id"],
                "category": case["category"],
                "signals": signals,
            })
        )?;
        if (n + 1) % 50 == 0 {
            eprintln!(
                "{} requests, {:.0} s",
                n + 1,
                started.elapsed().as_secs_f64()
            );
        }
    }
    Ok(())
}
