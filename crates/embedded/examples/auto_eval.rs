//! Measures how `auto` tool choice strategies decide on a set of prompts, half of which need a
//! tool: a decision is right when a prompt that needs a tool gets a parseable call to the right
//! tool, and one that does not gets text.
//!
//! `cargo run --release -p toolbridge-embedded --example auto_eval -- [MODEL.gguf]`

use std::sync::Arc;

use serde_json::json;
use toolbridge_embedded::engine::{shared, EngineOptions};
use toolbridge_embedded::{AutoStrategy, EmbeddedConfig, EmbeddedUpstream};
use toolbridge_protocol::mode::ToolMode;
use toolbridge_protocol::types::{ChatRequest, Message, ToolSpec};
use toolbridge_providers::Model;

const PROMPTS: &[(&str, Option<&str>)] = &[
    ("What is the weather in Paris?", Some("get_weather")),
    ("Is it raining in London right now?", Some("get_weather")),
    ("How hot is it in Madrid today?", Some("get_weather")),
    ("Weather forecast for Tokyo, please.", Some("get_weather")),
    (
        "Should I take an umbrella in Berlin today?",
        Some("get_weather"),
    ),
    ("What's the temperature in New York?", Some("get_weather")),
    ("What time is it in Sydney?", Some("get_time")),
    ("Tell me the current time in UTC.", Some("get_time")),
    ("What is the time in Tokyo now?", Some("get_time")),
    ("Current local time in Paris?", Some("get_time")),
    ("What is 1234 times 5678?", Some("calculate")),
    ("Compute 17 squared plus 3.", Some("calculate")),
    ("Hello! How are you?", None),
    ("Write a haiku about the sea.", None),
    ("What is the capital of France?", None),
    ("Thank you, that is all.", None),
    ("Explain what a noun is.", None),
    ("Tell me a joke.", None),
    ("Who wrote Romeo and Juliet?", None),
    ("Give me three tips for better sleep.", None),
    ("Translate 'good morning' into Spanish.", None),
    ("What is your name?", None),
    ("Summarize the plot of Cinderella in one sentence.", None),
    ("What colour is the sky?", None),
];

fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "get_weather",
            "Get the current weather for a city.",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        ),
        ToolSpec::new(
            "get_time",
            "Get the current time in a city or time zone.",
            json!({"type": "object", "properties": {"zone": {"type": "string"}}, "required": ["zone"]}),
        ),
        ToolSpec::new(
            "calculate",
            "Evaluate an arithmetic expression.",
            json!({"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]}),
        ),
    ]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = match std::env::args().nth(1) {
        Some(p) => p.into(),
        None => {
            toolbridge_embedded::pull::default_model_path(&toolbridge_embedded::pull::models_dir()?)
        }
    };
    let engine = shared(
        &path,
        &EngineOptions {
            threads: Some(2),
            q4_0: false,
        },
    )?;
    let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    let strategies = [
        ("free", AutoStrategy::Free),
        ("call_then_answer", AutoStrategy::CallThenAnswer),
        ("gate(margin 2)", AutoStrategy::Gate { margin: 2.0 }),
    ];
    for (name, strategy) in strategies {
        let up = Arc::new(EmbeddedUpstream::new(
            Arc::clone(&engine),
            EmbeddedConfig {
                auto: strategy,
                max_tokens: 48,
                ..EmbeddedConfig::default()
            },
        ));
        let model = Model::single(up, ToolMode::Auto);
        let (mut right, mut tool_right, mut text_right, mut parsed) = (0, 0, 0, 0);
        for (prompt, expected) in PROMPTS {
            let request = ChatRequest {
                messages: vec![
                    Message::system("You are a helpful assistant."),
                    Message::user(*prompt),
                ],
                tools: tools(),
                ..ChatRequest::default()
            };
            let response = runtime.block_on(model.complete(request))?;
            let called = response.calls.first().map(|c| c.name.as_str());
            if called.is_some() {
                parsed += 1;
            }
            let ok = called == *expected;
            if ok {
                right += 1;
                if expected.is_some() {
                    tool_right += 1;
                } else {
                    text_right += 1;
                }
            }
            println!(
                "{name}\t{}\t{prompt}\t{}",
                if ok { "ok" } else { "WRONG" },
                match response.calls.first() {
                    Some(c) => format!("call {} {}", c.name, c.arguments),
                    None => format!(
                        "text {:?}",
                        response.text.chars().take(60).collect::<String>()
                    ),
                }
            );
        }
        let needs = PROMPTS.iter().filter(|p| p.1.is_some()).count();
        println!(
            "SUMMARY {name}: {right}/{} right ({tool_right}/{needs} calls, {text_right}/{} text; {parsed} calls made)",
            PROMPTS.len(),
            PROMPTS.len() - needs
        );
    }
    Ok(())
}
