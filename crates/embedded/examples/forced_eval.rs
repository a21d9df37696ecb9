//! Forced tool calls on a corpus of real-world function schemas (BFCL v4, see
//! `tests/data/bfcl_v4_schemas.json` for the source): every schema is offered alone with
//! `tool_choice: required`, greedy, and the call the model makes must parse and validate against
//! the schema as given. Prints the parse and validate rates, the failed requests, and the time.
//!
//! `cargo run --release -p toolbridge-embedded --example forced_eval -- [MODEL.gguf] [LIMIT]`
//! (the model defaults to TOOLBRIDGE_EMBEDDED_MODEL; LIMIT takes the first N schemas).

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;
use toolbridge_embedded::engine::shared;
use toolbridge_embedded::{EmbeddedConfig, EmbeddedUpstream, EngineOptions};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::types::{ChatRequest, Message, ToolChoice, ToolSpec};
use toolbridge_providers::Model;

const CORPUS: &str = include_str!("../tests/data/bfcl_v4_schemas.json");

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .or_else(|| std::env::var("TOOLBRIDGE_EMBEDDED_MODEL").ok())
        .ok_or("give a model path or set TOOLBRIDGE_EMBEDDED_MODEL")?;
    let limit: usize = args.next().map_or(Ok(usize::MAX), |n| n.parse())?;
    let corpus: Value = serde_json::from_str(CORPUS)?;
    let schemas = corpus["schemas"].as_array().ok_or("no schemas")?;
    let engine = shared(
        path.as_ref(),
        &EngineOptions {
            threads: Some(2),
            q4_0: false,
        },
    )?;
    let up = Arc::new(EmbeddedUpstream::new(engine, EmbeddedConfig::default()));
    let model = Model::single(up, ToolMode::Auto);
    let (mut total, mut failed, mut parsed, mut valid, mut unchecked) = (0, 0, 0, 0, 0);
    let mut tokens = 0u64;
    let start = Instant::now();
    for s in schemas.iter().take(limit) {
        total += 1;
        if total % 50 == 0 {
            eprintln!(
                "{total}: {parsed} parsed, {valid} valid, {:.0} s",
                start.elapsed().as_secs_f64()
            );
        }
        let name = s["name"].as_str().unwrap_or_default();
        let description = s["description"].as_str().unwrap_or_default();
        let tool = ToolSpec::new(name, description, s["parameters"].clone());
        let request = ChatRequest {
            messages: vec![Message::user(description)],
            tools: vec![tool],
            tool_choice: Some(ToolChoice::Required),
            ..ChatRequest::default()
        };
        let response = match model.complete(request).await {
            Ok(r) => r,
            Err(e) => {
                failed += 1;
                println!("FAILED {name}: {e}");
                continue;
            }
        };
        tokens += response.usage.map_or(0, |u| u.completion_tokens);
        let Some(call) = response.calls.first() else {
            println!("NO CALL {name}: {:?}", response.text);
            continue;
        };
        let Ok(arguments) = serde_json::from_str::<Value>(&call.arguments) else {
            println!("UNPARSED {name}: {}", call.arguments);
            continue;
        };
        parsed += 1;
        match jsonschema::validator_for(&s["parameters"]) {
            Ok(v) => match v.validate(&arguments) {
                Ok(()) => valid += 1,
                Err(e) => println!("INVALID {name}: {e}: {arguments}"),
            },
            Err(_) => unchecked += 1,
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{total} schemas: {failed} requests failed, {parsed} parsed ({:.1}%), {valid} valid ({:.1}%), {unchecked} schemas the validator cannot compile; {secs:.0} s ({:.2} s per call, {tokens} tokens)",
        100.0 * parsed as f64 / total as f64,
        100.0 * valid as f64 / total as f64,
        secs / total as f64
    );
    Ok(())
}
